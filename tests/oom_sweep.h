/* SPDX-License-Identifier: MIT */
/*
 * The out-of-memory sweep shared by test_oom.c and uv/test_uv_oom.c: runs
 * a program once per allocation point and failure mode, each run in a
 * forked child, and checks that every run ends in one of the outcomes of
 * docs/SEMANTICS.md "Memory":
 *   - the program completes with every value it expects;
 *   - an API told the program (NULL, -1, a type-NULL value) and the program
 *     handled it;
 *   - a step failed with InternalError and an error_info that mentions
 *     "out of memory";
 *   - the process aborted with "futoin: out of memory" on stderr.
 * Anything else fails the test: a hang past the time limit, another
 * signal, a program that saw success with values missing, a root whose
 * completion never came while the loop ran out of work. The child
 * reports through a pipe; its stderr goes to a file the parent reads.
 */
#ifndef FUTOIN_TEST_OOM_SWEEP_H
#define FUTOIN_TEST_OOM_SWEEP_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_alloc.h"

/* What a program saw. */
typedef enum {
    OOM_COMPLETED,  /* finished with every expected value */
    OOM_REPORTED,   /* an API reported the failure to the program */
    OOM_STEP_ERROR, /* a step failed with InternalError "... out of memory" */
    OOM_BAD         /* none of these: why says what */
} OomResult;

/* A program writes why it is OOM_BAD into why (size bytes). */
typedef OomResult (*OomProgram)(char* why, size_t size);

/* Seconds a run may take before it counts as a stall. */
#ifndef OOM_TIME_LIMIT
#define OOM_TIME_LIMIT 10
#endif

typedef struct {
    int result; /* OomResult */
    unsigned long counted;
    unsigned long injected;
    char why[200];
} OomReport;

/* Per sweep: how the runs ended. */
typedef struct {
    unsigned long points;
    unsigned long runs;
    unsigned long completed;
    unsigned long reported;
    unsigned long step_errors;
    unsigned long aborts;
    unsigned long libuv_aborts;
    unsigned long failures;
} OomTally;

static inline void oom_bad(char* why, size_t size, const char* fmt, ...)
{
    if (why[0]) {
        return; /* the first reason is the one that matters */
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

/* 1 when info is an out-of-memory error_info. */
static inline int oom_info_ok(const char* info)
{
    return info && strstr(info, "out of memory") != NULL;
}

static inline size_t oom_read_all(int fd, void* buf, size_t size)
{
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, (char*)buf + got, size - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    return got;
}

/* Sweep options. */
enum {
    /* libuv aborts (without a message of ours) when it cannot grow its
     * own structures or start its thread pool: allowed when the failed
     * allocation was libuv's own. */
    OOM_ALLOW_LIBUV_ABORT = 1
};

/* 1 when the failure fault_alloc.c reported in text was an allocation of
 * libuv itself: the first caller outside the allocation functions, the C
 * library and the dynamic linker (pthread_create() allocates for libuv's
 * threads) is libuv. */
static inline int oom_failed_in_libuv(const char* text)
{
    const char* p = strstr(text, "fault_alloc: failed allocation called from:\n");
    if (!p) {
        return 0;
    }
    p = strchr(p, '\n') + 1;
    while (*p) {
        const char* end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[256];
        snprintf(line, sizeof(line), "%.*s", (int)len, p);
        /* The dynamic loader: ld-linux*.so (x86-64, arm), ld64.so.1 (s390x). */
        static const char* const skip[] = { "/libc.so", "/ld-linux", "/ld64.so", "(malloc+",
            "(calloc+", "(realloc+", "(aligned_alloc+", "(posix_memalign+", "(memalign+",
            "(strdup+", "(strndup+", "(pthread_create+" /* AddressSanitizer's interceptor */ };
        int skipped = 0;
        for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); ++i) {
            skipped |= strstr(line, skip[i]) != NULL;
        }
        if (!skipped) {
            return strstr(line, "/libuv.so") != NULL;
        }
        if (!end) {
            break;
        }
        p = end + 1;
    }
    return 0;
}

/* One run in a child; returns 1 when its outcome is allowed. *counted gets
 * the allocations it made (0 when it did not report). */
static inline int oom_run(const char* name, OomProgram prog, int options, FaultMode mode,
        unsigned long n, OomTally* tally, unsigned long* counted, unsigned long* injected)
{
    int pfd[2];
    FILE* err = tmpfile();
    if (!err || pipe(pfd) != 0) {
        fail_msg("%s: no pipe or temporary file", name);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fail_msg("%s: fork failed", name);
    }
    if (pid == 0) {
        close(pfd[0]);
        dup2(fileno(err), 2);
        /* Aborts are expected by the hundred: no core files. */
        struct rlimit no_core = { 0, 0 };
        setrlimit(RLIMIT_CORE, &no_core);
        alarm(OOM_TIME_LIMIT);
        OomReport rep;
        memset(&rep, 0, sizeof(rep));
        fault_arm(mode, n);
        rep.result = (int)prog(rep.why, sizeof(rep.why));
        fault_disarm();
        rep.counted = fault_count();
        rep.injected = fault_injected();
        ssize_t w = write(pfd[1], &rep, sizeof(rep));
        _exit(w == (ssize_t)sizeof(rep) ? 0 : 3);
    }
    close(pfd[1]);
    OomReport rep;
    memset(&rep, 0, sizeof(rep));
    size_t got = oom_read_all(pfd[0], &rep, sizeof(rep));
    close(pfd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    char text[4096];
    fflush(err);
    rewind(err);
    size_t tn = fread(text, 1, sizeof(text) - 1, err);
    text[tn] = '\0';
    fclose(err);

    const char* mname = mode == FAULT_ONCE ? "fail the N-th once" : "fail from the N-th on";
    ++tally->runs;
    *counted = 0;
    *injected = 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && got == sizeof(rep)) {
        *counted = rep.counted;
        *injected = rep.injected;
        switch (rep.result) {
        case OOM_COMPLETED:
            ++tally->completed;
            return 1;
        case OOM_REPORTED:
            ++tally->reported;
            return 1;
        case OOM_STEP_ERROR:
            ++tally->step_errors;
            return 1;
        default:
            break;
        }
        print_error("%s: N=%lu (%s): %s\n", name, n, mname, rep.why);
    } else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT
            && strstr(text, "futoin: out of memory") != NULL) {
        ++tally->aborts;
        return 1;
    } else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && (options & OOM_ALLOW_LIBUV_ABORT)
            && oom_failed_in_libuv(text)) {
        ++tally->libuv_aborts;
        return 1;
    } else if (WIFSIGNALED(st)) {
        print_error("%s: N=%lu (%s): killed by signal %d%s\n", name, n, mname, WTERMSIG(st),
                WTERMSIG(st) == SIGALRM ? " (a stall past the time limit)" : "");
    } else {
        print_error("%s: N=%lu (%s): exit status %d, no report\n", name, n, mname,
                WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    if (tn) {
        print_error("%s: stderr: %s\n", name, text);
    }
    ++tally->failures;
    return 0;
}

/* Sweeps N = 1, 2, ... until a run of "fail the N-th once" made fewer than
 * N allocations (nothing was injected): every allocation point has then
 * been failed once, and from on. options: OOM_ALLOW_*. */
static inline void oom_sweep_ex(const char* name, OomProgram prog, int options)
{
    OomTally t;
    memset(&t, 0, sizeof(t));
    unsigned long counted = 0;
    unsigned long injected = 0;
    /* The program must complete without faults: the sweep measures what a
     * failure changes, not a broken program. */
    int ok = oom_run(name, prog, options, FAULT_OFF, 0, &t, &counted, &injected);
    assert_true(ok);
    unsigned long clean = counted;
    unsigned long n = 1;
    for (; n < 1000000; ++n) {
        oom_run(name, prog, options, FAULT_ONCE, n, &t, &counted, &injected);
        int last = counted && counted < n && injected == 0;
        oom_run(name, prog, options, FAULT_FROM, n, &t, &counted, &injected);
        if (last) {
            break;
        }
    }
    t.points = n - 1;
    print_message("%s: %lu allocation points (%lu in a run without faults), %lu runs: "
                  "%lu completed, %lu reported to the caller, %lu InternalError, "
                  "%lu aborted with the message, %lu aborted by libuv, %lu failed\n",
            name, t.points, clean, t.runs, t.completed, t.reported, t.step_errors, t.aborts,
            t.libuv_aborts, t.failures);
    assert_int_equal(t.failures, 0);
}

static inline void oom_sweep(const char* name, OomProgram prog)
{
    oom_sweep_ex(name, prog, 0);
}

/* 77 (CTest's SKIP_RETURN_CODE for these tests) when the allocator cannot
 * be interposed here, as under valgrind, which replaces it. */
static inline void oom_require_fault_injection(void)
{
    if (!fault_works()) {
        printf("fault injection has no effect in this process (valgrind?): skipped\n");
        exit(77);
    }
}

#endif
