/* SPDX-License-Identifier: MIT */
/* Re-entry matrix of the libuv backend (docs/MISUSE.md, "Inside a libuv
 * completion"): every kind of user callback that the backend
 * calls when an I/O operation completes x every call a user may make from
 * it, on the SAME root, on ANOTHER root (waiting or idle), on a sync object
 * and on the loop. It extends tests/test_reentry_matrix.c (the engine's
 * callbacks on a virtual loop) to real libuv I/O: one table row per cell,
 * each row states the outcome as an event log of the three roots plus the
 * misuse reports and the call's return value, and the test checks, for
 * every row:
 *
 *   - the logs and counts match the row (the documented outcome), and the
 *     error text names the mistake (the row's needle);
 *   - the completion delivered what the kind promises (a stream, the line,
 *     the address, the file's bytes, the error code);
 *   - every cleanup ran exactly once: the call's result value and the
 *     scenario's stack() block and state variables (each tracked), and no
 *     libuv handle is left open (streams and servers closed, compared with
 *     uv_walk() against the backend's own handles); ASan and valgrind see
 *     the rest (result values of the backend, requests);
 *   - nothing of a root fires after it was cancelled or freed (logged with
 *     a LATE: prefix, which fails the row);
 *   - the run is bounded: uv_run(UV_RUN_DEFAULT) must return by itself
 *     (once; twice for the uv_stop() rows) with the flow finished, under an
 *     unreferenced 3 s watchdog timer that stops libuv and fails the row;
 *     CTest has a TIMEOUT on the test too.
 *
 * The roots. R1 ("same") runs a critical section of a Mutex (futoin_add_sync:
 * the "held" Mutex) with an error handler that logs "eh:CODE" and recovers,
 * then a step that logs "after". The critical section registers a tracked
 * stack() block and a tracked state variable, then builds the kind's
 * scenario, in which the callback under test makes the call; a 1 ms
 * futoin_uv_sleep() follows the critical section, so that work is left
 * when the call is made (a uv_stop() then shows). R2 ("other")
 * waits in a step with a cancel handler ("ch") and no timeout (error
 * handler "eh:CODE" recovering, then "after"); R2 is executed first. R3
 * ("idle") holds one step that logs "run" and is never executed, except by
 * the call. Other events: "added" (a step added by the call ran),
 * "unh:CODE" (the unhandled-error callback). "same" is the interface the
 * callback was given; the connection callback of futoin_uv_serve() gets
 * none, so there it is R1's handle (the serving step is running).
 *
 * Each row gets a fresh FutoInUv, a listening FutoInUvServer on 127.0.0.1
 * port 0 and a plain blocking client socket connected to it before the run
 * (the kernel completes the handshake from the backlog), or a plain
 * listening socket for connect, a port nobody listens on, or files in a
 * temporary directory. The serve rows: the program closes the server 10 ms
 * after the connection callback (not part of the cell), which ends an
 * accept loop that went on with CommError "ECANCELED: accept: server
 * closed". Other kinds: R1's queued accept holds the server; the harness's
 * reference is dropped, so it stops listening when R1's critical section
 * ends.
 *
 * The kinds of UDP, Unix sockets, child processes and file handles have two
 * calls more, on the same root: the same kind of step again (on the same
 * socket, process or file), and closing the kind's handle
 * (futoin_uv_udp_close(), futoin_uv_stream_close(), a futoin_uv_file_close()
 * step; futoin_uv_process_kill() of the child), whose return or state the
 * row records. A child process of a row must have been reaped at the end
 * (waitpid() finds no such child); the eh_wait_timeout kind calls from the
 * handler of a Timeout after the kill policy sent its child SIGTERM.
 *
 * Callbacks never assert (cmocka would longjmp through the engine and
 * libuv): they record, and the test body checks.
 *
 * UVRE_ONLY=substring runs only the rows whose name (kind/call/target)
 * contains it, UVRE_EXACT=name only that row; UVRE_DUMP=1 prints each
 * row's observed outcome, UVRE_TRACE=1 each row's name before it runs. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <futoin/sync.h>
#include <futoin/uv.h>

#include "../time_scale.h"

#define TXT 256
#define NTRACK 32
#define WATCHDOG_MS 3000
#define MAX_RUNS 16
/* The write kind: this much through a socket with small buffers, so that
 * libuv queues the rest and the step completes from on_written(). */
#define BIG_WRITE (256u * 1024u)

typedef enum {
    K_SERVE_CB,   /* the FutoInUvConnectionCb of futoin_uv_serve() */
    K_ACCEPT,     /* the step after futoin_uv_accept() */
    K_CONNECT,    /* the step after futoin_uv_tcp_connect() */
    K_READ_LINE,  /* the step after futoin_uv_read_line() */
    K_READ_EXACT, /* the step after futoin_uv_read_exact() */
    K_READ_SOME,  /* the step after futoin_uv_read_some() */
    K_READ_UNTIL, /* the step after futoin_uv_read_until() */
    K_WRITE,      /* the step after futoin_uv_write_static() (queued by libuv) */
    K_CLOSE,      /* the step after futoin_uv_close() (graceful) */
    K_RESOLVE,    /* the step after futoin_uv_resolve("127.0.0.1") */
    K_FILE_READ,  /* the step after futoin_uv_file_read() */
    K_FILE_WRITE, /* the step after futoin_uv_file_write() */
    K_SLEEP,      /* the step after futoin_uv_sleep() */
    K_LISTEN,     /* the step after futoin_uv_tcp_listen() (completes in its step) */
    K_EH_EOF,     /* the error handler of a read that failed (EOF) */
    K_EH_REFUSED, /* the error handler of a connect that failed (refused) */
    K_UDP_RECV,   /* the step after futoin_uv_udp_recv() */
    K_UDP_SEND,   /* the step after futoin_uv_udp_send() */
    K_PIPE_CONN,  /* the step after futoin_uv_pipe_connect() */
    K_PIPE_SERVE, /* the FutoInUvConnectionCb of futoin_uv_serve() on a Unix socket */
    K_PROC_WAIT,  /* the step after futoin_uv_process_wait() */
    K_FOPEN,      /* the step after futoin_uv_file_open() */
    K_FPREAD,     /* the step after futoin_uv_file_pread() */
    K_FPWRITE,    /* the step after futoin_uv_file_pwrite() */
    K_FFSTAT,     /* the step after futoin_uv_file_fstat() */
    K_FCLOSE,     /* the step after futoin_uv_file_close() */
    K_READDIR,    /* the step after futoin_uv_readdir() */
    K_EH_PIPE,    /* the error handler of a pipe connect that failed (no socket file) */
    K_EH_FOPEN,   /* the error handler of a file open that failed (no file) */
    K_EH_WAIT_TO, /* the error handler of a process wait that timed out (child still there) */
    K_EH_UDP,     /* the error handler of a UDP receive whose socket was closed */
    K_COUNT
} Kind;

static const char* const kind_names[K_COUNT] = { "serve_cb", "accept", "connect", "read_line",
    "read_exact", "read_some", "read_until", "write", "close", "resolve", "file_read", "file_write",
    "sleep", "listen", "eh_eof", "eh_refused", "udp_recv", "udp_send", "pipe_connect",
    "pipe_serve_cb", "process_wait", "file_open", "file_pread", "file_pwrite", "file_fstat",
    "file_close", "readdir", "eh_pipe_enoent", "eh_open_enoent", "eh_wait_timeout",
    "eh_udp_closed" };

typedef enum {
    C_SUCCESS,     /* success1(a tracked value) */
    C_ERROR,       /* error("ReErr", "reentry") */
    C_ADD,         /* add(a step that logs "added") */
    C_EXECUTE,     /* execute() */
    C_CANCEL,      /* cancel() */
    C_FREE,        /* futoin_asyncsteps_free() */
    C_STATE,       /* stateVariable("re", allocate, cleanup): a tracked value */
    C_STACK,       /* stack(16, cleanup): a tracked block */
    C_SET_TIMEOUT, /* setTimeout(5) */
    C_SYNC_IDLE,   /* futoin_sync_free() of an idle Mutex */
    C_SYNC_HELD,   /* futoin_sync_free() of the Mutex R1 is inside */
    C_LOOP_STOP,   /* futoin_loop_stop() of the backend's FutoInLoop */
    C_UV_STOP,     /* uv_stop() of the backend's uv_loop_t */
    C_AGAIN,       /* the same kind of step again, on the same handle */
    C_CLOSE,       /* close the kind's handle (socket, stream, file; kill a child) */
    C_COUNT
} CallKind;

static const char* const call_names[C_COUNT] = { "success", "error", "add", "execute", "cancel",
    "free", "state", "stack", "setTimeout", "sync_free_idle", "sync_free_held", "loop_stop",
    "uv_stop", "again", "close" };

typedef enum { T_SAME, T_OTHER, T_IDLE, T_SYNC, T_LOOP } Target;

static const char* const target_names[] = { "same", "other", "idle", "sync", "loop" };

typedef struct Row {
    Kind kind;
    CallKind call;
    Target target;
    const char* expect; /* "r1[...] r2[...] r3[...] mN [ret]" */
    const char* needle; /* in the misuse message or R1's error_info; NULL: none */
} Row;

typedef struct Fx Fx;

typedef struct RootCtx {
    Fx* fx;
    FutoInAsyncSteps* h;
    char log[TXT];
    char info[TXT]; /* error_info seen by the outer error handler */
    int dead;       /* cancelled or freed: nothing may fire any more */
    int freed;
    int done; /* "after" or "unh" logged */
} RootCtx;

typedef struct Track {
    Fx* fx;
    int cleaned;
} Track;

struct Fx {
    const Row* row;
    FutoInUv* uv;
    FutoInLoop* loop;
    uv_loop_t* l;
    RootCtx rc1, rc2, rc3;
    FutoInSync* held; /* R1 runs inside it */
    FutoInSync* idle; /* nobody uses it */
    int idle_freed;
    FutoInUvServer* srv; /* the harness's reference (serve only after outer1) */
    unsigned port;
    int cfd;         /* client socket, -1 if none */
    int lfd;         /* plain listening socket (connect), -1 if none */
    uv_poll_t drain; /* reads cfd (write kind) */
    int drain_on;
    size_t drained;
    size_t drained_at_trigger;
    FutoInUvStream** eof_slot; /* eh_eof: the stream, held by a stack() block */
    uv_timer_t watchdog;
    int expired;
    int running;         /* the run phase: the callback under test may call */
    int called;          /* the call was made */
    int trigger_again;   /* the callback under test ran again */
    int trigger_outside; /* ... or outside the run phase */
    int arg_ok;          /* the completion delivered what the kind promises */
    int misuse;
    char msg[TXT];
    char ret[32];
    Track trk[NTRACK];
    int ntrk;
    /* The kinds of local sockets, processes and files. */
    FutoInUvUdp* udp;       /* the harness's reference */
    int ufd;                /* plain UDP socket: the peer; -1 if none */
    unsigned uport;         /* its port */
    FutoInUvStream* stream; /* the stream the completion gave (borrowed) */
    FutoInUvProcess* proc;  /* the harness's reference */
    FutoInUvFile* file;     /* the harness's reference */
    long pid;               /* of the child: reaped at the end */
};

static char g_dir[64];
static char g_path_r[96];
static char g_path_w[96];
static char g_sock_l[96]; /* a plain listening Unix socket */
static char g_sock_s[96]; /* the FutoInUvServer of the pipe serve kind */
static char g_missing[96];
static char g_big[BIG_WRITE];

/* ------------------------------------------------------------------------ */
/* Recording                                                                 */

static void ev(RootCtx* rc, const char* what, const char* code)
{
    char buf[96];
    snprintf(buf, sizeof(buf), "%s%s%s%s", rc->dead ? "LATE:" : "", what, code ? ":" : "",
            code ? code : "");
    size_t len = strlen(rc->log);
    snprintf(rc->log + len, sizeof(rc->log) - len, "%s%s", len ? " " : "", buf);
}

static void on_misuse(void* data, FutoInAsyncSteps* as, const char* info)
{
    Fx* fx = data;
    (void)as;
    if (fx->misuse == 0) {
        snprintf(fx->msg, sizeof(fx->msg), "%s", info);
    }
    ++fx->misuse;
}

static Track* track_new(Fx* fx)
{
    if (fx->ntrk >= NTRACK) {
        return NULL;
    }
    Track* t = &fx->trk[fx->ntrk++];
    t->fx = fx;
    t->cleaned = 0;
    return t;
}

static void track_clean(Track* t)
{
    if (t) {
        ++t->cleaned;
    }
}

static void val_cleanup(FutoInBinaryValue* v)
{
    track_clean(v->custom_data);
}
static const FutoInType val_type = { FTN_TYPE_CUSTOM_OBJECT, val_cleanup };

static void stack_cleanup(void* block)
{
    track_clean(*(Track**)block);
}

static void* state_alloc(void* data)
{
    return track_new(data);
}
static void state_cleanup(void* data, void* value)
{
    (void)data;
    track_clean(value);
}

/* ------------------------------------------------------------------------ */
/* Plain callbacks of the roots                                              */

static void rec_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    RootCtx* rc = data;
    ev(rc, "eh", code);
    snprintf(rc->info, sizeof(rc->info), "%s", futoin_error_info(as));
    futoin_success(as);
}
static void rec_after(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    RootCtx* rc = data;
    ev(rc, "after", NULL);
    rc->done = 1;
}
static void rec_added(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    ev(data, "added", NULL);
}
static void rec_run(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)args;
    ev(data, "run", NULL);
}
static void rec_cancel(FutoInAsyncSteps* as, void* data)
{
    (void)as;
    ev(data, "ch", NULL);
}
static void rec_unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)as;
    RootCtx* rc = data;
    ev(rc, "unh", code);
    rc->done = 1;
}
static void wait_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_set_cancel(as, rec_cancel, data);
    futoin_wait_external(as);
}

/* ------------------------------------------------------------------------ */
/* The call                                                                  */

/* The same kind of step again, added on x; its result goes to the step
 * after the callback. */
static void do_again(Fx* fx, FutoInAsyncSteps* x)
{
    switch (fx->row->kind) {
    case K_UDP_RECV:
        futoin_uv_udp_recv(x, fx->udp, 0); /* the second datagram of the peer */
        break;
    case K_EH_UDP:
        futoin_uv_udp_recv(x, fx->udp, 0); /* closed: ECANCELED */
        break;
    case K_UDP_SEND:
        futoin_uv_udp_send(x, fx->udp, "127.0.0.1", fx->uport, "dgram", 5);
        break;
    case K_PIPE_CONN:
        futoin_uv_pipe_connect(x, g_sock_l);
        break;
    case K_PROC_WAIT:
        futoin_uv_process_wait(x, fx->proc); /* exited: completes at once */
        break;
    case K_EH_WAIT_TO:
        /* The child is being ended by the kill policy: this waits for it. */
        futoin_uv_process_wait(x, fx->proc);
        break;
    case K_FOPEN:
        futoin_uv_file_open(x, g_path_r, O_RDONLY, 0);
        break;
    case K_FPREAD:
        futoin_uv_file_pread(x, fx->file, 0, 0);
        break;
    case K_FPWRITE:
        futoin_uv_file_pwrite(x, fx->file, 0, "x", 1);
        break;
    case K_FFSTAT:
        futoin_uv_file_fstat(x, fx->file);
        break;
    case K_FCLOSE:
        futoin_uv_file_close(x, fx->file); /* closed already: EBADF */
        break;
    case K_READDIR:
        futoin_uv_readdir(x, g_dir);
        break;
    default:
        break;
    }
}

/* Closes the kind's handle: at once for sockets and streams, with a close
 * step on x for files; a child that exited is sent a signal. */
static void do_close(Fx* fx, FutoInAsyncSteps* x)
{
    switch (fx->row->kind) {
    case K_UDP_RECV:
    case K_UDP_SEND:
    case K_EH_UDP:
        futoin_uv_udp_close(fx->udp);
        snprintf(fx->ret, sizeof(fx->ret), "queued=%zu", futoin_uv_udp_queued(fx->udp));
        break;
    case K_PIPE_CONN:
    case K_PIPE_SERVE:
        futoin_uv_stream_close(fx->stream);
        snprintf(fx->ret, sizeof(fx->ret), "open=%d", futoin_uv_stream_is_open(fx->stream));
        break;
    case K_PROC_WAIT: {
        int r = futoin_uv_process_kill(fx->proc, SIGTERM);
        snprintf(fx->ret, sizeof(fx->ret), "kill=%s", r ? uv_err_name(r) : "0");
        break;
    }
    case K_EH_WAIT_TO: {
        /* 0 while the child is there, UV_ESRCH once its exit was reported:
         * the kill policy's SIGTERM went first, so either may be seen. */
        int r = futoin_uv_process_kill(fx->proc, SIGTERM);
        snprintf(fx->ret, sizeof(fx->ret), "kill=%s",
                r == 0 || r == UV_ESRCH ? "0|ESRCH" : uv_err_name(r));
        break;
    }
    case K_FOPEN:
    case K_FPREAD:
    case K_FPWRITE:
    case K_FFSTAT:
    case K_FCLOSE:
        futoin_uv_file_close(x, fx->file);
        snprintf(fx->ret, sizeof(fx->ret), "open=%d", futoin_uv_file_is_open(fx->file));
        break;
    default:
        break;
    }
}

static void do_call(Fx* fx, RootCtx* rc, FutoInAsyncSteps* x)
{
    switch (fx->row->call) {
    case C_SUCCESS:
        futoin_success1(x, futoin_val_custom(&val_type, track_new(fx)));
        break;
    case C_ERROR:
        futoin_error(x, "ReErr", "reentry");
        break;
    case C_ADD:
        futoin_add(x, rec_added, NULL, rc);
        break;
    case C_EXECUTE:
        futoin_execute(x, rec_unhandled, rc);
        break;
    case C_CANCEL:
        futoin_cancel(x);
        if (!futoin_is_valid(rc->h)) {
            rc->dead = 1;
        }
        break;
    case C_FREE:
        if (x == rc->h) {
            rc->freed = 1;
        }
        futoin_asyncsteps_free(x);
        rc->dead = rc->dead || x == rc->h;
        break;
    case C_STATE: {
        void* v = futoin_state(x, "re", state_alloc, state_cleanup, fx);
        snprintf(fx->ret, sizeof(fx->ret), "state=%s", v ? "ptr" : "null");
        break;
    }
    case C_STACK: {
        void* p = futoin_stack(x, 16, stack_cleanup);
        if (p) {
            *(Track**)p = track_new(fx);
        }
        snprintf(fx->ret, sizeof(fx->ret), "stack=%s", p ? "ptr" : "null");
        break;
    }
    case C_SET_TIMEOUT:
        futoin_set_timeout(x, 5);
        break;
    case C_SYNC_IDLE:
    case C_SYNC_HELD: {
        int r = futoin_sync_free(fx->row->call == C_SYNC_IDLE ? fx->idle : fx->held);
        if (r == FUTOIN_SYNC_OK) {
            if (fx->row->call == C_SYNC_IDLE) {
                fx->idle_freed = 1;
            } else {
                fx->held = NULL; /* gone: the teardown check then fails */
            }
        }
        snprintf(fx->ret, sizeof(fx->ret), "sync=%s",
                r == FUTOIN_SYNC_OK             ? "OK"
                        : r == FUTOIN_SYNC_BUSY ? "BUSY"
                                                : "INVALID");
        break;
    }
    case C_LOOP_STOP:
        futoin_loop_stop(fx->loop);
        break;
    case C_UV_STOP:
        uv_stop(fx->l);
        break;
    case C_AGAIN:
        do_again(fx, x);
        break;
    case C_CLOSE:
        do_close(fx, x);
        break;
    case C_COUNT:
        break;
    }
}

static void closer(void* data);

/* The callback under test: as_same is the interface it was given (NULL for
 * the connection callback: the same root is then R1's handle). */
static void trigger(Fx* fx, FutoInAsyncSteps* as_same)
{
    if (!fx->running) {
        ++fx->trigger_outside;
        return;
    }
    if (fx->called) {
        ++fx->trigger_again;
        return;
    }
    fx->called = 1;
    if (fx->row->kind == K_SERVE_CB || fx->row->kind == K_PIPE_SERVE) {
        /* The accept loop runs until its server is closed: the program
         * closes it a little later (not part of the cell). Outside a
         * round each timer reads the clock itself: scaled, so that a
         * preemption between this and the call under test (a 5 ms
         * timeout) does not put the close first. */
        futoin_loop_deferred(fx->loop, futoin_test_ms(10), fx, closer);
    }
    RootCtx* rc;
    FutoInAsyncSteps* x;
    switch (fx->row->target) {
    case T_OTHER:
        rc = &fx->rc2;
        x = rc->h;
        break;
    case T_IDLE:
        rc = &fx->rc3;
        x = rc->h;
        break;
    default:
        rc = &fx->rc1;
        x = as_same ? as_same : rc->h;
        break;
    }
    do_call(fx, rc, x);
}

/* ------------------------------------------------------------------------ */
/* Scenarios                                                                 */

static void closer(void* data)
{
    Fx* fx = data;
    futoin_uv_server_close(fx->srv);
}

/* eh_udp_closed: the program closes the socket while a receive waits. */
static void udp_closer(void* data)
{
    Fx* fx = data;
    futoin_uv_udp_close(fx->udp);
}
static void udp_recv_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Fx* fx = ((RootCtx*)data)->fx;
    futoin_uv_udp_recv(as, fx->udp, 0);
    /* Not scaled: a close before the receive started gives the same
     * error. */
    futoin_loop_deferred(fx->loop, 5, fx, udp_closer);
}

static int bytes_are(const FutoInArgs* args, const char* text)
{
    size_t len = 0;
    const char* b = futoin_uv_arg_bytes(args, 0, &len);
    return b && len == strlen(text) && memcmp(b, text, len) == 0;
}

/* What the completion delivered, per kind. */
static int args_ok(Fx* fx, const FutoInArgs* args)
{
    switch (fx->row->kind) {
    case K_ACCEPT:
    case K_CONNECT:
        return futoin_uv_arg_stream(args, 0) != NULL;
    case K_READ_LINE:
        return futoin_arg_type(args, 0) == FTN_TYPE_STRING && bytes_are(args, "line");
    case K_READ_EXACT:
        return futoin_arg_type(args, 0) == (FTN_TYPE_UINT8 | FTN_TYPE_ARRAY)
                && bytes_are(args, "line");
    case K_READ_SOME: {
        /* Whatever had arrived, at most 4 bytes: a prefix of "line". */
        size_t len = 0;
        const char* b = futoin_uv_arg_bytes(args, 0, &len);
        return futoin_arg_type(args, 0) == (FTN_TYPE_UINT8 | FTN_TYPE_ARRAY) && b && len > 0
                && len <= 4 && memcmp(b, "line", len) == 0;
    }
    case K_READ_UNTIL:
        return futoin_arg_type(args, 0) == FTN_TYPE_STRING && bytes_are(args, "line\n");
    case K_LISTEN:
        return futoin_uv_server_port(futoin_uv_arg_server(args, 0)) != 0;
    case K_RESOLVE:
        return strcmp(futoin_arg_cstr(args, 0, "?"), "127.0.0.1") == 0;
    case K_FILE_READ:
        return bytes_are(args, "data\n");
    case K_FILE_WRITE:
        return futoin_arg_int(args, 0, -1) == 1;
    case K_UDP_RECV:
        return bytes_are(args, "dgram") && strcmp(futoin_arg_cstr(args, 1, "?"), "127.0.0.1") == 0
                && futoin_arg_int(args, 2, -1) == (int64_t)fx->uport;
    case K_PIPE_CONN:
        fx->stream = futoin_uv_arg_stream(args, 0);
        return fx->stream && strcmp(futoin_uv_stream_peer(fx->stream), g_sock_l) == 0;
    case K_PROC_WAIT:
        return futoin_arg_int(args, 0, -1) == 7 && futoin_arg_int(args, 1, -1) == 0;
    case K_FOPEN:
        fx->file = futoin_uv_file_ref(futoin_uv_arg_file(args, 0));
        return fx->file && strcmp(futoin_uv_file_path(fx->file), g_path_r) == 0;
    case K_FPREAD:
        return bytes_are(args, "data\n");
    case K_FPWRITE:
        return futoin_arg_int(args, 0, -1) == 1;
    case K_FFSTAT:
        return futoin_arg_int(args, 0, -1) == 5 && S_ISREG(futoin_arg_int(args, 1, 0));
    case K_FCLOSE:
        return !futoin_uv_file_is_open(fx->file);
    case K_READDIR: {
        /* The names of the directory: "r" at least. */
        size_t len = 0;
        const char* names = futoin_uv_arg_bytes(args, 0, &len);
        int seen = 0;
        for (const char* n = names; n && n < names + len; n += strlen(n) + 1) {
            seen |= strcmp(n, "r") == 0;
        }
        return seen && futoin_arg_int(args, 1, 0) >= 1;
    }
    case K_WRITE:
        /* Queued by libuv: the peer had to read before the step ran. */
        fx->drained_at_trigger = fx->drained;
        return fx->drained >= BIG_WRITE / 2;
    default:
        return 1;
    }
}

static void trig_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Fx* fx = ((RootCtx*)data)->fx;
    fx->arg_ok = args_ok(fx, args);
    trigger(fx, as);
}

static void trig_eh(FutoInAsyncSteps* as, void* data, const char* code)
{
    Fx* fx = ((RootCtx*)data)->fx;
    const char* info = futoin_error_info(as);
    char want[160];
    if (fx->row->kind == K_EH_EOF) {
        fx->arg_ok = strcmp(code, FUTOIN_COMM_ERROR) == 0
                && strcmp(info, "EOF: read: connection closed by peer") == 0;
    } else if (fx->row->kind == K_EH_PIPE) {
        snprintf(want, sizeof(want), "ENOENT: connect %s", g_missing);
        fx->arg_ok = strcmp(code, FUTOIN_CONNECT_ERROR) == 0 && strcmp(info, want) == 0
                && futoin_uv_errno(as) == UV_ENOENT;
    } else if (fx->row->kind == K_EH_WAIT_TO) {
        snprintf(want, sizeof(want), "wait pid %ld /bin/sh", futoin_uv_process_pid(fx->proc));
        /* The cancel handler sent SIGTERM first; whether libuv has
         * reaped the child by now depends on timing. */
        fx->arg_ok = strcmp(code, FUTOIN_TIMEOUT) == 0 && strcmp(info, want) == 0;
    } else if (fx->row->kind == K_EH_UDP) {
        snprintf(want, sizeof(want), "ECANCELED: udp_recv 127.0.0.1:%u: socket closed",
                futoin_uv_udp_port(fx->udp));
        fx->arg_ok = strcmp(code, FUTOIN_COMM_ERROR) == 0 && strcmp(info, want) == 0
                && futoin_uv_errno(as) == UV_ECANCELED && futoin_uv_udp_queued(fx->udp) == 0;
    } else if (fx->row->kind == K_EH_FOPEN) {
        snprintf(want, sizeof(want), "ENOENT: open %s", g_missing);
        fx->arg_ok = strcmp(code, FUTOIN_COMM_ERROR) == 0 && strcmp(info, want) == 0
                && futoin_uv_errno(as) == UV_ENOENT;
    } else {
        fx->arg_ok = strcmp(code, FUTOIN_CONNECT_ERROR) == 0 && strstr(info, "ECONNREFUSED");
    }
    trigger(fx, as);
}

static void conn_cb(void* data, FutoInUvStream* s)
{
    Fx* fx = data;
    fx->arg_ok = s != NULL && futoin_uv_stream_is_open(s);
    if (fx->row->kind == K_PIPE_SERVE) {
        fx->stream = s;
        fx->arg_ok = fx->arg_ok && strcmp(futoin_uv_stream_peer(s), g_sock_s) == 0;
    }
    trigger(fx, NULL);
}

/* Steps that get the accepted stream (borrowed) and queue the operation
 * whose completion is under test; the operation's step holds its own
 * reference. */
static void got_read_line(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    futoin_uv_read_line(as, futoin_uv_arg_stream(args, 0), 0);
    futoin_add(as, trig_step, NULL, data);
}
static void got_read_exact(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    futoin_uv_read_exact(as, futoin_uv_arg_stream(args, 0), 4);
    futoin_add(as, trig_step, NULL, data);
}
static void got_read_some(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    futoin_uv_read_some(as, futoin_uv_arg_stream(args, 0), 4);
    futoin_add(as, trig_step, NULL, data);
}
static void got_read_until(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    futoin_uv_read_until(as, futoin_uv_arg_stream(args, 0), "ne\n", 0);
    futoin_add(as, trig_step, NULL, data);
}
static void got_write(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    FutoInUvStream* s = futoin_uv_arg_stream(args, 0);
    int size = 4096;
    uv_send_buffer_size((uv_handle_t*)futoin_uv_stream_handle(s), &size);
    futoin_uv_write_static(as, s, g_big, sizeof(g_big));
    futoin_add(as, trig_step, NULL, data);
}
static void got_close(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    /* The close step takes over a reference of ours. */
    futoin_uv_close(as, futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0)), 1);
    futoin_add(as, trig_step, NULL, data);
}

static void slot_release(void* block)
{
    futoin_uv_stream_release(*(FutoInUvStream**)block);
}
static void eof_read(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_read_line(as, *((RootCtx*)data)->fx->eof_slot, 0);
}
static void got_eof(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    FutoInUvStream** slot = futoin_stack(as, sizeof(*slot), slot_release);
    if (!slot) {
        futoin_error(as, "NoMem", "stack");
        return;
    }
    *slot = futoin_uv_stream_ref(futoin_uv_arg_stream(args, 0));
    ((RootCtx*)data)->fx->eof_slot = slot;
    futoin_add(as, eof_read, trig_eh, data);
}
static void refused_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    futoin_uv_tcp_connect(as, "127.0.0.1", ((RootCtx*)data)->fx->port);
}

/* The file kinds: the opened file is kept (the harness's reference), then
 * the operation under test is queued. */
static void got_file(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    Fx* fx = ((RootCtx*)data)->fx;
    fx->file = futoin_uv_file_ref(futoin_uv_arg_file(args, 0));
    switch (fx->row->kind) {
    case K_FPREAD:
        futoin_uv_file_pread(as, fx->file, 0, 0);
        break;
    case K_FPWRITE:
        futoin_uv_file_pwrite(as, fx->file, 0, "x", 1);
        break;
    case K_FFSTAT:
        futoin_uv_file_fstat(as, fx->file);
        break;
    default:
        futoin_uv_file_close(as, fx->file);
        break;
    }
    futoin_add(as, trig_step, NULL, data);
}
static void missing_pipe_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_uv_pipe_connect(as, g_missing);
}
/* A child that does not end by itself (started by the setup), waited for
 * under a short timeout: the Timeout reaches the handler after the kill
 * policy sent the child SIGTERM (it is not ignored). */
static void wait_timeout_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    Fx* fx = ((RootCtx*)data)->fx;
    /* Not scaled for valgrind: the timer can only fire after this round,
     * in which the wait step starts. */
    futoin_set_timeout(as, 20);
    futoin_uv_process_wait(as, fx->proc);
}
static void missing_open_step(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_uv_file_open(as, g_missing, O_RDONLY, 0);
}

/* R1's critical section. */
static void outer1(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    RootCtx* rc = data;
    Fx* fx = rc->fx;
    Track** blk = futoin_stack(as, sizeof(Track*), stack_cleanup);
    if (blk) {
        *blk = track_new(fx);
    }
    futoin_state(as, "scen", state_alloc, state_cleanup, fx);
    switch (fx->row->kind) {
    case K_SERVE_CB:
        futoin_uv_serve(as, fx->srv, conn_cb, fx);
        break;
    case K_ACCEPT:
        futoin_uv_accept(as, fx->srv);
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_CONNECT:
        futoin_uv_tcp_connect(as, "127.0.0.1", fx->port);
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_READ_LINE:
        futoin_uv_accept(as, fx->srv);
        futoin_add(as, got_read_line, NULL, rc);
        break;
    case K_READ_EXACT:
        futoin_uv_accept(as, fx->srv);
        futoin_add(as, got_read_exact, NULL, rc);
        break;
    case K_READ_SOME:
        futoin_uv_accept(as, fx->srv);
        futoin_add(as, got_read_some, NULL, rc);
        break;
    case K_READ_UNTIL:
        futoin_uv_accept(as, fx->srv);
        futoin_add(as, got_read_until, NULL, rc);
        break;
    case K_WRITE:
        futoin_uv_accept(as, fx->srv);
        futoin_add(as, got_write, NULL, rc);
        break;
    case K_CLOSE:
        futoin_uv_accept(as, fx->srv);
        futoin_add(as, got_close, NULL, rc);
        break;
    case K_RESOLVE:
        futoin_uv_resolve(as, "127.0.0.1");
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_FILE_READ:
        futoin_uv_file_read(as, g_path_r, 0);
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_FILE_WRITE:
        futoin_uv_file_write(as, g_path_w, "x", 1, 0);
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_SLEEP:
        futoin_uv_sleep(as, 1);
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_LISTEN:
        futoin_uv_tcp_listen(as, "127.0.0.1", 0, 0);
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_EH_EOF:
        futoin_uv_accept(as, fx->srv);
        futoin_add(as, got_eof, NULL, rc);
        break;
    case K_EH_REFUSED:
        futoin_add(as, refused_step, trig_eh, rc);
        break;
    case K_UDP_RECV:
        futoin_uv_udp_recv(as, fx->udp, 0);
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_UDP_SEND:
        futoin_uv_udp_send(as, fx->udp, "127.0.0.1", fx->uport, "dgram", 5);
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_PIPE_CONN:
        futoin_uv_pipe_connect(as, g_sock_l);
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_PIPE_SERVE:
        futoin_uv_serve(as, fx->srv, conn_cb, fx);
        break;
    case K_PROC_WAIT: {
        /* Started here, so that the step waits for the exit. */
        const char* argv[] = { "/bin/sh", "-c", "exit 7", NULL };
        FutoInUvSpawnOptions o;
        memset(&o, 0, sizeof(o));
        o.file = "/bin/sh";
        o.argv = argv;
        o.stdio[0] = o.stdio[1] = FUTOIN_UV_STDIO_IGNORE;
        fx->proc = futoin_uv_spawn(fx->uv, &o, NULL);
        fx->pid = futoin_uv_process_pid(fx->proc);
        futoin_uv_process_wait(as, fx->proc);
        futoin_add(as, trig_step, NULL, rc);
        break;
    }
    case K_FOPEN:
        futoin_uv_file_open(as, g_path_r, O_RDONLY, 0);
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_FPREAD:
    case K_FFSTAT:
    case K_FCLOSE:
        futoin_uv_file_open(as, g_path_r, O_RDONLY, 0);
        futoin_add(as, got_file, NULL, rc);
        break;
    case K_FPWRITE:
        futoin_uv_file_open(as, g_path_w, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        futoin_add(as, got_file, NULL, rc);
        break;
    case K_READDIR:
        futoin_uv_readdir(as, g_dir);
        futoin_add(as, trig_step, NULL, rc);
        break;
    case K_EH_PIPE:
        futoin_add(as, missing_pipe_step, trig_eh, rc);
        break;
    case K_EH_FOPEN:
        futoin_add(as, missing_open_step, trig_eh, rc);
        break;
    case K_EH_WAIT_TO:
        futoin_add(as, wait_timeout_step, trig_eh, rc);
        break;
    case K_EH_UDP:
        futoin_add(as, udp_recv_step, trig_eh, rc);
        break;
    case K_COUNT:
        break;
    }
    if (fx->srv && fx->row->kind != K_SERVE_CB && fx->row->kind != K_PIPE_SERVE) {
        /* The queued accept holds its own reference: the server stops
         * listening when that step goes (R1's critical section ends). */
        futoin_uv_server_release(fx->srv);
        fx->srv = NULL;
    }
}

/* ------------------------------------------------------------------------ */
/* Sockets                                                                   */

static int listen_loopback(unsigned* port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(fd, 16) != 0) {
        close(fd);
        return -1;
    }
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr*)&a, &len);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A blocking client connected to 127.0.0.1:port (rcvbuf > 0: that receive
 * buffer, set before the handshake), or -1. */
static int client_connect(unsigned port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    if (rcvbuf > 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    if (connect(fd, (struct sockaddr*)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A plain UDP socket on 127.0.0.1, its port in *port, or -1. */
static int udp_peer(unsigned* port)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(fd, (struct sockaddr*)&a, sizeof(a)) != 0
            || getsockname(fd, (struct sockaddr*)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static int udp_send_to(int fd, unsigned port, const char* text)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    ssize_t n = sendto(fd, text, strlen(text), 0, (struct sockaddr*)&a, sizeof(a));
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int unix_addr(struct sockaddr_un* a, const char* path)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(a->sun_path)) {
        return -1;
    }
    memcpy(a->sun_path, path, strlen(path) + 1);
    return 0;
}

/* A plain listening Unix socket at path (replaced), or -1. */
static int listen_unix(const char* path)
{
    struct sockaddr_un a;
    int fd = unix_addr(&a, path) == 0 ? socket(AF_UNIX, SOCK_STREAM, 0) : -1;
    if (fd < 0) {
        return -1;
    }
    unlink(path);
    if (bind(fd, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(fd, 16) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A blocking client connected to the Unix socket at path, or -1. */
static int connect_unix(const char* path)
{
    struct sockaddr_un a;
    int fd = unix_addr(&a, path) == 0 ? socket(AF_UNIX, SOCK_STREAM, 0) : -1;
    if (fd < 0) {
        return -1;
    }
    if (connect(fd, (struct sockaddr*)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void on_drain(uv_poll_t* h, int status, int events)
{
    (void)events;
    Fx* fx = h->data;
    char buf[65536];
    for (;;) {
        ssize_t n = status < 0 ? -1 : recv(fx->cfd, buf, sizeof(buf), 0);
        if (n > 0) {
            fx->drained += (size_t)n;
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            uv_poll_stop(h); /* EOF or error: nothing more to read */
        }
        return;
    }
}

/* ------------------------------------------------------------------------ */
/* Running one row                                                           */

static void on_watchdog(uv_timer_t* t)
{
    Fx* fx = t->data;
    fx->expired = 1;
    uv_stop(fx->l);
}

static void count_handle(uv_handle_t* h, void* arg)
{
    if (!uv_is_closing(h)) {
        ++*(int*)arg;
    }
}

static int open_handles(uv_loop_t* l)
{
    int n = 0;
    uv_walk(l, count_handle, &n);
    return n;
}

static void row_name(const Row* r, char* buf, size_t len)
{
    snprintf(buf, len, "%s/%s/%s", kind_names[r->kind], call_names[r->call],
            target_names[r->target]);
}

static char g_last_msg[TXT];
static char g_last_info[TXT];
static size_t g_last_drained;

/* Runs one row; fills sig with the observed outcome; returns NULL when the
 * hard checks hold, else why not. */
static const char* run_row(const Row* r, char* sig, size_t sig_len, char* why, size_t why_len)
{
    Fx* fx = calloc(1, sizeof(Fx));
    const char* err = NULL;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!err && !(cond)) {                                                                     \
            snprintf(why, why_len, __VA_ARGS__);                                                   \
            err = why;                                                                             \
        }                                                                                          \
    } while (0)
    fx->row = r;
    fx->cfd = fx->lfd = fx->ufd = -1;
    fx->uv = futoin_uv_new(NULL);
    if (!fx->uv) {
        free(fx);
        snprintf(why, why_len, "futoin_uv_new failed");
        return why;
    }
    fx->loop = futoin_uv_loop(fx->uv);
    fx->l = futoin_uv_uv_loop(fx->uv);
    const int base_handles = open_handles(fx->l);
    futoin_set_misuse_handler(fx->loop, on_misuse, fx);
    fx->rc1.fx = fx->rc2.fx = fx->rc3.fx = fx;
    fx->held = futoin_mutex_new(fx->loop, 1, FUTOIN_SYNC_UNLIMITED);
    fx->idle = futoin_mutex_new(fx->loop, 1, FUTOIN_SYNC_UNLIMITED);

    /* The kind's peer. */
    int setup_ok = 1;
    switch (r->kind) {
    case K_CONNECT:
        fx->lfd = listen_loopback(&fx->port);
        setup_ok = fx->lfd >= 0;
        break;
    case K_EH_REFUSED: {
        int fd = listen_loopback(&fx->port); /* bound, then released: nobody listens */
        setup_ok = fd >= 0;
        if (fd >= 0) {
            close(fd);
        }
        break;
    }
    case K_SERVE_CB:
    case K_ACCEPT:
    case K_READ_LINE:
    case K_READ_EXACT:
    case K_READ_SOME:
    case K_READ_UNTIL:
    case K_WRITE:
    case K_CLOSE:
    case K_EH_EOF: {
        int uerr = 0;
        fx->srv = futoin_uv_server_new(fx->uv, "127.0.0.1", 0, 16, &uerr);
        setup_ok = fx->srv != NULL;
        if (!setup_ok) {
            break;
        }
        fx->port = futoin_uv_server_port(fx->srv);
        fx->cfd = client_connect(fx->port, r->kind == K_WRITE ? 4096 : 0);
        setup_ok = fx->cfd >= 0;
        if (!setup_ok) {
            break;
        }
        if (r->kind == K_READ_LINE || r->kind == K_READ_EXACT || r->kind == K_READ_SOME
                || r->kind == K_READ_UNTIL) {
            setup_ok = send(fx->cfd, "line\n", 5, MSG_NOSIGNAL) == 5;
        } else if (r->kind == K_EH_EOF) {
            setup_ok = shutdown(fx->cfd, SHUT_WR) == 0;
        } else if (r->kind == K_WRITE) {
            fcntl(fx->cfd, F_SETFL, fcntl(fx->cfd, F_GETFL) | O_NONBLOCK);
            setup_ok = uv_poll_init(fx->l, &fx->drain, fx->cfd) == 0;
            if (setup_ok) {
                fx->drain_on = 1;
                fx->drain.data = fx;
                uv_poll_start(&fx->drain, UV_READABLE, on_drain);
                /* The write request keeps libuv running, not the drain. */
                uv_unref((uv_handle_t*)&fx->drain);
            }
        }
        break;
    }
    case K_UDP_RECV:
    case K_UDP_SEND:
    case K_EH_UDP: {
        int uerr = 0;
        fx->udp = futoin_uv_udp_new(fx->uv, "127.0.0.1", 0, 0, &uerr);
        fx->ufd = udp_peer(&fx->uport);
        setup_ok = fx->udp && fx->ufd >= 0;
        if (setup_ok && r->kind == K_UDP_RECV) {
            /* Two: one for the step under test, one for a receive again. */
            for (int i = 0; i < 2 && setup_ok; ++i) {
                setup_ok = udp_send_to(fx->ufd, futoin_uv_udp_port(fx->udp), "dgram") == 0;
            }
        }
        break;
    }
    case K_PIPE_CONN:
        fx->lfd = listen_unix(g_sock_l);
        setup_ok = fx->lfd >= 0;
        break;
    case K_EH_WAIT_TO: {
        const char* argv[] = { "/bin/sh", "-c", "exec sleep 30", NULL };
        FutoInUvSpawnOptions o;
        memset(&o, 0, sizeof(o));
        o.file = "/bin/sh";
        o.argv = argv;
        o.stdio[0] = o.stdio[1] = FUTOIN_UV_STDIO_IGNORE;
        o.kill_grace_ms = 100;
        fx->proc = futoin_uv_spawn(fx->uv, &o, NULL);
        fx->pid = futoin_uv_process_pid(fx->proc);
        setup_ok = fx->proc != NULL;
        break;
    }
    case K_PIPE_SERVE: {
        int uerr = 0;
        unlink(g_sock_s);
        fx->srv = futoin_uv_pipe_server_new(fx->uv, g_sock_s, 16, &uerr);
        setup_ok = fx->srv != NULL;
        if (setup_ok) {
            fx->cfd = connect_unix(g_sock_s);
            setup_ok = fx->cfd >= 0;
        }
        break;
    }
    default:
        break;
    }
    CHECK(setup_ok, "setup of the kind's peer failed (errno %d)", errno);

    fx->rc1.h = futoin_asyncsteps_new(fx->loop);
    fx->rc2.h = futoin_asyncsteps_new(fx->loop);
    fx->rc3.h = futoin_asyncsteps_new(fx->loop);
    futoin_add_sync(fx->rc1.h, fx->held, outer1, rec_eh, &fx->rc1);
    /* Work left after the callback under test, so that a uv_stop() shows. */
    futoin_uv_sleep(fx->rc1.h, 1);
    futoin_add(fx->rc1.h, rec_after, NULL, &fx->rc1);
    futoin_add(fx->rc2.h, wait_step, rec_eh, &fx->rc2);
    futoin_add(fx->rc2.h, rec_after, NULL, &fx->rc2);
    futoin_add(fx->rc3.h, rec_run, NULL, &fx->rc3);

    /* The watchdog does not keep libuv running; it stops a run that does
     * not end by itself. */
    uv_timer_init(fx->l, &fx->watchdog);
    fx->watchdog.data = fx;
    uv_timer_start(&fx->watchdog, on_watchdog, futoin_test_ms(WATCHDOG_MS), 0);
    uv_unref((uv_handle_t*)&fx->watchdog);

    int runs = 0;
    int finished = 0;
    if (setup_ok) {
        fx->running = 1;
        /* R2 first: its step waits before any callback of R1 runs. */
        futoin_execute(fx->rc2.h, rec_unhandled, &fx->rc2);
        futoin_execute(fx->rc1.h, rec_unhandled, &fx->rc1);
        while (runs < MAX_RUNS && !fx->expired) {
            int alive = uv_run(fx->l, UV_RUN_DEFAULT);
            ++runs;
            finished = fx->rc1.done || fx->rc1.dead;
            if (!alive && finished) {
                break;
            }
        }
        fx->running = 0;
    }
    if (r->call == C_LOOP_STOP || r->call == C_UV_STOP) {
        snprintf(fx->ret, sizeof(fx->ret), "runs=%d", runs);
    }
    snprintf(sig, sig_len, "r1[%s] r2[%s] r3[%s] m%d%s%s%s", fx->rc1.log, fx->rc2.log, fx->rc3.log,
            fx->misuse, fx->ret[0] ? " " : "", fx->ret, fx->trigger_again ? " again" : "");
    const int misuse_before_teardown = fx->misuse;

    /* Teardown (what a program would do at the end). */
    uv_timer_stop(&fx->watchdog);
    uv_close((uv_handle_t*)&fx->watchdog, NULL);
    if (!fx->rc1.freed) {
        futoin_asyncsteps_free(fx->rc1.h);
    }
    if (!fx->rc2.freed) {
        futoin_asyncsteps_free(fx->rc2.h);
    }
    futoin_asyncsteps_free(fx->rc3.h);
    int held_rc = fx->held ? futoin_sync_free(fx->held) : FUTOIN_SYNC_INVALID;
    int idle_rc = fx->idle_freed ? FUTOIN_SYNC_OK : futoin_sync_free(fx->idle);
    if (fx->srv) {
        futoin_uv_server_release(fx->srv); /* serve: the harness's reference */
    }
    if (fx->drain_on) {
        uv_close((uv_handle_t*)&fx->drain, NULL);
    }
    futoin_uv_udp_release(fx->udp);
    futoin_uv_process_release(fx->proc);
    if (fx->file) {
        /* The last reference closes a descriptor left open on libuv's
         * pool: the loop runs until that request is done. */
        futoin_uv_file_release(fx->file);
        uv_run(fx->l, UV_RUN_DEFAULT);
    }
    for (int i = 0; i < 8; ++i) {
        uv_run(fx->l, UV_RUN_NOWAIT);
    }
    const int left = open_handles(fx->l) - base_handles;
    if (fx->cfd >= 0) {
        close(fx->cfd);
    }
    if (fx->lfd >= 0) {
        close(fx->lfd);
        unlink(g_sock_l);
    }
    if (fx->ufd >= 0) {
        close(fx->ufd);
    }
    futoin_uv_free(fx->uv);
    int child_left = 0;
    if (fx->pid > 0) {
        int st;
        errno = 0;
        child_left = waitpid((pid_t)fx->pid, &st, WNOHANG) != -1 || errno != ECHILD;
    }

    CHECK(!fx->expired, "the run did not end within %u ms (watchdog)",
            (unsigned)futoin_test_ms(WATCHDOG_MS));
    CHECK(finished, "R1 did not finish (%d runs of uv_run)", runs);
    CHECK(r->call == C_UV_STOP || runs == 1, "uv_run() returned %d times", runs);
    CHECK(fx->called, "the callback under test never made the call");
    CHECK(fx->arg_ok, "the completion did not deliver what the kind promises");
    CHECK(!fx->trigger_outside, "the callback under test ran after the run (teardown)");
    CHECK(!fx->trigger_again, "the callback under test ran twice");
    CHECK(!strstr(fx->rc1.log, "LATE") && !strstr(fx->rc2.log, "LATE"),
            "a callback fired after cancel/free: r1[%s] r2[%s]", fx->rc1.log, fx->rc2.log);
    CHECK(fx->misuse == misuse_before_teardown, "misuse reports in the teardown: %s", fx->msg);
    CHECK(held_rc == FUTOIN_SYNC_OK, "the held Mutex was left busy or freed (%d)", held_rc);
    CHECK(idle_rc == FUTOIN_SYNC_OK, "the idle Mutex was left busy (%d)", idle_rc);
    CHECK(left == 0, "%d libuv handles left open (streams or servers not closed)", left);
    CHECK(!child_left, "the child %ld was not reaped", fx->pid);
    CHECK(fx->ntrk < NTRACK, "too many tracked objects");
    for (int i = 0; i < fx->ntrk; ++i) {
        CHECK(fx->trk[i].cleaned == 1, "tracked object %d cleaned up %d times", i,
                fx->trk[i].cleaned);
    }
    if (r->needle) {
        CHECK(strstr(fx->msg, r->needle) || strstr(fx->rc1.info, r->needle),
                "'%s' neither in the misuse message '%.200s' nor in error_info '%.200s'", r->needle,
                fx->msg, fx->rc1.info);
    }
#undef CHECK
    snprintf(g_last_msg, sizeof(g_last_msg), "%s", fx->msg);
    snprintf(g_last_info, sizeof(g_last_info), "%s", fx->rc1.info);
    g_last_drained = fx->drained_at_trigger;
    free(fx);
    return err;
}

/* ------------------------------------------------------------------------ */
/* The table                                                                 */

#define R(k, c, t, exp, needle)                                                                    \
    {                                                                                              \
        k, c, t, exp, needle                                                                       \
    }

/* Needles: the misuse message or R1's error_info must contain them. */
#define N_EXEC "execute() on a root that is already running" /* IE in a step, MSG else */
#define N_ADD "add() called from no running step"            /* MSG */
#define N_EH "not allowed in an error handler"               /* IE */
#define N_INFO "reentry"                                     /* error()'s info went through */
#define N_SRV "ECANCELED: accept: server closed"     /* the serve loop ended (server closed) */
#define N_EOF "EOF: read: connection closed by peer" /* the completion's error went on */
#define N_REF "ECONNREFUSED: connect 127.0.0.1:"     /* the completion's error went on */
#define N_PIPE "ENOENT: connect /"                   /* the completion's error went on */
#define N_WAIT "wait pid "                           /* the Timeout names the wait */
#define N_UDPC "ECANCELED: udp_recv 127.0.0.1:"      /* ...: socket closed */
#define N_OPEN "ENOENT: open /"                      /* the completion's error went on */
#define N_CLOSED "EBADF: close /tmp/futoin-uvre-"    /* ... "/r: file is closed" */

static const Row rows[] = {
    /* serve_cb */
    R(K_SERVE_CB, C_SUCCESS, T_SAME, "r1[eh:CommError after] r2[] r3[] m0", N_SRV),
    R(K_SERVE_CB, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_SERVE_CB, C_ADD, T_SAME, "r1[added eh:CommError after] r2[] r3[] m0", N_SRV),
    R(K_SERVE_CB, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_SERVE_CB, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_SERVE_CB, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_SERVE_CB, C_STATE, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 state=ptr", N_SRV),
    R(K_SERVE_CB, C_STACK, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 stack=ptr", N_SRV),
    R(K_SERVE_CB, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_SERVE_CB, C_SUCCESS, T_OTHER, "r1[eh:CommError after] r2[after] r3[] m0", N_SRV),
    R(K_SERVE_CB, C_ERROR, T_OTHER, "r1[eh:CommError after] r2[eh:ReErr after] r3[] m0", N_SRV),
    R(K_SERVE_CB, C_ADD, T_OTHER, "r1[eh:CommError after] r2[] r3[] m1", N_ADD),
    R(K_SERVE_CB, C_EXECUTE, T_OTHER, "r1[eh:CommError after] r2[] r3[] m1", N_EXEC),
    R(K_SERVE_CB, C_CANCEL, T_OTHER, "r1[eh:CommError after] r2[ch] r3[] m0", N_SRV),
    R(K_SERVE_CB, C_FREE, T_OTHER, "r1[eh:CommError after] r2[ch] r3[] m0", N_SRV),
    R(K_SERVE_CB, C_EXECUTE, T_IDLE, "r1[eh:CommError after] r2[] r3[run] m0", N_SRV),
    R(K_SERVE_CB, C_SYNC_IDLE, T_SYNC, "r1[eh:CommError after] r2[] r3[] m0 sync=OK", N_SRV),
    R(K_SERVE_CB, C_SYNC_HELD, T_SYNC, "r1[eh:CommError after] r2[] r3[] m0 sync=BUSY", N_SRV),
    R(K_SERVE_CB, C_LOOP_STOP, T_LOOP, "r1[eh:CommError after] r2[] r3[] m0 runs=1", N_SRV),
    R(K_SERVE_CB, C_UV_STOP, T_LOOP, "r1[eh:CommError after] r2[] r3[] m0 runs=2", N_SRV),
    /* accept */
    R(K_ACCEPT, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_ACCEPT, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_ACCEPT, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_ACCEPT, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_ACCEPT, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_ACCEPT, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_ACCEPT, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_ACCEPT, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_ACCEPT, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_ACCEPT, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_ACCEPT, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_ACCEPT, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_ACCEPT, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_ACCEPT, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_ACCEPT, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_ACCEPT, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_ACCEPT, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_ACCEPT, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_ACCEPT, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_ACCEPT, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* connect */
    R(K_CONNECT, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_CONNECT, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_CONNECT, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_CONNECT, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_CONNECT, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_CONNECT, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_CONNECT, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_CONNECT, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_CONNECT, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_CONNECT, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_CONNECT, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_CONNECT, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_CONNECT, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_CONNECT, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_CONNECT, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_CONNECT, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_CONNECT, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_CONNECT, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_CONNECT, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_CONNECT, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* read_line */
    R(K_READ_LINE, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_READ_LINE, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_READ_LINE, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_READ_LINE, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_READ_LINE, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_READ_LINE, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_READ_LINE, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_READ_LINE, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_READ_LINE, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_READ_LINE, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_READ_LINE, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_READ_LINE, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_READ_LINE, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_READ_LINE, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_READ_LINE, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_READ_LINE, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_READ_LINE, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_READ_LINE, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_READ_LINE, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_READ_LINE, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* read_exact */
    R(K_READ_EXACT, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_READ_EXACT, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_READ_EXACT, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_READ_EXACT, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_READ_EXACT, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_READ_EXACT, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_READ_EXACT, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_READ_EXACT, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_READ_EXACT, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_READ_EXACT, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_READ_EXACT, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_READ_EXACT, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_READ_EXACT, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_READ_EXACT, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_READ_EXACT, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_READ_EXACT, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_READ_EXACT, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_READ_EXACT, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_READ_EXACT, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_READ_EXACT, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* read_some */
    R(K_READ_SOME, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_READ_SOME, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_READ_SOME, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_READ_SOME, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_READ_SOME, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_READ_SOME, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_READ_SOME, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_READ_SOME, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_READ_SOME, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_READ_SOME, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_READ_SOME, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_READ_SOME, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_READ_SOME, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_READ_SOME, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_READ_SOME, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_READ_SOME, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_READ_SOME, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_READ_SOME, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_READ_SOME, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_READ_SOME, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* read_until */
    R(K_READ_UNTIL, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_READ_UNTIL, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_READ_UNTIL, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_READ_UNTIL, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_READ_UNTIL, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_READ_UNTIL, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_READ_UNTIL, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_READ_UNTIL, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_READ_UNTIL, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_READ_UNTIL, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_READ_UNTIL, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_READ_UNTIL, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_READ_UNTIL, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_READ_UNTIL, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_READ_UNTIL, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_READ_UNTIL, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_READ_UNTIL, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_READ_UNTIL, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_READ_UNTIL, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_READ_UNTIL, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* write */
    R(K_WRITE, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_WRITE, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_WRITE, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_WRITE, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_WRITE, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_WRITE, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_WRITE, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_WRITE, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_WRITE, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_WRITE, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_WRITE, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_WRITE, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_WRITE, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_WRITE, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_WRITE, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_WRITE, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_WRITE, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_WRITE, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_WRITE, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_WRITE, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* close */
    R(K_CLOSE, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_CLOSE, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_CLOSE, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_CLOSE, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_CLOSE, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_CLOSE, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_CLOSE, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_CLOSE, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_CLOSE, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_CLOSE, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_CLOSE, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_CLOSE, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_CLOSE, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_CLOSE, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_CLOSE, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_CLOSE, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_CLOSE, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_CLOSE, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_CLOSE, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_CLOSE, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* resolve */
    R(K_RESOLVE, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_RESOLVE, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_RESOLVE, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_RESOLVE, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_RESOLVE, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_RESOLVE, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_RESOLVE, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_RESOLVE, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_RESOLVE, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_RESOLVE, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_RESOLVE, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_RESOLVE, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_RESOLVE, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_RESOLVE, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_RESOLVE, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_RESOLVE, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_RESOLVE, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_RESOLVE, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_RESOLVE, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_RESOLVE, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* file_read */
    R(K_FILE_READ, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_FILE_READ, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_FILE_READ, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_FILE_READ, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_FILE_READ, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FILE_READ, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FILE_READ, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_FILE_READ, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_FILE_READ, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_FILE_READ, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_FILE_READ, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_FILE_READ, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_FILE_READ, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_FILE_READ, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FILE_READ, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FILE_READ, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_FILE_READ, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_FILE_READ, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_FILE_READ, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_FILE_READ, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* file_write */
    R(K_FILE_WRITE, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_FILE_WRITE, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_FILE_WRITE, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_FILE_WRITE, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_FILE_WRITE, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FILE_WRITE, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FILE_WRITE, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_FILE_WRITE, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_FILE_WRITE, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_FILE_WRITE, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_FILE_WRITE, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_FILE_WRITE, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_FILE_WRITE, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_FILE_WRITE, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FILE_WRITE, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FILE_WRITE, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_FILE_WRITE, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_FILE_WRITE, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_FILE_WRITE, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_FILE_WRITE, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* sleep */
    R(K_SLEEP, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_SLEEP, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_SLEEP, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_SLEEP, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_SLEEP, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_SLEEP, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_SLEEP, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_SLEEP, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_SLEEP, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_SLEEP, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_SLEEP, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_SLEEP, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_SLEEP, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_SLEEP, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_SLEEP, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_SLEEP, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_SLEEP, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_SLEEP, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_SLEEP, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_SLEEP, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* listen */
    R(K_LISTEN, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_LISTEN, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_LISTEN, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_LISTEN, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_LISTEN, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_LISTEN, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_LISTEN, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_LISTEN, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_LISTEN, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_LISTEN, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_LISTEN, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_LISTEN, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_LISTEN, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_LISTEN, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_LISTEN, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_LISTEN, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_LISTEN, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_LISTEN, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_LISTEN, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_LISTEN, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* eh_eof */
    R(K_EH_EOF, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_EH_EOF, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_EH_EOF, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_EH_EOF, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_EH_EOF, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_EOF, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_EOF, C_STATE, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 state=ptr", N_EOF),
    R(K_EH_EOF, C_STACK, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 stack=ptr", N_EOF),
    R(K_EH_EOF, C_SET_TIMEOUT, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EH),
    R(K_EH_EOF, C_SUCCESS, T_OTHER, "r1[eh:CommError after] r2[after] r3[] m0", N_EOF),
    R(K_EH_EOF, C_ERROR, T_OTHER, "r1[eh:CommError after] r2[eh:ReErr after] r3[] m0", N_EOF),
    R(K_EH_EOF, C_ADD, T_OTHER, "r1[eh:CommError after] r2[] r3[] m1", N_ADD),
    R(K_EH_EOF, C_EXECUTE, T_OTHER, "r1[eh:CommError after] r2[] r3[] m1", N_EXEC),
    R(K_EH_EOF, C_CANCEL, T_OTHER, "r1[eh:CommError after] r2[ch] r3[] m0", N_EOF),
    R(K_EH_EOF, C_FREE, T_OTHER, "r1[eh:CommError after] r2[ch] r3[] m0", N_EOF),
    R(K_EH_EOF, C_EXECUTE, T_IDLE, "r1[eh:CommError after] r2[] r3[run] m0", N_EOF),
    R(K_EH_EOF, C_SYNC_IDLE, T_SYNC, "r1[eh:CommError after] r2[] r3[] m0 sync=OK", N_EOF),
    R(K_EH_EOF, C_SYNC_HELD, T_SYNC, "r1[eh:CommError after] r2[] r3[] m0 sync=BUSY", N_EOF),
    R(K_EH_EOF, C_LOOP_STOP, T_LOOP, "r1[eh:CommError after] r2[] r3[] m0 runs=1", N_EOF),
    R(K_EH_EOF, C_UV_STOP, T_LOOP, "r1[eh:CommError after] r2[] r3[] m0 runs=2", N_EOF),
    /* eh_refused */
    R(K_EH_REFUSED, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_EH_REFUSED, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_EH_REFUSED, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_EH_REFUSED, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_EH_REFUSED, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_REFUSED, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_REFUSED, C_STATE, T_SAME, "r1[eh:ConnectError after] r2[] r3[] m0 state=ptr", N_REF),
    R(K_EH_REFUSED, C_STACK, T_SAME, "r1[eh:ConnectError after] r2[] r3[] m0 stack=ptr", N_REF),
    R(K_EH_REFUSED, C_SET_TIMEOUT, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EH),
    R(K_EH_REFUSED, C_SUCCESS, T_OTHER, "r1[eh:ConnectError after] r2[after] r3[] m0", N_REF),
    R(K_EH_REFUSED, C_ERROR, T_OTHER, "r1[eh:ConnectError after] r2[eh:ReErr after] r3[] m0",
            N_REF),
    R(K_EH_REFUSED, C_ADD, T_OTHER, "r1[eh:ConnectError after] r2[] r3[] m1", N_ADD),
    R(K_EH_REFUSED, C_EXECUTE, T_OTHER, "r1[eh:ConnectError after] r2[] r3[] m1", N_EXEC),
    R(K_EH_REFUSED, C_CANCEL, T_OTHER, "r1[eh:ConnectError after] r2[ch] r3[] m0", N_REF),
    R(K_EH_REFUSED, C_FREE, T_OTHER, "r1[eh:ConnectError after] r2[ch] r3[] m0", N_REF),
    R(K_EH_REFUSED, C_EXECUTE, T_IDLE, "r1[eh:ConnectError after] r2[] r3[run] m0", N_REF),
    R(K_EH_REFUSED, C_SYNC_IDLE, T_SYNC, "r1[eh:ConnectError after] r2[] r3[] m0 sync=OK", N_REF),
    R(K_EH_REFUSED, C_SYNC_HELD, T_SYNC, "r1[eh:ConnectError after] r2[] r3[] m0 sync=BUSY", N_REF),
    R(K_EH_REFUSED, C_LOOP_STOP, T_LOOP, "r1[eh:ConnectError after] r2[] r3[] m0 runs=1", N_REF),
    R(K_EH_REFUSED, C_UV_STOP, T_LOOP, "r1[eh:ConnectError after] r2[] r3[] m0 runs=2", N_REF),
    /* udp_recv */
    R(K_UDP_RECV, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_UDP_RECV, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_UDP_RECV, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_UDP_RECV, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_UDP_RECV, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_UDP_RECV, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_UDP_RECV, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_UDP_RECV, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_UDP_RECV, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_UDP_RECV, C_AGAIN, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_UDP_RECV, C_CLOSE, T_SAME, "r1[after] r2[] r3[] m0 queued=0", NULL),
    R(K_UDP_RECV, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_UDP_RECV, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_UDP_RECV, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_UDP_RECV, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_UDP_RECV, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_UDP_RECV, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_UDP_RECV, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_UDP_RECV, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_UDP_RECV, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_UDP_RECV, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_UDP_RECV, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* udp_send */
    R(K_UDP_SEND, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_UDP_SEND, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_UDP_SEND, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_UDP_SEND, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_UDP_SEND, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_UDP_SEND, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_UDP_SEND, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_UDP_SEND, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_UDP_SEND, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_UDP_SEND, C_AGAIN, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_UDP_SEND, C_CLOSE, T_SAME, "r1[after] r2[] r3[] m0 queued=0", NULL),
    R(K_UDP_SEND, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_UDP_SEND, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_UDP_SEND, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_UDP_SEND, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_UDP_SEND, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_UDP_SEND, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_UDP_SEND, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_UDP_SEND, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_UDP_SEND, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_UDP_SEND, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_UDP_SEND, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* pipe_connect */
    R(K_PIPE_CONN, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_PIPE_CONN, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_PIPE_CONN, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_PIPE_CONN, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_PIPE_CONN, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_PIPE_CONN, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_PIPE_CONN, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_PIPE_CONN, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_PIPE_CONN, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_PIPE_CONN, C_AGAIN, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_PIPE_CONN, C_CLOSE, T_SAME, "r1[after] r2[] r3[] m0 open=0", NULL),
    R(K_PIPE_CONN, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_PIPE_CONN, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_PIPE_CONN, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_PIPE_CONN, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_PIPE_CONN, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_PIPE_CONN, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_PIPE_CONN, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_PIPE_CONN, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_PIPE_CONN, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_PIPE_CONN, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_PIPE_CONN, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* pipe_serve_cb */
    R(K_PIPE_SERVE, C_SUCCESS, T_SAME, "r1[eh:CommError after] r2[] r3[] m0", N_SRV),
    R(K_PIPE_SERVE, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_PIPE_SERVE, C_ADD, T_SAME, "r1[added eh:CommError after] r2[] r3[] m0", N_SRV),
    R(K_PIPE_SERVE, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_PIPE_SERVE, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_PIPE_SERVE, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_PIPE_SERVE, C_STATE, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 state=ptr", N_SRV),
    R(K_PIPE_SERVE, C_STACK, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 stack=ptr", N_SRV),
    R(K_PIPE_SERVE, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_PIPE_SERVE, C_CLOSE, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 open=0", N_SRV),
    R(K_PIPE_SERVE, C_SUCCESS, T_OTHER, "r1[eh:CommError after] r2[after] r3[] m0", N_SRV),
    R(K_PIPE_SERVE, C_ERROR, T_OTHER, "r1[eh:CommError after] r2[eh:ReErr after] r3[] m0", N_SRV),
    R(K_PIPE_SERVE, C_ADD, T_OTHER, "r1[eh:CommError after] r2[] r3[] m1", N_ADD),
    R(K_PIPE_SERVE, C_EXECUTE, T_OTHER, "r1[eh:CommError after] r2[] r3[] m1", N_EXEC),
    R(K_PIPE_SERVE, C_CANCEL, T_OTHER, "r1[eh:CommError after] r2[ch] r3[] m0", N_SRV),
    R(K_PIPE_SERVE, C_FREE, T_OTHER, "r1[eh:CommError after] r2[ch] r3[] m0", N_SRV),
    R(K_PIPE_SERVE, C_EXECUTE, T_IDLE, "r1[eh:CommError after] r2[] r3[run] m0", N_SRV),
    R(K_PIPE_SERVE, C_SYNC_IDLE, T_SYNC, "r1[eh:CommError after] r2[] r3[] m0 sync=OK", N_SRV),
    R(K_PIPE_SERVE, C_SYNC_HELD, T_SYNC, "r1[eh:CommError after] r2[] r3[] m0 sync=BUSY", N_SRV),
    R(K_PIPE_SERVE, C_LOOP_STOP, T_LOOP, "r1[eh:CommError after] r2[] r3[] m0 runs=1", N_SRV),
    R(K_PIPE_SERVE, C_UV_STOP, T_LOOP, "r1[eh:CommError after] r2[] r3[] m0 runs=2", N_SRV),
    /* process_wait */
    R(K_PROC_WAIT, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_PROC_WAIT, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_PROC_WAIT, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_PROC_WAIT, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_PROC_WAIT, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_PROC_WAIT, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_PROC_WAIT, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_PROC_WAIT, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_PROC_WAIT, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_PROC_WAIT, C_AGAIN, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_PROC_WAIT, C_CLOSE, T_SAME, "r1[after] r2[] r3[] m0 kill=ESRCH", NULL),
    R(K_PROC_WAIT, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_PROC_WAIT, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_PROC_WAIT, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_PROC_WAIT, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_PROC_WAIT, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_PROC_WAIT, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_PROC_WAIT, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_PROC_WAIT, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_PROC_WAIT, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_PROC_WAIT, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_PROC_WAIT, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* file_open */
    R(K_FOPEN, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_FOPEN, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_FOPEN, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_FOPEN, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_FOPEN, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FOPEN, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FOPEN, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_FOPEN, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_FOPEN, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_FOPEN, C_AGAIN, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_FOPEN, C_CLOSE, T_SAME, "r1[after] r2[] r3[] m0 open=1", NULL),
    R(K_FOPEN, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_FOPEN, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_FOPEN, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_FOPEN, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_FOPEN, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FOPEN, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FOPEN, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_FOPEN, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_FOPEN, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_FOPEN, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_FOPEN, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* file_pread */
    R(K_FPREAD, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_FPREAD, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_FPREAD, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_FPREAD, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_FPREAD, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FPREAD, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FPREAD, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_FPREAD, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_FPREAD, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_FPREAD, C_AGAIN, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_FPREAD, C_CLOSE, T_SAME, "r1[after] r2[] r3[] m0 open=1", NULL),
    R(K_FPREAD, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_FPREAD, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_FPREAD, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_FPREAD, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_FPREAD, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FPREAD, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FPREAD, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_FPREAD, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_FPREAD, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_FPREAD, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_FPREAD, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* file_pwrite */
    R(K_FPWRITE, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_FPWRITE, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_FPWRITE, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_FPWRITE, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_FPWRITE, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FPWRITE, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FPWRITE, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_FPWRITE, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_FPWRITE, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_FPWRITE, C_AGAIN, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_FPWRITE, C_CLOSE, T_SAME, "r1[after] r2[] r3[] m0 open=1", NULL),
    R(K_FPWRITE, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_FPWRITE, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_FPWRITE, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_FPWRITE, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_FPWRITE, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FPWRITE, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FPWRITE, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_FPWRITE, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_FPWRITE, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_FPWRITE, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_FPWRITE, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* file_fstat */
    R(K_FFSTAT, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_FFSTAT, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_FFSTAT, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_FFSTAT, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_FFSTAT, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FFSTAT, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FFSTAT, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_FFSTAT, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_FFSTAT, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_FFSTAT, C_AGAIN, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_FFSTAT, C_CLOSE, T_SAME, "r1[after] r2[] r3[] m0 open=1", NULL),
    R(K_FFSTAT, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_FFSTAT, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_FFSTAT, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_FFSTAT, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_FFSTAT, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FFSTAT, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FFSTAT, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_FFSTAT, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_FFSTAT, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_FFSTAT, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_FFSTAT, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* file_close */
    R(K_FCLOSE, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_FCLOSE, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_FCLOSE, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_FCLOSE, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_FCLOSE, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FCLOSE, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_FCLOSE, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_FCLOSE, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_FCLOSE, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_FCLOSE, C_AGAIN, T_SAME, "r1[eh:CommError after] r2[] r3[] m0", N_CLOSED),
    R(K_FCLOSE, C_CLOSE, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 open=0", N_CLOSED),
    R(K_FCLOSE, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_FCLOSE, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_FCLOSE, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_FCLOSE, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_FCLOSE, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FCLOSE, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_FCLOSE, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_FCLOSE, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_FCLOSE, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_FCLOSE, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_FCLOSE, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* readdir */
    R(K_READDIR, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_READDIR, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_READDIR, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_READDIR, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_READDIR, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_READDIR, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_READDIR, C_STATE, T_SAME, "r1[after] r2[] r3[] m0 state=ptr", NULL),
    R(K_READDIR, C_STACK, T_SAME, "r1[after] r2[] r3[] m0 stack=ptr", NULL),
    R(K_READDIR, C_SET_TIMEOUT, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0", NULL),
    R(K_READDIR, C_AGAIN, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_READDIR, C_SUCCESS, T_OTHER, "r1[after] r2[after] r3[] m0", NULL),
    R(K_READDIR, C_ERROR, T_OTHER, "r1[after] r2[eh:ReErr after] r3[] m0", NULL),
    R(K_READDIR, C_ADD, T_OTHER, "r1[after] r2[] r3[] m1", N_ADD),
    R(K_READDIR, C_EXECUTE, T_OTHER, "r1[after] r2[] r3[] m1", N_EXEC),
    R(K_READDIR, C_CANCEL, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_READDIR, C_FREE, T_OTHER, "r1[after] r2[ch] r3[] m0", NULL),
    R(K_READDIR, C_EXECUTE, T_IDLE, "r1[after] r2[] r3[run] m0", NULL),
    R(K_READDIR, C_SYNC_IDLE, T_SYNC, "r1[after] r2[] r3[] m0 sync=OK", NULL),
    R(K_READDIR, C_SYNC_HELD, T_SYNC, "r1[after] r2[] r3[] m0 sync=BUSY", NULL),
    R(K_READDIR, C_LOOP_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=1", NULL),
    R(K_READDIR, C_UV_STOP, T_LOOP, "r1[after] r2[] r3[] m0 runs=2", NULL),
    /* eh_pipe_enoent */
    R(K_EH_PIPE, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_EH_PIPE, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_EH_PIPE, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_EH_PIPE, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_EH_PIPE, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_PIPE, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_PIPE, C_STATE, T_SAME, "r1[eh:ConnectError after] r2[] r3[] m0 state=ptr", N_PIPE),
    R(K_EH_PIPE, C_STACK, T_SAME, "r1[eh:ConnectError after] r2[] r3[] m0 stack=ptr", N_PIPE),
    R(K_EH_PIPE, C_SET_TIMEOUT, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EH),
    R(K_EH_PIPE, C_SUCCESS, T_OTHER, "r1[eh:ConnectError after] r2[after] r3[] m0", N_PIPE),
    R(K_EH_PIPE, C_ERROR, T_OTHER, "r1[eh:ConnectError after] r2[eh:ReErr after] r3[] m0", N_PIPE),
    R(K_EH_PIPE, C_ADD, T_OTHER, "r1[eh:ConnectError after] r2[] r3[] m1", N_ADD),
    R(K_EH_PIPE, C_EXECUTE, T_OTHER, "r1[eh:ConnectError after] r2[] r3[] m1", N_EXEC),
    R(K_EH_PIPE, C_CANCEL, T_OTHER, "r1[eh:ConnectError after] r2[ch] r3[] m0", N_PIPE),
    R(K_EH_PIPE, C_FREE, T_OTHER, "r1[eh:ConnectError after] r2[ch] r3[] m0", N_PIPE),
    R(K_EH_PIPE, C_EXECUTE, T_IDLE, "r1[eh:ConnectError after] r2[] r3[run] m0", N_PIPE),
    R(K_EH_PIPE, C_SYNC_IDLE, T_SYNC, "r1[eh:ConnectError after] r2[] r3[] m0 sync=OK", N_PIPE),
    R(K_EH_PIPE, C_SYNC_HELD, T_SYNC, "r1[eh:ConnectError after] r2[] r3[] m0 sync=BUSY", N_PIPE),
    R(K_EH_PIPE, C_LOOP_STOP, T_LOOP, "r1[eh:ConnectError after] r2[] r3[] m0 runs=1", N_PIPE),
    R(K_EH_PIPE, C_UV_STOP, T_LOOP, "r1[eh:ConnectError after] r2[] r3[] m0 runs=2", N_PIPE),
    /* eh_open_enoent */
    R(K_EH_FOPEN, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_EH_FOPEN, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_EH_FOPEN, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_EH_FOPEN, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_EH_FOPEN, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_FOPEN, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_FOPEN, C_STATE, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 state=ptr", N_OPEN),
    R(K_EH_FOPEN, C_STACK, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 stack=ptr", N_OPEN),
    R(K_EH_FOPEN, C_SET_TIMEOUT, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EH),
    R(K_EH_FOPEN, C_SUCCESS, T_OTHER, "r1[eh:CommError after] r2[after] r3[] m0", N_OPEN),
    R(K_EH_FOPEN, C_ERROR, T_OTHER, "r1[eh:CommError after] r2[eh:ReErr after] r3[] m0", N_OPEN),
    R(K_EH_FOPEN, C_ADD, T_OTHER, "r1[eh:CommError after] r2[] r3[] m1", N_ADD),
    R(K_EH_FOPEN, C_EXECUTE, T_OTHER, "r1[eh:CommError after] r2[] r3[] m1", N_EXEC),
    R(K_EH_FOPEN, C_CANCEL, T_OTHER, "r1[eh:CommError after] r2[ch] r3[] m0", N_OPEN),
    R(K_EH_FOPEN, C_FREE, T_OTHER, "r1[eh:CommError after] r2[ch] r3[] m0", N_OPEN),
    R(K_EH_FOPEN, C_EXECUTE, T_IDLE, "r1[eh:CommError after] r2[] r3[run] m0", N_OPEN),
    R(K_EH_FOPEN, C_SYNC_IDLE, T_SYNC, "r1[eh:CommError after] r2[] r3[] m0 sync=OK", N_OPEN),
    R(K_EH_FOPEN, C_SYNC_HELD, T_SYNC, "r1[eh:CommError after] r2[] r3[] m0 sync=BUSY", N_OPEN),
    R(K_EH_FOPEN, C_LOOP_STOP, T_LOOP, "r1[eh:CommError after] r2[] r3[] m0 runs=1", N_OPEN),
    R(K_EH_FOPEN, C_UV_STOP, T_LOOP, "r1[eh:CommError after] r2[] r3[] m0 runs=2", N_OPEN),
    /* eh_wait_timeout */
    R(K_EH_WAIT_TO, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_EH_WAIT_TO, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_EH_WAIT_TO, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_EH_WAIT_TO, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_EH_WAIT_TO, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_WAIT_TO, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_WAIT_TO, C_STATE, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0 state=ptr", N_WAIT),
    R(K_EH_WAIT_TO, C_STACK, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0 stack=ptr", N_WAIT),
    R(K_EH_WAIT_TO, C_SET_TIMEOUT, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EH),
    R(K_EH_WAIT_TO, C_AGAIN, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_EH_WAIT_TO, C_CLOSE, T_SAME, "r1[eh:Timeout after] r2[] r3[] m0 kill=0|ESRCH", N_WAIT),
    R(K_EH_WAIT_TO, C_SUCCESS, T_OTHER, "r1[eh:Timeout after] r2[after] r3[] m0", N_WAIT),
    R(K_EH_WAIT_TO, C_ERROR, T_OTHER, "r1[eh:Timeout after] r2[eh:ReErr after] r3[] m0", N_WAIT),
    R(K_EH_WAIT_TO, C_ADD, T_OTHER, "r1[eh:Timeout after] r2[] r3[] m1", N_ADD),
    R(K_EH_WAIT_TO, C_EXECUTE, T_OTHER, "r1[eh:Timeout after] r2[] r3[] m1", N_EXEC),
    R(K_EH_WAIT_TO, C_CANCEL, T_OTHER, "r1[eh:Timeout after] r2[ch] r3[] m0", N_WAIT),
    R(K_EH_WAIT_TO, C_FREE, T_OTHER, "r1[eh:Timeout after] r2[ch] r3[] m0", N_WAIT),
    R(K_EH_WAIT_TO, C_EXECUTE, T_IDLE, "r1[eh:Timeout after] r2[] r3[run] m0", N_WAIT),
    R(K_EH_WAIT_TO, C_SYNC_IDLE, T_SYNC, "r1[eh:Timeout after] r2[] r3[] m0 sync=OK", N_WAIT),
    R(K_EH_WAIT_TO, C_SYNC_HELD, T_SYNC, "r1[eh:Timeout after] r2[] r3[] m0 sync=BUSY", N_WAIT),
    R(K_EH_WAIT_TO, C_LOOP_STOP, T_LOOP, "r1[eh:Timeout after] r2[] r3[] m0 runs=1", N_WAIT),
    R(K_EH_WAIT_TO, C_UV_STOP, T_LOOP, "r1[eh:Timeout after] r2[] r3[] m0 runs=2", N_WAIT),
    /* eh_udp_closed */
    R(K_EH_UDP, C_SUCCESS, T_SAME, "r1[after] r2[] r3[] m0", NULL),
    R(K_EH_UDP, C_ERROR, T_SAME, "r1[eh:ReErr after] r2[] r3[] m0", N_INFO),
    R(K_EH_UDP, C_ADD, T_SAME, "r1[added after] r2[] r3[] m0", NULL),
    R(K_EH_UDP, C_EXECUTE, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EXEC),
    R(K_EH_UDP, C_CANCEL, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_UDP, C_FREE, T_SAME, "r1[] r2[] r3[] m0", NULL),
    R(K_EH_UDP, C_STATE, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 state=ptr", N_UDPC),
    R(K_EH_UDP, C_STACK, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 stack=ptr", N_UDPC),
    R(K_EH_UDP, C_SET_TIMEOUT, T_SAME, "r1[eh:InternalError after] r2[] r3[] m0", N_EH),
    R(K_EH_UDP, C_AGAIN, T_SAME, "r1[eh:CommError after] r2[] r3[] m0", N_UDPC),
    R(K_EH_UDP, C_CLOSE, T_SAME, "r1[eh:CommError after] r2[] r3[] m0 queued=0", N_UDPC),
    R(K_EH_UDP, C_SUCCESS, T_OTHER, "r1[eh:CommError after] r2[after] r3[] m0", N_UDPC),
    R(K_EH_UDP, C_ERROR, T_OTHER, "r1[eh:CommError after] r2[eh:ReErr after] r3[] m0", N_UDPC),
    R(K_EH_UDP, C_ADD, T_OTHER, "r1[eh:CommError after] r2[] r3[] m1", N_ADD),
    R(K_EH_UDP, C_EXECUTE, T_OTHER, "r1[eh:CommError after] r2[] r3[] m1", N_EXEC),
    R(K_EH_UDP, C_CANCEL, T_OTHER, "r1[eh:CommError after] r2[ch] r3[] m0", N_UDPC),
    R(K_EH_UDP, C_FREE, T_OTHER, "r1[eh:CommError after] r2[ch] r3[] m0", N_UDPC),
    R(K_EH_UDP, C_EXECUTE, T_IDLE, "r1[eh:CommError after] r2[] r3[run] m0", N_UDPC),
    R(K_EH_UDP, C_SYNC_IDLE, T_SYNC, "r1[eh:CommError after] r2[] r3[] m0 sync=OK", N_UDPC),
    R(K_EH_UDP, C_SYNC_HELD, T_SYNC, "r1[eh:CommError after] r2[] r3[] m0 sync=BUSY", N_UDPC),
    R(K_EH_UDP, C_LOOP_STOP, T_LOOP, "r1[eh:CommError after] r2[] r3[] m0 runs=1", N_UDPC),
    R(K_EH_UDP, C_UV_STOP, T_LOOP, "r1[eh:CommError after] r2[] r3[] m0 runs=2", N_UDPC),
};

static int setup_files(void** state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    snprintf(g_dir, sizeof(g_dir), "/tmp/futoin-uvre-XXXXXX");
    if (!mkdtemp(g_dir)) {
        return -1;
    }
    snprintf(g_path_r, sizeof(g_path_r), "%s/r", g_dir);
    snprintf(g_path_w, sizeof(g_path_w), "%s/w", g_dir);
    snprintf(g_sock_l, sizeof(g_sock_l), "%s/l.sock", g_dir);
    snprintf(g_sock_s, sizeof(g_sock_s), "%s/s.sock", g_dir);
    snprintf(g_missing, sizeof(g_missing), "%s/missing", g_dir);
    FILE* f = fopen(g_path_r, "w");
    if (!f) {
        return -1;
    }
    fputs("data\n", f);
    fclose(f);
    memset(g_big, 'b', sizeof(g_big));
    return 0;
}

static int teardown_files(void** state)
{
    (void)state;
    unlink(g_path_r);
    unlink(g_path_w);
    unlink(g_sock_l);
    unlink(g_sock_s);
    rmdir(g_dir);
    return 0;
}

static void test_matrix(void** state)
{
    (void)state;
    const char* only = getenv("UVRE_ONLY");
    const char* dump = getenv("UVRE_DUMP");
    const char* exact = getenv("UVRE_EXACT");
    const char* trace = getenv("UVRE_TRACE");
    int failures = 0;
    int ran = 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); ++i) {
        const Row* r = &rows[i];
        char name[96];
        row_name(r, name, sizeof(name));
        if (only && *only && !strstr(name, only)) {
            continue;
        }
        if (exact && *exact && strcmp(name, exact) != 0) {
            continue;
        }
        char sig[1024];
        char why[2560];
        if (trace && *trace) {
            fprintf(stderr, "ROW %s\n", name); /* names the row a crash is in */
        }
        const char* err = run_row(r, sig, sizeof(sig), why, sizeof(why));
        ++ran;
        if (dump && *dump) {
            printf("DUMP|%s|%s|%s|msg=%s|info=%s|drained=%zu\n", name, sig, err ? err : "",
                    g_last_msg, g_last_info, g_last_drained);
        }
        if (!err && strcmp(sig, r->expect) != 0) {
            snprintf(why, sizeof(why), "observed '%s', documented '%s'", sig, r->expect);
            err = why;
        }
        if (err) {
            ++failures;
            fprintf(stderr, "FAIL %-36s %s\n", name, err);
        }
    }
    printf("uv re-entry matrix: %d rows, %d failed\n", ran, failures);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix),
    };
    return cmocka_run_group_tests(tests, setup_files, teardown_files);
}
