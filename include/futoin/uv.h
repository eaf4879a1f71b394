/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief FutoIn AsyncSteps on libuv: real I/O as awaitable steps.
 *
 * Library futoin_asyncsteps_uv (optional: CMake option FUTOIN_WITH_UV, needs
 * libuv >= 1.x), shared (libfutoin_asyncsteps_uv.so.0, linking the shared
 * core) and static (with the core's static library). The core library does
 * not depend on it; it drives the core's loop through the embedding API of
 * <futoin/asynctool.h> only (futoin_loop_set_wakeup and friends).
 *
 * ---------------------------------------------------------------------------
 * The backend
 * ---------------------------------------------------------------------------
 * A FutoInUv couples one AsyncTool loop (FutoInLoop: immediates and a timer
 * heap) with one uv_loop_t. The FutoInLoop stays the scheduler of every
 * AsyncSteps root; libuv only wakes it up. A fixed set of libuv handles does
 * that, no matter how many steps or step timeouts exist:
 *   - one uv_timer_t, armed to the earliest AsyncTool timer;
 *   - one uv_idle_t, active while immediates are pending, so that libuv polls
 *     without blocking;
 *   - one uv_check_t (unreferenced), which runs one AsyncTool round right
 *     after libuv has polled for I/O, so that steps resumed by I/O callbacks
 *     run in the same libuv iteration;
 *   - one uv_async_t, sent by the AsyncTool's wake-up callback when another
 *     thread queues work for it, so that such work wakes libuv up;
 *     referenced only while the AsyncTool has holds or messages on their
 *     way (futoin_loop_hold()) and nothing scheduled.
 * Only these keep uv_run() alive, and only while the AsyncTool has work: a
 * step waiting for I/O is kept alive by its own libuv handle; a step waiting
 * for a foreign event is not, unless the loop is held (like any libuv
 * program).
 *
 * Standalone:
 *     FutoInUv* uv = futoin_uv_new(NULL);          // owns its uv_loop_t
 *     FutoInAsyncSteps* as = futoin_asyncsteps_new(futoin_uv_loop(uv));
 *     ... futoin_add(as, ...); futoin_execute(as, on_error, ctx);
 *     futoin_uv_run(uv);                           // uv_run(UV_RUN_DEFAULT)
 *     futoin_asyncsteps_free(as);
 *     futoin_uv_free(uv);
 *
 * Embedded in an existing libuv program:
 *     uv_loop_t* l = uv_default_loop();             // or your own loop
 *     FutoInUv* uv = futoin_uv_new(l);
 *     ... create roots on futoin_uv_loop(uv), execute them; keep using l for
 *         your own handles; run it as you always do (uv_run(l, ...)) ...
 *     // shutdown: free every root, release every stream/server, then
 *     futoin_uv_free(uv);                          // closes our handles
 *     uv_run(l, UV_RUN_DEFAULT);                   // lets their close
 *                                                  // callbacks free memory
 *     uv_loop_close(l);
 * Rules:
 *   - call everything on the loop's thread (other threads may only use the
 *     AsyncTool's cross-thread entry points, e.g. futoin_loop_immediate());
 *   - you may call success()/error() of a waiting step from your own libuv
 *     callbacks (the step resumes in the same libuv iteration);
 *   - do not call futoin_loop_run() or futoin_promise() on a backend's
 *     FutoInLoop (they would not poll libuv);
 *   - ignore SIGPIPE (signal(SIGPIPE, SIG_IGN)): libuv writes sockets with
 *     write(), and a peer that resets a connection must cost an EPIPE error
 *     (CommError), not the process;
 *   - with -std=c11 define _POSIX_C_SOURCE=200809L: <uv.h> needs POSIX types.
 *
 * ---------------------------------------------------------------------------
 * I/O steps
 * ---------------------------------------------------------------------------
 * Every futoin_uv_* function taking an `as` adds ONE step to `as` (call it
 * where futoin_add() is allowed: inside an execute callback or an error
 * handler, or on a root before execute()). The parameters are copied when the
 * step is added (into memory of the current step, freed with it), so
 * strings and buffers passed in need not outlive the call.
 *
 * When the step runs it starts the operation and waits; its result arrives
 * as the success arguments of the step (the next step's args). Values that
 * own memory have a cleanup that the engine runs after the receiving step's
 * callback returns: keep what you need by copying it or, for streams and
 * servers, by taking a reference (futoin_uv_stream_ref()).
 *
 * Timeouts and cancellation: these steps have no timeout of their own; call
 * futoin_set_timeout() in the step that adds them (it covers sub-steps). On
 * timeout, root cancel, a failing sibling branch or break/continue, the
 * step's cancel handler stops the libuv operation (uv_read_stop, uv_close,
 * uv_cancel, or it detaches from a write/filesystem request that libuv must
 * finish) and nothing reaches the step afterwards. Memory that libuv still
 * uses is released from libuv's own callbacks. What is left to finish never
 * holds futoin_uv_run() for long: file steps only touch regular files,
 * opened without blocking (futoin_uv_file_read()), and a name lookup that
 * is given up is let go at once (futoin_uv_resolve()).
 *
 * Errors (error code / error_info):
 *   ConnectError  connect, DNS resolution, listen/bind failures
 *   CommError     read, write, accept, close and file errors; end of stream
 *   Timeout       from an enclosing futoin_set_timeout()
 *   InternalError misuse (NULL arguments, not on a FutoInUv loop, ...)
 * error_info is "<uv_err_name>: <operation and context>", e.g.
 * "ECONNREFUSED: connect 127.0.0.1:1", "EOF: read: connection closed by
 * peer", "ENOENT: open /x".
 *
 * What a Timeout interrupted: every step that waits for libuv describes
 * its wait with futoin_set_wait_info(), so the error_info of a Timeout (of
 * the step or of any step around it) names the operation and its object:
 *   "connect example.org:80"   futoin_uv_tcp_connect() (host as given)
 *   "read 127.0.0.1:8080"      read steps, futoin_uv_read_wait()
 *   "write 10.0.0.1:5000"      a write the kernel did not take at once
 *   "shutdown 10.0.0.1:5000", "close 10.0.0.1:5000" (graceful close)
 *   "accept 0.0.0.0:8080"      futoin_uv_accept(), futoin_uv_serve()
 *   "resolve example.org"      futoin_uv_resolve()
 *   "file_read /path", "file_write /path"
 *   "sleep 100 ms"             futoin_uv_sleep()
 * The peer of a stream is futoin_uv_stream_peer(). A step that completes
 * without waiting describes nothing.
 *
 * NULL arguments: a NULL stream, server, host or path given to a step
 * function is refused like a range error (below): the added step fails with
 * InternalError "EINVAL: <function>: <parameter> is NULL", e.g.
 * "EINVAL: futoin_uv_read_line: s is NULL", "EINVAL: futoin_uv_accept: srv
 * is NULL", "EINVAL: futoin_uv_file_read: path is NULL" (no I/O, no
 * reference taken or dropped). A NULL as adds nothing. The plain functions
 * below document what they return for NULL.
 *
 * Ranges: a port, size or backlog outside the range given with each
 * function is refused before anything starts: the added step fails with
 * InternalError "EINVAL: <function>: <parameter> <value> out of range ..."
 * (no I/O, no reference taken, nothing copied).
 *
 * Errors: docs/ERRORS.md.
 */
#ifndef FUTOIN_UV_H
#define FUTOIN_UV_H

#include <futoin/asyncsteps.h>

/* <uv.h> uses POSIX types (pthread_rwlock_t, ...) that a strict ISO C mode
 * (-std=c11) hides unless a feature macro asks for them. */
#if defined(__unix__) && defined(__STRICT_ANSI__) && !defined(__cplusplus)                         \
        && !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE) && !defined(_GNU_SOURCE)           \
        && !defined(_DEFAULT_SOURCE)
#error "futoin/uv.h needs POSIX declarations: compile with -D_POSIX_C_SOURCE=200809L (or -std=gnu11)"
#endif

#include <uv.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A backend: one AsyncTool loop driven by one uv_loop_t (opaque). */
typedef struct FutoInUv FutoInUv;
/** A TCP connection, reference counted (opaque). */
typedef struct FutoInUvStream FutoInUvStream;
/** A listening TCP socket, reference counted (opaque). */
typedef struct FutoInUvServer FutoInUvServer;

/* ------------------------------------------------------------------------ */
/* Backend                                                                   */

/** A new backend on uv_loop (NULL: the backend creates and owns a loop).
 * Creates the FutoInLoop too. Returns NULL on failure. Out of memory: NULL
 * (libuv itself aborts when it cannot allocate some of its own structures:
 * its loop's watcher array, its thread pool).
 *
 * Out of memory in a step of this backend (connect, accept, read, write,
 * shutdown, close): the step fails with InternalError and an error_info that ends in
 * ": out of memory" (e.g. "ENOMEM: read: out of memory"), never with a
 * CommError or ConnectError. */
FutoInUv* futoin_uv_new(uv_loop_t* uv_loop);

/** Frees the backend and its FutoInLoop. Every AsyncSteps root of the loop
 * must be freed and every stream and server released before. With an owned
 * uv_loop_t, the loop is run until the handles are closed and then closed;
 * with a loop of yours, the memory is released from close callbacks: run
 * your loop once more before uv_loop_close(). An owned loop that still has
 * handles open (streams or servers not released, handles of yours) gets
 * them closed, with a FUTOIN_LOG_WARNING line "futoin_uv_free: libuv
 * handles still open (streams or servers not released)" to the log handler
 * (futoin_set_log_handler()); the memory of our objects among them is lost. */
void futoin_uv_free(FutoInUv* uv);

/** The AsyncTool loop to create roots on (NULL if uv is NULL). */
FutoInLoop* futoin_uv_loop(const FutoInUv* uv);
/** The libuv loop (NULL if uv is NULL). */
uv_loop_t* futoin_uv_uv_loop(const FutoInUv* uv);
/** The backend driving loop, or NULL if loop is not driven by a FutoInUv. */
FutoInUv* futoin_uv_of_loop(FutoInLoop* loop);
/** The backend behind an AsyncSteps interface of this library, or NULL. */
FutoInUv* futoin_uv_of(FutoInAsyncSteps* as);

/** uv_run(UV_RUN_DEFAULT): returns when neither libuv nor the AsyncTool have
 * anything left to do, or after uv_stop(). Returns uv_run()'s result, or
 * UV_EINVAL if uv is NULL, or UV_EBUSY (with a FUTOIN_LOG_MISUSE line to
 * the log handler, futoin_set_log_handler(); nothing run) when called from
 * inside a callback of that loop: a step, a handler
 * or a libuv callback while futoin_uv_run() or the AsyncTool's round runs
 * (libuv's loop is not reentrant). */
int futoin_uv_run(FutoInUv* uv);

/* ------------------------------------------------------------------------ */
/* Result values                                                             */

/** Type descriptor of stream values passed as step results; compare a
 * value's type pointer with it. Its cleanup drops one reference. */
extern const FutoInType futoin_uv_stream_type;
/** Type descriptor of server values, as futoin_uv_stream_type is of streams. */
extern const FutoInType futoin_uv_server_type;

/** Argument i as a stream / server (borrowed: valid during the callback),
 * or NULL if it is not one. */
FutoInUvStream* futoin_uv_arg_stream(const FutoInArgs* args, int i);
/** Argument i as a server (borrowed), or NULL: see futoin_uv_arg_stream(). */
FutoInUvServer* futoin_uv_arg_server(const FutoInArgs* args, int i);

/** Data read from a stream or a file: FTN_TYPE_STRING (lines, delimited
 * reads) or FTN_TYPE_UINT8 | FTN_TYPE_ARRAY (exact reads, files), both with
 * .length in bytes and a terminating NUL after the data (not counted), so
 * futoin_arg_cstr() works for text. Returns a borrowed pointer to argument
 * i's bytes and stores the length in *len (if not NULL); NULL (length 0) if
 * argument i is not such a value. */
const char* futoin_uv_arg_bytes(const FutoInArgs* args, int i, size_t* len);

/* ------------------------------------------------------------------------ */
/* TCP streams                                                               */

/** Reference counting: the result value of connect/accept holds one
 * reference, dropped when the receiving step returns; take your own to keep
 * the stream. Queued steps that use a stream hold one too. When the last
 * reference goes, the connection is closed (uv_close) and a pending read or
 * accept elsewhere fails with CommError "ECANCELED: closed"; memory is
 * released from libuv's close callback.
 * ref returns s (NULL for NULL); release of NULL does nothing. */
FutoInUvStream* futoin_uv_stream_ref(FutoInUvStream* s);
/** Drops one reference (see futoin_uv_stream_ref()); NULL does nothing. */
void futoin_uv_stream_release(FutoInUvStream* s);
/** The libuv handle, e.g. for uv_tcp_nodelay() or uv_tcp_getpeername();
 * NULL if s is NULL. */
uv_tcp_t* futoin_uv_stream_handle(FutoInUvStream* s);
/** Bytes received but not yet consumed by a read step (0 if s is NULL). */
size_t futoin_uv_stream_buffered(const FutoInUvStream* s);
/** Closes the stream now (uv_close) without waiting and without dropping a
 * reference: a pending read fails with CommError "ECANCELED: read: stream
 * closed", queued writes are dropped, later steps on it fail. NULL: does
 * nothing. */
void futoin_uv_stream_close(FutoInUvStream* s);
/** 0 once the stream is closed (by futoin_uv_close(), futoin_uv_stream_close()
 * or the last release), and for NULL. */
int futoin_uv_stream_is_open(const FutoInUvStream* s);

/**
 * @brief The peer of a stream as "host:port" ("[v6]:port" for IPv6).
 *
 * The host and port given to futoin_uv_tcp_connect(), or the address of an
 * accepted peer (looked up once, on first use). The same text names the
 * peer in the wait descriptions of the stream's steps.
 * @param s the stream
 * @return a string owned by the stream (valid while it lives); "" for NULL
 *         or when the peer is unknown (the connection is gone already)
 */
const char* futoin_uv_stream_peer(FutoInUvStream* s);

/**
 * @brief Shows the bytes received but not yet consumed by a read step.
 * @param s   the stream (NULL: returns NULL)
 * @param len receives the number of bytes (0 when there are none); may be NULL
 * @return a borrowed pointer to the buffered bytes, valid until the next read
 *         step on s starts or a libuv callback of s runs; NULL when nothing is
 *         buffered. Nothing is consumed: e.g. after a delimited read failed with
 *         ENOBUFS, look at what the peer sent to choose a status code.
 */
const char* futoin_uv_stream_peek(const FutoInUvStream* s, size_t* len);

/**
 * @brief Limits how much a stream reads ahead while no read step waits.
 *
 * Once a read step has started, a stream keeps reading between read steps
 * (toggling uv_read_start/stop per request would cost two system calls).
 * It stops when more than @p bytes are buffered, and a peer that sends faster
 * is pushed back by TCP. A pending read step always reads what it needs, up
 * to its own limit.
 * @param s     the stream (NULL: nothing happens)
 * @param bytes the read-ahead limit; the default is 256 KiB; 0 stops reading
 *              as soon as something is buffered and no read step waits
 */
void futoin_uv_stream_set_read_ahead(FutoInUvStream* s, size_t bytes);

/* ------------------------------------------------------------------------ */
/* Input budget: buffered input across streams, loops and threads           */

/**
 * @brief A byte budget shared by streams on any loops (thread-safe).
 *
 * A stream given a budget (futoin_uv_stream_set_budget()) charges the memory of
 * its receive buffer to it, except the first FUTOIN_UV_BUDGET_FREE_BYTES, which
 * every stream may use without asking (so a budget spent by a few large
 * inputs never stops a small request). When the budget cannot cover a larger
 * buffer, the stream stops reading: a pending read step fails with CommError
 * "ENOBUFS: read: input budget spent", and read-ahead pauses until the next
 * read step. A buffer emptied by a read step shrinks back and returns its
 * charge; a stream returns the rest when it is destroyed.
 * Applications may charge their own buffers with futoin_uv_budget_take() and
 * futoin_uv_budget_give().
 */
typedef struct FutoInUvBudget FutoInUvBudget;

/** Bytes of every stream's receive buffer that are never charged to a budget. */
#define FUTOIN_UV_BUDGET_FREE_BYTES 4096u

/**
 * @brief A new budget of @p limit bytes with one reference.
 * @param limit the most bytes charged at once (0: nothing beyond the free bytes)
 * @return the budget, or NULL when out of memory
 */
FutoInUvBudget* futoin_uv_budget_new(size_t limit);
/** @brief Takes a reference (any thread). @return b (NULL for NULL) */
FutoInUvBudget* futoin_uv_budget_ref(FutoInUvBudget* b);
/** @brief Drops a reference (any thread); the last one frees the budget. NULL: nothing. */
void futoin_uv_budget_release(FutoInUvBudget* b);
/**
 * @brief Charges @p n bytes if they fit (any thread).
 * @return 0 when charged, -1 when used + n would exceed the limit (counted as
 *         a refusal; nothing charged) or b is NULL
 */
int futoin_uv_budget_take(FutoInUvBudget* b, size_t n);
/** @brief Returns @p n bytes charged by futoin_uv_budget_take() (any thread). */
void futoin_uv_budget_give(FutoInUvBudget* b, size_t n);
/** @brief Bytes charged now (0 for NULL). */
size_t futoin_uv_budget_used(const FutoInUvBudget* b);
/** @brief The limit given to futoin_uv_budget_new() (0 for NULL). */
size_t futoin_uv_budget_limit(const FutoInUvBudget* b);
/** @brief How many charges were refused so far (0 for NULL). */
unsigned long futoin_uv_budget_refusals(const FutoInUvBudget* b);

/**
 * @brief Makes stream @p s charge its receive buffer to budget @p b.
 *
 * Call it before the first read step (e.g. in the connection callback of
 * futoin_uv_serve()); a charge already made moves to the new budget. The
 * stream holds a reference to @p b until it is destroyed.
 * @param s the stream (NULL: nothing happens)
 * @param b the budget, or NULL for none (the default)
 */
void futoin_uv_stream_set_budget(FutoInUvStream* s, FutoInUvBudget* b);

/** Step: connects to host:port. host is a numeric IPv4/IPv6 address or a
 * name (resolved like futoin_uv_resolve(), so a connect given up while it
 * resolves lets go of the lookup at once; each address is tried in turn);
 * not NULL. port: 1..65535. Success: arg0 = stream (futoin_uv_stream_type). Errors:
 * ConnectError. */
void futoin_uv_tcp_connect(FutoInAsyncSteps* as, const char* host, unsigned port);

/** Step: reads one line ending in "\n" (at most max_len bytes including the
 * terminator; 0: 64 KiB; max_len <= UINT32_MAX). Success: arg0 = the line as FTN_TYPE_STRING
 * without "\n" or "\r\n". Errors: CommError ("EOF: read: connection closed
 * by peer" when the peer closed before a full line, "ENOBUFS: read: line
 * longer than N bytes" when the line with its terminator would exceed
 * max_len, N being max_len or its default). */
void futoin_uv_read_line(FutoInAsyncSteps* as, FutoInUvStream* s, size_t max_len);

/** Step: reads up to and including the first occurrence of delim (at most
 * max_len bytes; 0: 64 KiB; max_len <= UINT32_MAX). Success: arg0 = FTN_TYPE_STRING including
 * delim. E.g. delim "\r\n\r\n" reads an HTTP head in one step. delim NULL
 * or "": "\n". Errors: like futoin_uv_read_line(), but the limit is
 * "ENOBUFS: read: delimiter not found within N bytes". */
void futoin_uv_read_until(FutoInAsyncSteps* as, FutoInUvStream* s, const char* delim,
        size_t max_len);

/** Step: reads exactly n bytes (0..UINT32_MAX). Success: arg0 =
 * FTN_TYPE_UINT8 | FTN_TYPE_ARRAY of n bytes. */
void futoin_uv_read_exact(FutoInAsyncSteps* as, FutoInUvStream* s, size_t n);

/**
 * @brief Step: waits until at least one byte is buffered, without consuming it.
 *
 * Succeeds with no result at once when something is buffered. Meant for an
 * idle timeout distinct from a read timeout: wait for the first byte of a
 * request under one futoin_set_timeout(), then read the rest under another.
 * Errors: like futoin_uv_read_some() (CommError "EOF: read: connection closed
 * by peer" when the peer closed with nothing buffered).
 * @param as the flow
 * @param s  the stream (not NULL)
 */
void futoin_uv_read_wait(FutoInAsyncSteps* as, FutoInUvStream* s);

/** Step: reads whatever is available, at least 1 and at most max bytes
 * (0: 64 KiB; max <= UINT32_MAX). Success: arg0 = FTN_TYPE_UINT8 | FTN_TYPE_ARRAY. */
void futoin_uv_read_some(FutoInAsyncSteps* as, FutoInUvStream* s, size_t max);

/** Step: writes len bytes (copied now; len 0..UINT32_MAX, data may be NULL
 * only with len 0). Succeeds with no result once libuv
 * has handed all bytes to the kernel (often at once, via uv_try_write).
 * A cancelled write may still be completed by libuv in the background. */
void futoin_uv_write(FutoInAsyncSteps* as, FutoInUvStream* s, const void* data, size_t len);
/**
 * @brief Writes what the kernel takes now, without a step and without waiting.
 *
 * For a write that usually completes at once (a small response on an idle
 * connection): write with this first, and add a write step (under a
 * timeout) only for the rest, so that the common case pays for no timer.
 * Nothing is written while writes are queued on the stream (order is kept).
 * @param s    the stream
 * @param data the bytes (may be NULL only with len 0)
 * @param len  how many (at most UINT32_MAX are tried)
 * @return the number of bytes written (0..len: 0 when the kernel takes
 *         nothing now or writes are queued), or a negative libuv error
 *         (UV_EINVAL for NULL, UV_EBADF once the stream is closed, UV_EPIPE, ...)
 */
long futoin_uv_try_write(FutoInUvStream* s, const void* data, size_t len);

/** Like futoin_uv_write() without the copy: data must stay valid and
 * unchanged until the stream is closed (e.g. a string literal). Same
 * ranges as futoin_uv_write(). */
void futoin_uv_write_static(FutoInAsyncSteps* as, FutoInUvStream* s, const void* data, size_t len);

/**
 * @brief Step: flushes the queued writes and ends the sending side (uv_shutdown: FIN).
 *
 * The stream stays open for reading: after a response that ends a
 * connection, read (and drop) what the peer still sends until it closes,
 * under a short timeout, before releasing the stream; closing a socket with
 * unread input makes the kernel send a reset, which may destroy the response
 * before the peer has read it. Succeeds with no result when the FIN is sent.
 * Errors: CommError (e.g. "ENOTCONN: shutdown" when already shut down).
 * A cancelled shutdown still completes in the background.
 * @param as the flow
 * @param s  the stream (not NULL)
 */
void futoin_uv_shutdown(FutoInAsyncSteps* as, FutoInUvStream* s);

/** Step: closes the stream (pending writes are flushed first with
 * uv_shutdown when graceful is non-zero) and drops the caller's reference
 * (like futoin_uv_stream_release()); succeeds when libuv has closed it. */
void futoin_uv_close(FutoInAsyncSteps* as, FutoInUvStream* s, int graceful);

/* ------------------------------------------------------------------------ */
/* TCP servers                                                               */

/** Binds and listens at once (not a step): returns a server with one
 * reference, or NULL and the libuv error in *uv_error (may be NULL).
 * host: a numeric IPv4/IPv6 address; NULL or "": 127.0.0.1.
 * port: 0..65535, 0 picks a free port (see futoin_uv_server_port()).
 * backlog: 1..INT_MAX (the kernel caps it at SOMAXCONN), 0: 511. A port or
 * backlog out of range, or a NULL uv: NULL with UV_EINVAL, nothing bound.
 * Out of memory: NULL with UV_ENOMEM. */
FutoInUvServer* futoin_uv_server_new(FutoInUv* uv, const char* host, unsigned port, int backlog,
        int* uv_error);
/** Flags of futoin_uv_server_new_ex(). */
enum {
    /**
     * SO_REUSEPORT: several servers (one per loop thread) may bind the same
     * address and port, and the kernel spreads new connections among them.
     * Only processes of the same user can join the group (Linux).
     */
    FUTOIN_UV_SERVER_REUSEPORT = 1u
};

/**
 * @brief futoin_uv_server_new() with flags.
 * @param uv       the backend
 * @param host     numeric IPv4/IPv6 address; NULL or "": 127.0.0.1
 * @param port     0..65535 (0: any free port)
 * @param backlog  1..INT_MAX, 0: 511
 * @param flags    0 or FUTOIN_UV_SERVER_REUSEPORT; other bits: UV_EINVAL
 * @param uv_error receives the libuv error on failure (may be NULL)
 * @return the listening server with one reference, or NULL (out of memory:
 *         NULL with UV_ENOMEM)
 */
FutoInUvServer* futoin_uv_server_new_ex(FutoInUv* uv, const char* host, unsigned port, int backlog,
        unsigned flags, int* uv_error);

/** Step form of futoin_uv_server_new() (same ranges and host; out of range:
 * InternalError): success arg0 = server (futoin_uv_server_type); errors:
 * ConnectError. */
void futoin_uv_tcp_listen(FutoInAsyncSteps* as, const char* host, unsigned port, int backlog);

/** ref returns srv (NULL for NULL); release of NULL does nothing. */
FutoInUvServer* futoin_uv_server_ref(FutoInUvServer* srv);
/** The last release stops listening; a pending accept fails with CommError. */
void futoin_uv_server_release(FutoInUvServer* srv);
/** Stops listening now without dropping a reference: a pending accept (and
 * so futoin_uv_serve()) fails with CommError "ECANCELED: accept: server
 * closed". NULL: does nothing. */
void futoin_uv_server_close(FutoInUvServer* srv);
/** The bound port (useful after port 0); 0 if srv is NULL. */
unsigned futoin_uv_server_port(const FutoInUvServer* srv);

/** Step: waits for the next connection. Success: arg0 = stream. */
void futoin_uv_accept(FutoInAsyncSteps* as, FutoInUvServer* srv);

/** Receives each accepted connection; s is borrowed for the call: take a
 * reference to keep it. Runs inside a step of the serving flow; start one
 * new root per connection rather than blocking the accept loop. */
typedef void (*FutoInUvConnectionCb)(void* data, FutoInUvStream* s);
/** Step: an accept loop (srv and cb not NULL) that runs until the server is closed (CommError
 * "ECANCELED: accept: server closed") or the flow is cancelled. Other accept
 * failures (EMFILE, ...) pause the loop for 100 ms and it goes on. */
void futoin_uv_serve(FutoInAsyncSteps* as, FutoInUvServer* srv, FutoInUvConnectionCb cb,
        void* data);

/* ------------------------------------------------------------------------ */
/* DNS, files, time                                                          */

/**
 * @brief Step: resolves a host name to its addresses (getaddrinfo, AF_UNSPEC, TCP).
 *
 * The lookup runs on a thread of its own, not on libuv's pool, because
 * getaddrinfo() cannot be interrupted: against a resolver that does not
 * answer it blocks for the resolver's whole timeout (resolv.conf: timeout ×
 * attempts × servers; 10 s by default). When the step is cancelled or times
 * out, the lookup is let go at once: nothing of it reaches the step, it does
 * not keep futoin_uv_run() alive and holds no pool thread; its thread ends
 * (and frees what it holds) when getaddrinfo() returns. Until then it is a
 * thread of the process: one still running at exit is reported by valgrind
 * as possibly lost memory of pthread_create().
 *
 * Bounds: at most 32 lookups run on threads of their own at once in the
 * process. Beyond that, when a thread cannot be created, and for names that
 * are not plain ASCII (which libuv converts with IDNA first), the lookup
 * runs on libuv's pool (uv_getaddrinfo()): given up while it runs, it keeps
 * futoin_uv_run() alive until getaddrinfo() returns, at most the resolver's
 * timeout. futoin_uv_tcp_connect() resolves names the same way.
 * @param as   the flow
 * @param host the name (not NULL), or a numeric address
 *
 * Success: arg0 = first address (FTN_TYPE_STRING, numeric), arg1 = number
 * of addresses (FTN_TYPE_UINT32), arg2 = every address, one per line
 * (FTN_TYPE_STRING); a success always carries all three. Errors:
 * ConnectError ("EAI_NONAME: getaddrinfo x"); InternalError "ENOMEM:
 * resolve x: out of memory" when the result cannot be copied.
 */
void futoin_uv_resolve(FutoInAsyncSteps* as, const char* host);

/**
 * @brief Step: reads a whole regular file.
 *
 * Runs on libuv's thread pool (open, fstat, reads, close). Only regular
 * files are read: the file is opened with O_NONBLOCK (and O_NOCTTY,
 * O_CLOEXEC), so that no open() waits, and anything else is refused after
 * fstat(), before a byte is read, with CommError:
 *   - "EISDIR: read PATH: is a directory";
 *   - "EFTYPE: read PATH: not a regular file (FIFO)", also "(socket)",
 *     "(character device)" (/dev/null, /dev/zero, terminals), "(block device)";
 *   - "ENXIO: read PATH: not a regular file (socket or device)" when open()
 *     itself refuses (a socket file, a device without a driver).
 * The descriptor stays non-blocking: a pseudo-file that looks regular but
 * waits for data (some of /proc or tracefs) fails with "EAGAIN: read PATH:
 * would block". So a cancelled or timed-out read never holds a pool thread
 * or keeps futoin_uv_run() alive beyond the system calls on the file itself
 * (a hung network filesystem can still hold them). Read FIFOs, sockets and
 * devices through a stream of your own instead.
 * @param as        the flow
 * @param path      the file (not NULL)
 * @param max_bytes the most bytes read: 0..UINT32_MAX - 1 (0..UINT32_MAX - 2
 *                  with a 32-bit size_t); 0: 64 MiB; a larger file fails with
 *                  CommError "EFBIG: read PATH"
 *
 * Success: arg0 = the content (FTN_TYPE_UINT8 | FTN_TYPE_ARRAY). Errors:
 * CommError ("ENOENT: open PATH", the refusals above, ...).
 */
void futoin_uv_file_read(FutoInAsyncSteps* as, const char* path, size_t max_bytes);

/**
 * @brief Step: writes a whole regular file.
 *
 * Creates path (mode 0644) or truncates it (unless @p append), then writes
 * @p len bytes, on libuv's thread pool. Like futoin_uv_file_read(), the file
 * is opened with O_NONBLOCK and only a regular file is written; nothing is
 * written to anything else, which fails with CommError:
 *   - "EISDIR: write PATH: is a directory";
 *   - "ENXIO: write PATH: not a regular file (FIFO without a reader, socket
 *     or device)" when open() refuses (a FIFO nobody reads fails at once
 *     instead of waiting for a reader);
 *   - "EFTYPE: write PATH: not a regular file (FIFO)" for a FIFO that has a
 *     reader, also "(character device)" (/dev/null too), "(block device)".
 * @param as     the flow
 * @param path   the file (not NULL)
 * @param data   the bytes (copied now; NULL only with len 0)
 * @param len    how many
 * @param append non-zero: append (O_APPEND) instead of truncating
 *
 * Success: arg0 = bytes written (FTN_TYPE_UINT64). Errors: CommError
 * ("EACCES: open PATH", the refusals above, ...).
 */
void futoin_uv_file_write(FutoInAsyncSteps* as, const char* path, const void* data, size_t len,
        int append);

/** Step: succeeds with no result after ms milliseconds (any uint32_t; an
 * AsyncTool timer: no libuv handle per sleep). */
void futoin_uv_sleep(FutoInAsyncSteps* as, uint32_t ms);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_UV_H */
