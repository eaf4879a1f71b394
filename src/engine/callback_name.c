/* SPDX-License-Identifier: MIT */
/*
 * futoin_callback_name(): a callback's name for dumps and error traces,
 * from the dynamic symbol table through dladdr(). Windows has no dladdr()
 * (and its symbol tables need DbgHelp and the debug info): there every
 * callback shows as its address, which a debugger or addr2line on the
 * .exe turns into a name.
 */
#ifndef _WIN32
#define _GNU_SOURCE /* dladdr() */
#endif

#include <futoin/introspect.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#ifndef _WIN32
#include <dlfcn.h>
#endif

const char* futoin_callback_name(void (*fn)(void), char* buf, size_t cap)
{
    if (!buf || cap == 0) {
        return buf;
    }
    if (!fn) {
        snprintf(buf, cap, "-");
        return buf;
    }
    /* A function pointer as an address: POSIX requires the conversion for
     * dladdr() to be meaningful. */
    void* addr;
    memcpy(&addr, &fn, sizeof(addr));
#ifndef _WIN32
    Dl_info info;
    if (dladdr(addr, &info) && info.dli_sname && info.dli_saddr == addr) {
        snprintf(buf, cap, "%s", info.dli_sname);
        return buf;
    }
#endif
    snprintf(buf, cap, "0x%" PRIxPTR, (uintptr_t)addr);
    return buf;
}
