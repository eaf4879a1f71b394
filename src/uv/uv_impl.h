/* SPDX-License-Identifier: MIT */
/* Private data model of the libuv backend (futoin_asyncsteps_uv). */
#ifndef FUTOIN_UV_IMPL_H
#define FUTOIN_UV_IMPL_H

#include <futoin/uv.h>

#include <limits.h>
#include <stdatomic.h>
#include <sys/un.h>

/* Internal to the library: futoin__uv_* stays out of the shared object's
 * symbol table (scripts/check-abi.sh checks it). */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* Tells a FutoInUv apart from other data registered as loop wakeup data. */
#define FUTOIN_UV_MAGIC 0x46557631u

struct FutoInUv {
    uint32_t magic;
    FutoInLoop* loop;
    uv_loop_t* uv;
    uv_loop_t own_loop;
    uv_timer_t timer;
    uv_idle_t idle;
    uv_check_t check;
    /* Sent by the loop's wake-up callback (futoin_loop_set_wakeup) when
     * another thread queues work for the AsyncTool. */
    uv_async_t xasync;
    /* uv_now() value the timer is armed for, 0 when it is stopped: lets
     * re-arming to the same deadline skip libuv's timer heap. */
    uint64_t timer_due;
    int open_handles; /* of timer/idle/check/xasync, until their close callbacks */
    uint8_t owns_uv;
    uint8_t in_pump;
    uint8_t idle_on;
    uint8_t running; /* futoin_uv_run() is on the stack */
    /* Child processes whose exit libuv has not reported (uv_process.c). */
    FutoInUvProcess* procs;
};

enum FutoInUvReadMode { RD_NONE = 0, RD_LINE, RD_UNTIL, RD_EXACT, RD_SOME, RD_WAITDATA };

struct FutoInUvBudget {
    _Atomic size_t used;
    size_t limit;
    _Atomic unsigned long refusals;
    _Atomic uint32_t refs;
};

typedef struct FutoInUvTlsConn FutoInUvTlsConn;

struct FutoInUvStream {
    /* A TCP connection or a local one (a Unix socket, a pipe): both are
     * uv_stream_t underneath, which every read and write step uses. The
     * handle's data points back here. */
    union {
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    };
    FutoInUv* uv;
    uint32_t refs;
    uint8_t is_pipe; /* pipe is the handle (peer is set when it is made) */
    uint8_t closing; /* uv_close() was called (or shutdown is in progress) */
    uint8_t closed;  /* the close callback ran: memory goes with the last ref */
    uint8_t reading; /* uv_read_start() is active */
    uint8_t eof;
    int read_error; /* sticky libuv error of the read side, 0 if none */
    /* Receive buffer: unread bytes are buf[off, len). */
    char* buf;
    size_t off;
    size_t len;
    size_t cap;
    size_t scanned;    /* bytes after off already searched for the delimiter */
    size_t read_ahead; /* keep reading without a read step up to this many bytes */
    /* Input budget: cap beyond FUTOIN_UV_BUDGET_FREE_BYTES is charged. */
    FutoInUvBudget* budget;
    size_t charged;
    uint8_t budget_blocked; /* on_alloc refused to grow for the budget */
    uint8_t alloc_failed;   /* on_alloc could not grow the buffer */
    /* "host:port" of the peer for wait descriptions ("read 10.0.0.1:80"):
     * the connect target, or the accepted peer's address on first use. */
    char peer[112];
    /* The pending read step (one at a time). rd_delim points into that
     * step's parameters, which live as long as the step. */
    FutoInAsyncSteps* rd_as;
    const char* rd_delim;
    size_t rd_dlen;
    size_t rd_n; /* EXACT: byte count; LINE/UNTIL/SOME: maximum */
    uint8_t rd_mode;
    /* The pending close step, completed by the close callback. */
    FutoInAsyncSteps* close_as;
    uv_shutdown_t shutdown_req;
    /* TLS over the stream (uv_tls.c), NULL for plain bytes: the stream's
     * reads then go to OpenSSL, and buf holds the decrypted text. */
    FutoInUvTlsConn* tls;
};

struct FutoInUvServer {
    union {
        uv_tcp_t tcp;
        uv_pipe_t pipe; /* a Unix socket server: is_pipe */
    };
    FutoInUv* uv;
    uint32_t refs;
    uint8_t closing;
    uint8_t closed;
    uint8_t is_pipe;
    unsigned pending; /* connections reported by libuv, not yet accepted */
    int error;        /* a listen error not yet reported to an accept step */
    unsigned port;
    char name[112];           /* "host:port" or the path it listens on */
    FutoInAsyncSteps* acc_as; /* the pending accept step */
    /* The listening socket it shares with other servers of the process
     * (FUTOIN_UV_SERVER_REUSEPORT where the kernel does not balance, in
     * uv_server.c), released when its handle is closed; else NULL. */
    void* share;
};

/* uv_loop.c */
FutoInUv* futoin__uv_require(FutoInAsyncSteps* as, const char* what);

/* Raises error(code, info) on as and notes err beside it for
 * futoin_uv_errno() (uv_errno.c). Every error of the backend goes through
 * it or futoin__uv_note_error(). */
void futoin__uv_error(FutoInAsyncSteps* as, const char* code, int err, const char* info);
/* Notes err as the number of the error (code, info) just raised on as,
 * if it took: a failure path only, nothing is kept for a success. */
void futoin__uv_note_error(FutoInAsyncSteps* as, const char* code, int err, const char* info);
/* For how many flows around a failing branch (the flows of the parallel
 * steps it is nested in, innermost first) an error's number is kept,
 * beside the failing flow itself. */
#define FUTOIN_UV_ERRNO_LEVELS 32

/* Fails the step (inside its callback or from a libuv callback) with code
 * and the info "<uv_err_name(err)>: <what>". */
void futoin__uv_fail(FutoInAsyncSteps* as, const char* code, int err, const char* what);
/* The same for a step parked with futoin_wait_owned(as, ch, key): from a
 * libuv callback it ends only that wait (a late callback of a step that
 * is gone changes nothing); inside the step's callback it is error(). */
void futoin__uv_fail_owned(FutoInAsyncSteps* as, const void* key, const char* code, int err,
        const char* what);
void futoin__uv_failf_owned(FutoInAsyncSteps* as, const void* key, const char* code, int err,
        const char* fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 5, 6)))
#endif
        ;
/* Same with a printf-style context. */
void futoin__uv_failf(FutoInAsyncSteps* as, const char* code, int err, const char* fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 4, 5)))
#endif
        ;

/* Adds step f whose data is a zeroed parameter block of size bytes that
 * lives in the current step's stack (freed with it, cleanup first). If the
 * block cannot be allocated an InternalError step is added instead and
 * NULL is returned. */
void* futoin__uv_add_step(FutoInAsyncSteps* as, FutoInAsyncSteps_execute_callback f, size_t size,
        void (*cleanup)(void*), const char* what);

/* futoin_set_wait_info(as, "<op> <object>"), formatted without a heap copy
 * of its own. */
void futoin__uv_wait_info(FutoInAsyncSteps* as, const char* op, const char* object);

/* Adds a step that fails with InternalError and info what (a literal). */
void futoin__uv_add_fail(FutoInAsyncSteps* as, const char* what);
/* Same with a printf-style info, copied into the current step's stack (an
 * argument out of range: "EINVAL: <function>: <parameter> <value> ..."). */
void futoin__uv_add_failf(FutoInAsyncSteps* as, const char* fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;

/* A heap copy of n bytes plus a NUL as a step result of the given type
 * (FTN_TYPE_STRING or FTN_TYPE_UINT8 | FTN_TYPE_ARRAY), freed by its
 * cleanup; type NULL if out of memory. */
FutoInBinaryValue futoin__uv_bytes_value(const char* data, size_t n, int as_string);
/* Takes ownership of a malloc()ed buffer of n bytes followed by a NUL. */
FutoInBinaryValue futoin__uv_bytes_adopt(char* data, size_t n, int as_string);

/* ---- signals: uv_signal.c ---- */

/* The largest signal number futoin_uv_signal_wait() accepts (Linux has
 * 64; libuv refuses what the platform lacks when the step starts). */
#define FUTOIN_UV_SIGNAL_NUMBER_MAX 64

/* ---- child processes: uv_process.c ---- */

/* futoin_uv_free(): kills (SIGKILL) and reaps every child still running
 * and closes the handles of every process of uv; returns how many of them
 * the caller still referenced. */
unsigned futoin__uv_process_shutdown(FutoInUv* uv);

/* ---- name lookups: uv_lookup.c ---- */

/* Receives a lookup's outcome on the loop thread: status 0 and res (the
 * callee frees it with uv_freeaddrinfo()), or a libuv error and NULL. */
typedef void (*FutoInUvLookupCb)(void* data, int status, struct addrinfo* res);
typedef struct FutoInUvLookup FutoInUvLookup;

/* Starts getaddrinfo(host, service, hints) (service may be NULL) on a
 * thread of its own, or on libuv's pool (see uv_lookup.c). Returns 0 and
 * the lookup in *out, whose callback runs exactly once unless it is
 * cancelled; or a libuv error, and the callback never runs. */
int futoin__uv_lookup(FutoInUv* uv, const char* host, const char* service,
        const struct addrinfo* hints, FutoInUvLookupCb cb, void* data, FutoInUvLookup** out);
/* The callback will not run; the lookup's memory is released when it
 * ends. Call it only before the callback (inside it, it does nothing). */
void futoin__uv_lookup_cancel(FutoInUvLookup* l);
/* Lookups running on threads of their own, of every loop of the process. */
unsigned futoin__uv_lookup_threads(void);
/* The most such threads at once; beyond, lookups use libuv's pool. */
extern _Atomic unsigned futoin__uv_lookup_threads_max;

/* ---- streams: uv_stream.c, uv_connect.c, uv_read.c, uv_write.c ---- */

#define FUTOIN_UV_DEFAULT_MAX_READ (64u << 10)
#define FUTOIN_UV_INITIAL_BUF 4096u
#define FUTOIN_UV_MIN_FREE 1024u
/* An exact read at least this large takes the receive buffer over when it
 * holds nothing else, instead of copying it. */
#define FUTOIN_UV_ADOPT_MIN 4096u
/* With no read step waiting, stop reading beyond this many buffered bytes:
 * a peer that sends faster than we consume is pushed back by TCP. */
#define FUTOIN_UV_HIGH_WATER (256u << 10)
/* The largest read or write: result values have 32-bit lengths and
 * uv_buf_init() takes an unsigned int. */
#define FUTOIN_UV_MAX_IO_LEN UINT32_MAX

_Static_assert(UINT_MAX >= UINT32_MAX, "uv_buf_init() lengths must hold FUTOIN_UV_MAX_IO_LEN");

/* Parameter blocks of steps that use a stream hold a reference to it
 * (released by futoin__uv_params_release(), their stack() cleanup). */
typedef struct {
    FutoInUvStream* s;
} StreamParams;

FutoInUvStream* futoin__uv_stream_alloc(FutoInUv* uv);
/* The longest path of a Unix socket, its NUL included (libuv would cut a
 * longer one short instead of refusing it). */
#define FUTOIN_UV_PIPE_PATH_MAX sizeof(((struct sockaddr_un*)0)->sun_path)
/* A stream on a uv_pipe_t (uv_pipe.c); peer names it in wait texts. */
FutoInUvStream* futoin__uv_pipe_alloc(FutoInUv* uv, const char* peer);
/* Initiates uv_close() (idempotent); pending steps fail with CommError. */
void futoin__uv_stream_close(FutoInUvStream* s);
/* uv_close() unless it was called already. */
void futoin__uv_stream_close_now(FutoInUvStream* s);
/* uv_read_stop() if the stream reads (uv_read.c). */
void futoin__uv_stream_stop_reading(FutoInUvStream* s);
/* Fails the pending read step, if any, with CommError err. */
void futoin__uv_stream_fail_reader(FutoInUvStream* s, int err, const char* what);
/* Moves the stream's budget charge to that of a buffer of cap bytes: 0, or
 * -1 (nothing changed) when the budget cannot cover a larger buffer. */
int futoin__uv_stream_charge(FutoInUvStream* s, size_t cap);
/* Frees the receive buffer (nothing buffered) and returns its charge. */
void futoin__uv_stream_drop_buffer(FutoInUvStream* s);
/* "host:port" of the peer ("(unknown peer)" while unknown). */
const char* futoin__uv_stream_peer(FutoInUvStream* s);
/* A NULL stream given to a step function: the added step fails instead. */
int futoin__uv_stream_ok(FutoInAsyncSteps* as, const char* fn, const FutoInUvStream* s);
void futoin__uv_params_release(void* p);
/* Room at the end of the receive buffer for more input, grown as reads
 * grow it: an empty buf when it cannot grow (budget_blocked or
 * alloc_failed set). uv_read.c */
void futoin__uv_stream_room(FutoInUvStream* s, uv_buf_t* buf);
/* uv_read_start() unless the stream reads: 0 or a libuv error. */
int futoin__uv_stream_start_reading(FutoInUvStream* s);
/* New input is in the buffer (or an end): serves the pending read step, or
 * stops reading beyond the read-ahead. uv_read.c */
void futoin__uv_stream_input_done(FutoInUvStream* s);

/* ---- TLS over a stream: uv_tls.c (stubs without FUTOIN_UV_TLS) ---- */

/* The stream's libuv callbacks when s->tls is set: the buffer for
 * ciphertext, and the ciphertext read (decrypted into the stream's buffer,
 * or handed to a pending handshake). */
void futoin__uv_tls_alloc(FutoInUvStream* s, uv_buf_t* buf);
void futoin__uv_tls_read(FutoInUvStream* s, ssize_t nread, const uv_buf_t* buf);
/* Decrypts what is pending into the buffer (a read step that starts). */
void futoin__uv_tls_pump(FutoInUvStream* s);
/* The body of a write step on a TLS stream: completes, fails or parks as. */
void futoin__uv_tls_write(FutoInAsyncSteps* as, FutoInUvStream* s, const char* data, size_t len);
/* futoin_uv_try_write() on a TLS stream. */
long futoin__uv_tls_try_write(FutoInUvStream* s, const char* data, size_t len);
/* Queues a close_notify alert (before uv_shutdown), once. */
void futoin__uv_tls_close_notify(FutoInUvStream* s);
/* The stream is being closed: a pending handshake fails. */
void futoin__uv_tls_closing(FutoInUvStream* s);
/* Frees the TLS state with the stream. */
void futoin__uv_tls_free(FutoInUvStream* s);
/* The reason of the stream's TLS failure (read_error UV_EPROTO). */
const char* futoin__uv_tls_reason(const FutoInUvStream* s);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
