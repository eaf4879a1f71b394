/* SPDX-License-Identifier: MIT */
// The ABI headers must be usable from C++: this translation unit includes
// them, builds the structures the C++ way and checks the layout C sees.
#include <futoin/binarysteps.h>
#include <futoin/asyncsteps.h>
#include <futoin/introspect.h>

#include <cstddef>
#include <cstdio>

static_assert(offsetof(FutoInAsyncStepsAPI, add) == 0, "add is entry 0");
static_assert(sizeof(FutoInAsyncStepsAPI) >= 25 * sizeof(void*), "25 entries");
static_assert(offsetof(FutoInAsyncStepsAPI, is_same_thread) == 24 * sizeof(void*),
        "is_same_thread is entry 24");
static_assert(offsetof(FutoInAsyncStepsAPI, addSync) == 15 * sizeof(void*), "addSync is entry 15");
static_assert(offsetof(FutoInAsyncSteps, api) == 0, "api pointer first");
static_assert(offsetof(FutoInSync, api) == 0, "sync api pointer first");
static_assert(sizeof(FutoInArgs) == 4 * sizeof(FutoInBinaryValue), "four args");
static_assert(offsetof(FutoInBinaryValue, type) == 0, "type first");

static int cleanups = 0;
static void count_cleanup(FutoInBinaryValue*)
{
    ++cleanups;
}

int main()
{
    static const FutoInType owned = { FTN_TYPE_STRING, count_cleanup };
    FutoInBinaryValue v{};
    v.type = &owned;
    v.cstr = "x";
    v.length = 1;
    futoin_reset_binval(&v);
    if (cleanups != 1 || v.type != nullptr || v.length != 0 || v.u64 != 0) {
        std::puts("futoin_reset_binval misbehaved");
        return 1;
    }
    FutoInSync s;
    if (s.api != nullptr) {
        return 1;
    }
    FutoInArgs a{};
    a.arg2.i32 = 7;
    if (a.args[2].i32 != 7) {
        return 1;
    }
    std::puts("abi_cxx ok");
    return 0;
}
