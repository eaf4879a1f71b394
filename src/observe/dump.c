/* SPDX-License-Identifier: MIT */
/*
 * The text dump of a loop's live flows (futoin_loop_dump()) and the ways to
 * ask for one in a running program: a handler run on the loop thread,
 * requested from any thread or from a signal handler (which only queues a
 * kept message and writes the wake-up fd: async-signal-safe). Built on the
 * walk of observe/introspect.c, through the public introspection API.
 */
#include <futoin/introspect.h>

#include "common/log.h"
#include "engine/engine_internal.h"
#include "observe/observe_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static void dump_frame(FILE* out, Flow* fl, uint32_t level)
{
    FutoInFrameInfo fi;
    futoin__obs_frame_describe(fl, level, &fi);
    fprintf(out, "    #%" PRIu32 " %s", level, futoin_frame_kind_name(fi.kind));
    switch (fi.kind) {
    case FUTOIN_FRAME_LOOP:
        if (fi.label) {
            fprintf(out, " '%s'", fi.label);
        }
        if (fi.count) {
            fprintf(out, ", iteration %zu of %zu", fi.iteration, fi.count);
        } else {
            fprintf(out, ", iteration %zu", fi.iteration);
        }
        break;
    case FUTOIN_FRAME_PARALLEL:
        fprintf(out, ", %" PRIu32 " branch%s %s", fi.branches, fi.branches == 1 ? "" : "es",
                (fi.flags & FUTOIN_FRAME_WAITING) ? "running" : "queued");
        break;
    case FUTOIN_FRAME_SYNC:
        fprintf(out, " %s %p", fi.sync_kind, (void*)fi.sync);
        if (fi.flags & FUTOIN_FRAME_LOCKED) {
            fputs(", held", out);
        } else if (fi.sync_queue) {
            fprintf(out, ", queued: position %" PRIu32 " of %" PRIu32 " in its %s queue",
                    fi.sync_position, fi.sync_queue_length,
                    fi.sync_queue == 1 ? "concurrency" : "rate");
        } else {
            fputs(", locking", out);
        }
        break;
    default:
        break;
    }
    if (fi.flags & FUTOIN_FRAME_WAITING) {
        fputs(", waiting", out);
    }
    if (fi.flags & FUTOIN_FRAME_TIMEOUT) {
        fprintf(out, ", timeout in %" PRIu64 " ms", fi.timeout_left_ms);
    }
    if (fi.wait_info) {
        fprintf(out, ", \"%s\"", fi.wait_info);
    }
    if (fi.error_handler) {
        fprintf(out, ", %s 0x%" PRIxPTR "%s", level ? "error handler" : "unhandled-error callback",
                futoin__obs_fn_addr(fi.error_handler),
                (fi.flags & FUTOIN_FRAME_EH_RAN) ? " (ran)" : "");
    }
    if (fi.flags & FUTOIN_FRAME_CANCEL_HANDLER) {
        fputs(", cancel handler", out);
    }
    if (fi.flags & FUTOIN_FRAME_STACK) {
        fputs(", stack memory", out);
    }
    if (fi.data) {
        fprintf(out, ", data %p", fi.data);
    }
    if (fi.queued) {
        fprintf(out, ", %zu queued", fi.queued);
    }
    if (fi.callback) { /* tracing build */
        char name[128];
        fprintf(out, ", %s", futoin_callback_name(fi.callback, name, sizeof(name)));
    }
    if (fi.file) {
        fprintf(out, ", added at %s:%" PRIu32, fi.file, fi.line);
    }
    fputc('\n', out);
}

static void dump_wait(FILE* out, Flow* fl, const FutoInFlowInfo* info)
{
    const Frame* top = &fl->frames[fl->depth];
    switch (info->wait) {
    case FUTOIN_WAIT_EXTERNAL:
        fputs(" for an external completion", out);
        break;
    case FUTOIN_WAIT_AWAIT:
        fputs(" for a completion (futoin_await)", out);
        break;
    case FUTOIN_WAIT_WORK:
        fputs(" for a worker thread (futoin_add_work)", out);
        break;
    case FUTOIN_WAIT_YIELD:
        fputs(" for its turn (futoin_relinquish)", out);
        break;
    case FUTOIN_WAIT_PARALLEL: {
        const Parallel* p = futoin__step_ext(top->node);
        fprintf(out, " for %" PRIu32 " branch%s of its parallel step", p->pending,
                p->pending == 1 ? "" : "es");
        break;
    }
    case FUTOIN_WAIT_SYNC: {
        FutoInFrameInfo fi;
        futoin__obs_frame_describe(fl, fl->depth, &fi);
        fprintf(out, " for %s %p", fi.sync_kind, (void*)fi.sync);
        if (fi.sync_queue) {
            fprintf(out, ": position %" PRIu32 " of %" PRIu32 " in its %s queue", fi.sync_position,
                    fi.sync_queue_length, fi.sync_queue == 1 ? "concurrency" : "rate");
        }
        break;
    }
    default:
        break;
    }
    if (*info->wait_info) {
        fprintf(out, ": \"%s\"", info->wait_info);
    }
    if (info->timer_level != UINT32_MAX) {
        fprintf(out, ", timeout in %" PRIu64 " ms (#%" PRIu32 ")", info->timer_left_ms,
                info->timer_level);
    }
}

static void dump_flow(FILE* out, Flow* fl, uint32_t nesting, uint32_t max_frames)
{
    FutoInFlowInfo info;
    futoin__obs_flow_info_fill(fl, &info);
    if (fl->is_branch) {
        fprintf(out, "  branch %p of %p (nesting %" PRIu32 ")", (void*)&fl->iface,
                (void*)info.parent, nesting);
    } else {
        fprintf(out, "  flow %p (main)", (void*)&fl->iface);
    }
    fprintf(out, " %s", futoin__obs_flow_state_name(info.state));
    if (info.state == FUTOIN_FLOW_WAITING) {
        dump_wait(out, fl, &info);
    }
    if (*info.error_code) {
        fprintf(out, ", unwinding %s", info.error_code);
    }
    fprintf(out, ", depth %" PRIu32 "\n", fl->depth);
    /* Innermost first; with a limit, the top and the bottom of the stack. */
    uint32_t n = fl->depth + 1;
    uint32_t top = n, bottom = 0;
    if (max_frames && n > max_frames) {
        top = max_frames - max_frames / 2;
        bottom = max_frames / 2;
    }
    for (uint32_t i = 0; i < top; ++i) {
        dump_frame(out, fl, fl->depth - i);
    }
    if (top < n) {
        fprintf(out, "    ... %" PRIu32 " frames ...\n", n - top - bottom);
        for (uint32_t d = bottom; d-- > 0;) {
            dump_frame(out, fl, d);
        }
    }
}

int futoin_loop_dump(FutoInLoop* loop, FILE* out, uint32_t max_frames)
{
    if (!loop || !out || !futoin__loop_on_thread(loop)) {
        return -1;
    }
    FutoInLoopCounters c;
    futoin_loop_counters(loop, &c, sizeof(c));
    fprintf(out, "futoin loop %p: dump at %" PRIu64 " ms (%s clock)\n", (void*)loop,
            futoin_loop_now(loop), futoin__loop_is_virtual(loop) ? "virtual" : "monotonic");
    fprintf(out,
            "  counters: roots %" PRIu64 ", steps %" PRIu64 ", errors %" PRIu64
            ", timeouts %" PRIu64 ", cancels %" PRIu64 ", sync rejections %" PRIu64
            ", unhandled errors %" PRIu64 ", timers %" PRIu64 ", immediates %" PRIu64
            ", cross-thread messages %" PRIu64 "\n",
            c.roots, c.steps, c.errors, c.timeouts, c.cancels, c.sync_rejections,
            c.unhandled_errors, c.timers_pending, c.immediates_pending, c.xmsgs);
    FutoInRootIter it;
    futoin_root_iter_init(&it, loop);
    int roots = 0;
    uint64_t flows = 0;
    FutoInAsyncSteps* as;
    while ((as = futoin_root_iter_next(&it)) != NULL) {
        Root* r = (Root*)as;
        Flow* main = &r->main;
        FutoInRootState rs = futoin__obs_root_state(r);
        ++roots;
        fprintf(out, "root %p %s", (void*)as, futoin_root_state_name(rs));
        if (rs == FUTOIN_ROOT_FAILED) {
            fprintf(out, ": %s", futoin__flow_code(main));
            if (*futoin__root_info(r)) {
                fprintf(out, " (%s)", futoin__root_info(r));
            }
        }
        if (rs == FUTOIN_ROOT_IDLE) {
            fprintf(out, ", %zu step%s queued\n", futoin__obs_count_steps(main->frames[0].q_head),
                    futoin__obs_count_steps(main->frames[0].q_head) == 1 ? "" : "s");
            continue;
        }
        if (rs == FUTOIN_ROOT_DONE || rs == FUTOIN_ROOT_FAILED || rs == FUTOIN_ROOT_CANCELLED) {
            fputc('\n', out);
            continue;
        }
        fputc('\n', out);
        uint32_t nesting = 0;
        for (Flow* fl = main; fl; fl = futoin__obs_next_flow(fl, &nesting)) {
            ++flows;
            dump_flow(out, fl, nesting, max_frames);
        }
    }
    fprintf(out, "end of dump: %d root%s, %" PRIu64 " running flow%s\n", roots,
            roots == 1 ? "" : "s", flows, flows == 1 ? "" : "s");
    return roots;
}

/* ------------------------------------------------------------------------ */
/* Dump requests                                                             */

/* The default answer: the dump through the log handler, one
 * FUTOIN_LOG_DUMP line per call. With the default handler the text goes
 * straight to stderr, as that handler would write it, without a buffer;
 * another handler gets its lines from a memory stream. This runs on the
 * loop thread in an ordinary round (a signal only queued the request), so
 * allocating here is safe; without the memory the handler is told so. */
static void default_dump(FutoInLoop* loop, void* data)
{
    (void)data;
    void* ldata;
    FutoInLogHandler handler = futoin__log_handler(&ldata);
    if (handler == futoin_log_stderr) {
        futoin_loop_dump(loop, stderr, FUTOIN_DUMP_FRAMES_DEFAULT);
        fflush(stderr);
        return;
    }
    char* text = NULL;
    ObsText mem;
    if (futoin__obs_text_open(&mem) == 0) {
        futoin_loop_dump(loop, mem.f, FUTOIN_DUMP_FRAMES_DEFAULT);
        text = futoin__obs_text_close(&mem);
    }
    if (!text) {
        handler(ldata, FUTOIN_LOG_WARNING, "futoin: loop dump: out of memory");
        return;
    }
    for (char* line = text; *line;) {
        char* nl = strchr(line, '\n');
        if (nl) {
            *nl = '\0';
        }
        handler(ldata, FUTOIN_LOG_DUMP, line);
        if (!nl) {
            break;
        }
        line = nl + 1;
    }
    free(text);
}

int futoin_loop_set_dump_handler(FutoInLoop* loop, FutoInDumpHandler cb, void* data)
{
    if (!loop || !futoin__loop_on_thread(loop)) {
        return -1;
    }
    return futoin__loop_dump_setup(loop, cb ? cb : default_dump, cb ? data : NULL, 0);
}

int futoin_loop_request_dump(FutoInLoop* loop)
{
    return loop ? futoin__loop_dump_request(loop) : -1;
}

/* The signal table: which loops a signal asks for a dump. The handler only
 * reads it (lock-free atomics); changes are made under g_sig_lock, and a
 * loop's removal waits until no handler is inside the table any more, so
 * that no handler ever touches a freed loop. */
#define SIG_SLOTS 64
#define SIG_MAX 128

typedef struct SigSlot {
    _Atomic(FutoInLoop*) loop;
    _Atomic int signo;
} SigSlot;

static SigSlot g_sig[SIG_SLOTS];
static _Atomic int g_sig_inflight;
static pthread_mutex_t g_sig_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char g_sig_installed[SIG_MAX];

static void dump_signal_handler(int signo)
{
    int saved = errno;
#ifdef _WIN32
    /* Windows resets the disposition to SIG_DFL before it calls a handler
     * (on a thread of its own for SIGINT and SIGBREAK): set it again. */
    signal(signo, dump_signal_handler);
#endif
    atomic_fetch_add(&g_sig_inflight, 1);
    for (unsigned i = 0; i < SIG_SLOTS; ++i) {
        FutoInLoop* loop = atomic_load(&g_sig[i].loop);
        if (loop && atomic_load(&g_sig[i].signo) == signo) {
            futoin__loop_dump_request(loop);
        }
    }
    atomic_fetch_sub(&g_sig_inflight, 1);
    errno = saved;
}

/* sigaction() with SA_RESTART; on Windows, which has no sigaction(),
 * signal(): SIGINT (Ctrl-C) and SIGBREAK (Ctrl-Break) of the console,
 * and what raise() sends. 0 or -1. */
static int install_handler(int signo)
{
#ifdef _WIN32
    return signal(signo, dump_signal_handler) == SIG_ERR ? -1 : 0;
#else
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = dump_signal_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    return sigaction(signo, &sa, NULL);
#endif
}

/* Under g_sig_lock: the loop leaves the table; returns once no handler
 * can still be using it. */
static void sig_forget_locked(FutoInLoop* loop)
{
    for (unsigned i = 0; i < SIG_SLOTS; ++i) {
        if (atomic_load(&g_sig[i].loop) == loop) {
            atomic_store(&g_sig[i].loop, NULL);
        }
    }
    while (atomic_load(&g_sig_inflight) > 0) {
        sched_yield();
    }
    futoin__loop_set_free_hook(loop, NULL);
}

static void dump_signal_forget(FutoInLoop* loop)
{
    pthread_mutex_lock(&g_sig_lock);
    sig_forget_locked(loop);
    pthread_mutex_unlock(&g_sig_lock);
}

int futoin_loop_dump_on_signal(FutoInLoop* loop, int signo)
{
#if ATOMIC_POINTER_LOCK_FREE != 2 || ATOMIC_INT_LOCK_FREE != 2
    (void)loop;
    (void)signo;
    return -1; /* the handler could not read the table safely */
#else
    if (!loop || !futoin__loop_on_thread(loop) || signo < 0 || signo >= SIG_MAX) {
        return -1;
    }
    pthread_mutex_lock(&g_sig_lock);
    if (signo == 0) {
        sig_forget_locked(loop);
        pthread_mutex_unlock(&g_sig_lock);
        return 0;
    }
    int rc = -1;
    int free_slot = -1;
    for (int i = 0; i < SIG_SLOTS; ++i) {
        FutoInLoop* l = atomic_load(&g_sig[i].loop);
        if (l == loop && atomic_load(&g_sig[i].signo) == signo) {
            free_slot = -2; /* already registered */
            break;
        }
        if (!l && free_slot == -1) {
            free_slot = i;
        }
    }
    if (free_slot != -1 && futoin__loop_dump_setup(loop, default_dump, NULL, 1) == 0) {
        rc = 0;
        if (!g_sig_installed[signo]) {
            if (install_handler(signo) == 0) {
                g_sig_installed[signo] = 1;
            } else {
                rc = -1;
            }
        }
        if (rc == 0 && free_slot >= 0) {
            atomic_store(&g_sig[free_slot].signo, signo);
            atomic_store(&g_sig[free_slot].loop, loop);
            futoin__loop_set_free_hook(loop, dump_signal_forget);
        }
    }
    pthread_mutex_unlock(&g_sig_lock);
    return rc;
#endif
}
