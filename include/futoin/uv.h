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
 *   CommError     read, write, accept, close and file errors; end of stream;
 *                 UDP send and receive errors
 *   Timeout       from an enclosing futoin_set_timeout()
 *   InternalError misuse (NULL arguments, not on a FutoInUv loop, ...)
 * error_info is "<uv_err_name>: <operation and context>", e.g.
 * "ECONNREFUSED: connect 127.0.0.1:1", "EOF: read: connection closed by
 * peer", "ENOENT: open /x". The libuv error number itself (UV_ECONNREFUSED,
 * UV_EOF, UV_ENOENT, ...) is futoin_uv_errno() in the error handlers.
 *
 * What a Timeout interrupted: every step that waits for libuv describes
 * its wait with futoin_set_wait_info(), so the error_info of a Timeout (of
 * the step or of any step around it) names the operation and its object:
 *   "connect example.org:80"   futoin_uv_tcp_connect() (host as given)
 *   "read 127.0.0.1:8080"      read steps, futoin_uv_read_wait()
 *   "write 10.0.0.1:5000"      a write the kernel did not take at once
 *   "shutdown 10.0.0.1:5000", "close 10.0.0.1:5000" (graceful close)
 *   "accept 0.0.0.0:8080"      futoin_uv_accept(), futoin_uv_serve()
 *   "read /run/app.sock", "connect /run/app.sock", "read fd 5"
 *                              local streams: the socket's path, or the
 *                              descriptor given to futoin_uv_pipe_open()
 *   "resolve example.org"      futoin_uv_resolve()
 *   "file_read /path", "file_write /path"
 *   "file_open /path", "file_pread /path", "file_pwrite /path",
 *   "file_fsync /path", "file_fstat /path", "file_close /path",
 *   "stat /path", "rename /from", "unlink /path", "mkdir /path",
 *   "rmdir /path", "readdir /path"   file handles and filesystem steps
 *   "sleep 100 ms"             futoin_uv_sleep()
 *   "udp_recv 127.0.0.1:5000"  futoin_uv_udp_recv() (the socket's address)
 *   "udp_send 10.0.0.1:53"     a datagram the kernel did not take at once
 *   "wait pid 1234 /bin/sh"    futoin_uv_process_wait() (pid and file)
 *   "read pid 1234 stdout"     reads and writes on a child's pipes
 *   "tls_handshake 127.0.0.1:443"  futoin_uv_tls_handshake() (then the TLS
 *                              stream's reads and writes as for TCP)
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
 * TLS: futoin_uv_tls_handshake() makes any connected stream a TLS stream
 * (OpenSSL 3 over memory buffers, CMake option FUTOIN_WITH_TLS); the steps
 * above then read and write its plain text: @ref md_TLS "docs/TLS.md".
 *
 * Errors: @ref md_ERRORS "docs/ERRORS.md".
 */
#ifndef FUTOIN_UV_H
#define FUTOIN_UV_H

#include <futoin/asyncsteps.h>

/* <uv.h> uses POSIX types (pthread_rwlock_t, ...) that a strict ISO C mode
 * (-std=c11) hides on Linux unless a feature macro asks for them (macOS and
 * the BSDs show them). */
#if defined(__linux__) && defined(__STRICT_ANSI__) && !defined(__cplusplus)                        \
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
/** A TCP connection or a local one (a Unix socket, a pipe), reference
 * counted (opaque). */
typedef struct FutoInUvStream FutoInUvStream;
/** A listening TCP or Unix domain socket, reference counted (opaque). */
typedef struct FutoInUvServer FutoInUvServer;
/** A child process (futoin_uv_spawn()), reference counted (opaque). */
typedef struct FutoInUvProcess FutoInUvProcess;

/* ------------------------------------------------------------------------ */
/* Backend                                                                   */

/**
 * @brief A new backend: a FutoInLoop driven by a libuv loop.
 *
 * Creates the FutoInLoop too (futoin_uv_loop()). Out of memory: NULL
 * (libuv itself aborts when it cannot allocate some of its own structures:
 * its loop's watcher array, its thread pool). Out of memory in a step of
 * this backend (connect, accept, read, write, shutdown, close): the step
 * fails with InternalError and an error_info that ends in ": out of
 * memory" (e.g. "ENOMEM: read: out of memory"), never with a CommError or
 * ConnectError.
 * @param uv_loop  your libuv loop, or NULL: the backend creates and owns
 *                 one
 * @return the backend, or NULL on failure (out of memory, a libuv handle
 *         that cannot be made)
 * @par Ownership
 * The caller owns the backend and frees it with futoin_uv_free(). A loop
 * given as uv_loop stays yours (keep it alive until after futoin_uv_free()
 * and the run that follows it); an owned one goes with the backend.
 * @par Thread
 * The thread that runs the libuv loop; it becomes the FutoInLoop's thread.
 */
FutoInUv* futoin_uv_new(uv_loop_t* uv_loop);

/**
 * @brief Frees the backend and its FutoInLoop.
 *
 * Every AsyncSteps root of the loop must be freed and every stream and
 * server released before. With an owned uv_loop_t, the loop is run until
 * the handles are closed and then closed; with a loop of yours, the memory
 * is released from close callbacks: run your loop once more before
 * uv_loop_close(). An owned loop that still has handles open (streams or
 * servers not released, handles of yours) gets them closed, with a
 * FUTOIN_LOG_WARNING line "futoin_uv_free: libuv handles still open
 * (streams or servers not released)" to the log handler
 * (futoin_set_log_handler()); the memory of our objects among them is lost.
 * @param uv  the backend (NULL: nothing happens)
 * @par Ownership
 * Releases the backend, its FutoInLoop and (when owned) its libuv loop.
 * @par Thread
 * The backend's loop thread, outside its callbacks (not while
 * futoin_uv_run() or your uv_run() runs).
 */
void futoin_uv_free(FutoInUv* uv);

/**
 * @brief The AsyncTool loop to create roots on.
 * @param uv  the backend
 * @return its FutoInLoop (owned by the backend), NULL if uv is NULL
 * @par Ownership
 * Borrowed: the backend owns the loop (futoin_uv_free() frees it).
 * @par Thread
 * Any thread (what may be done with the loop: <futoin/asynctool.h>).
 */
FutoInLoop* futoin_uv_loop(const FutoInUv* uv);
/**
 * @brief The libuv loop.
 * @param uv  the backend
 * @return the uv_loop_t it runs on (yours, or its own), NULL if uv is NULL
 * @par Ownership
 * Borrowed: your loop if you gave one to futoin_uv_new(), else the backend's.
 * @par Thread
 * Any thread (libuv's rules apply to what you do with it).
 */
uv_loop_t* futoin_uv_uv_loop(const FutoInUv* uv);
/**
 * @brief The backend driving a loop.
 * @param loop  a FutoInLoop
 * @return the backend, or NULL if loop is not driven by a FutoInUv
 * @par Ownership
 * Borrowed: the backend stays its owner's.
 * @par Thread
 * The loop's thread.
 */
FutoInUv* futoin_uv_of_loop(FutoInLoop* loop);
/**
 * @brief The backend behind an AsyncSteps interface of this library.
 * @param as  a root or a branch
 * @return the backend of its loop, or NULL (another implementation's
 *         object, or a loop that no FutoInUv drives)
 * @par Ownership
 * Borrowed: the backend stays its owner's.
 * @par Thread
 * The loop's thread.
 */
FutoInUv* futoin_uv_of(FutoInAsyncSteps* as);

/**
 * @brief Runs the backend: uv_run(UV_RUN_DEFAULT), which returns when
 * neither libuv nor the AsyncTool have anything left to do, or after
 * uv_stop().
 * @param uv  the backend
 * @return uv_run()'s result; UV_EINVAL if uv is NULL; UV_EBUSY (with a
 *         FUTOIN_LOG_MISUSE line to the log handler,
 *         futoin_set_log_handler(); nothing run) when called from inside a
 *         callback of that loop: a step, a handler or a libuv callback
 *         while futoin_uv_run() or the AsyncTool's round runs (libuv's loop
 *         is not reentrant)
 * @par Ownership
 * Nothing passes to the caller; the steps and callbacks that run release what
 * they own.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()). Steps and
 * libuv callbacks run inside the call.
 */
int futoin_uv_run(FutoInUv* uv);

/* ------------------------------------------------------------------------ */
/* Error numbers                                                             */

/**
 * @brief The libuv error number of the error a flow is handling.
 *
 * Every error the backend raises carries, beside its code and its
 * error_info "<uv_err_name>: ...", the libuv error number that the name
 * stands for: UV_ECONNREFUSED, UV_ECONNRESET, UV_EOF, UV_ENOENT,
 * UV_EAI_NONAME, ... (negative, as libuv returns them; uv_err_name() and
 * uv_strerror() describe them). Argument errors (InternalError "EINVAL:
 * ...") carry UV_EINVAL, and out of memory in a step of the backend
 * (InternalError "...: out of memory") UV_ENOMEM.
 *
 * Call it in an error handler, or in the unhandled-error callback of
 * futoin_execute(), with the handle it receives. The number belongs to the
 * flow's error, like its code and error_info, so each parallel branch reads
 * its own even when several fail in the same libuv iteration. It answers
 * while the flow's error is the backend's failure:
 *   - in the flow whose backend step failed (a root's main flow or a
 *     branch), while the error unwinds through that flow's handlers;
 *   - in the flows the error escapes into from a failed branch (the flow of
 *     the parallel step, and outwards, up to 32 nested parallel steps),
 *     while it unwinds through theirs;
 * until the flow starts another step (a handler that recovered, or added
 * steps) or a handler raises an error of its own: another code, or another
 * error_info (futoin_error(as, code, futoin_error_info(as)) passes the
 * failure on and keeps the number).
 *
 * Anything else reads 0: an error the backend did not raise (a Timeout of
 * futoin_set_timeout(), whose error_info names the operation it
 * interrupted; an InternalError of misuse; an error of the program's own), a
 * flow without an error, a flow of another implementation, NULL, a call
 * from another thread, and an error noted when memory ran out. Nothing is
 * kept for a step that succeeds; the notes go with their root.
 * @param as the flow (the handle an error handler receives)
 * @return the UV_E* number (negative), or 0
 * @par Ownership
 * Nothing passes: the notes are the backend's, kept in a state variable of
 * the root and released with it.
 * @par Thread
 * The loop's thread: in an error handler or unhandled-error callback of the
 * flow as (elsewhere too, but only there is the error being handled).
 */
int futoin_uv_errno(FutoInAsyncSteps* as);

/* ------------------------------------------------------------------------ */
/* Result values                                                             */

/** Type descriptor of stream values passed as step results; compare a
 * value's type pointer with it. Its cleanup drops one reference. */
extern const FutoInType futoin_uv_stream_type;
/** Type descriptor of server values, as futoin_uv_stream_type is of streams. */
extern const FutoInType futoin_uv_server_type;

/**
 * @brief Argument i as a stream (a value of futoin_uv_stream_type).
 * @param args  the arguments a step received (may be NULL)
 * @param i     the index, 0..3
 * @return the stream, or NULL if argument i is not one
 * @par Ownership
 * Borrowed: the value's reference is dropped when the step returns; take
 * one with futoin_uv_stream_ref() to keep the stream.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvStream* futoin_uv_arg_stream(const FutoInArgs* args, int i);
/**
 * @brief Argument i as a server (a value of futoin_uv_server_type).
 * @param args  the arguments a step received (may be NULL)
 * @param i     the index, 0..3
 * @return the server, or NULL if argument i is not one
 * @par Ownership
 * Borrowed, as for futoin_uv_arg_stream(); keep it with
 * futoin_uv_server_ref().
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvServer* futoin_uv_arg_server(const FutoInArgs* args, int i);

/**
 * @brief The bytes of data read from a stream or a file.
 *
 * Such a value is FTN_TYPE_STRING (lines, delimited reads) or
 * FTN_TYPE_UINT8 | FTN_TYPE_ARRAY (exact reads, files), both with .length
 * in bytes and a terminating NUL after the data (not counted), so
 * futoin_arg_cstr() works for text.
 * @param args  the arguments a step received (may be NULL)
 * @param i     the index, 0..3
 * @param len   receives the length in bytes (0 when NULL is returned); may
 *              be NULL
 * @return a pointer to argument i's bytes, or NULL if argument i is not
 *         such a value
 * @par Ownership
 * Borrowed: the engine frees the bytes when the step returns. Copy what
 * you keep.
 * @par Thread
 * Any thread that may read args (a step: the loop's thread).
 */
const char* futoin_uv_arg_bytes(const FutoInArgs* args, int i, size_t* len);

/* ------------------------------------------------------------------------ */
/* TCP streams                                                               */

/**
 * @brief Takes a reference to a stream.
 *
 * Reference counting: the result value of connect/accept holds one
 * reference, dropped when the receiving step returns; take your own to keep
 * the stream. Steps that use a stream hold one too, from when they are
 * added until the step that added them ends (futoin_uv_close() takes over
 * the caller's instead). When the last reference goes, the connection is
 * closed (uv_close) and a pending read or accept elsewhere fails with
 * CommError "ECANCELED: closed"; memory is released from libuv's close
 * callback.
 * @param s  the stream (NULL: NULL)
 * @return s
 * @par Ownership
 * The caller owes one futoin_uv_stream_release() (or a futoin_uv_close()
 * step) for it.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvStream* futoin_uv_stream_ref(FutoInUvStream* s);
/**
 * @brief Drops one reference (see futoin_uv_stream_ref()); the last one
 * closes the connection.
 * @param s  the stream (NULL: nothing happens)
 * @par Ownership
 * Ends one reference of the caller's; s must not be used afterwards unless
 * the caller holds another.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
void futoin_uv_stream_release(FutoInUvStream* s);
/**
 * @brief The libuv handle, e.g. for uv_tcp_nodelay() or uv_tcp_getpeername().
 * @param s  the stream
 * @return its uv_tcp_t; NULL if s is NULL or a local stream (a Unix socket
 *         or a pipe: futoin_uv_pipe_connect(), futoin_uv_pipe_open())
 * @par Ownership
 * Borrowed: the stream owns the handle; never close it yourself
 * (futoin_uv_stream_close()), and do not start or stop reading on it.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
uv_tcp_t* futoin_uv_stream_handle(FutoInUvStream* s);
/**
 * @brief The bytes received but not yet consumed by a read step.
 * @param s  the stream
 * @return their number (0 if s is NULL)
 * @par Ownership
 * Reads only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
size_t futoin_uv_stream_buffered(const FutoInUvStream* s);
/**
 * @brief Closes the stream now (uv_close), without waiting and without
 * dropping a reference.
 *
 * A pending read fails with CommError "ECANCELED: read: stream closed",
 * queued writes are dropped, later steps on it fail.
 * @param s  the stream (NULL: nothing happens)
 * @par Ownership
 * References stay as they are: each holder still releases its own (the
 * memory goes with the last one).
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
void futoin_uv_stream_close(FutoInUvStream* s);
/**
 * @brief Whether the stream is open.
 * @param s  the stream
 * @return 1 while it is open; 0 once it is closed (by futoin_uv_close(),
 *         futoin_uv_stream_close() or the last release), and for NULL
 * @par Ownership
 * Reads only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
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
 * @par Ownership
 * The string is the stream's (see the return value).
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
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
 * @par Ownership
 * The bytes are the stream's (see the return value); nothing is consumed.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
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
 * @par Ownership
 * A setting of the stream; nothing passes.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
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
 * @par Ownership
 * The caller holds the one reference: futoin_uv_budget_release() when done.
 * Streams given the budget hold references of their own.
 * @par Thread
 * Any thread (atomic).
 */
FutoInUvBudget* futoin_uv_budget_new(size_t limit);
/**
 * @brief Takes a reference.
 * @param b  the budget (NULL: NULL)
 * @return b
 * @par Ownership
 * The caller owes one futoin_uv_budget_release() for it.
 * @par Thread
 * Any thread (atomic).
 */
FutoInUvBudget* futoin_uv_budget_ref(FutoInUvBudget* b);
/**
 * @brief Drops a reference; the last one frees the budget.
 * @param b  the budget (NULL: nothing happens)
 * @par Ownership
 * Ends one reference of the caller's.
 * @par Thread
 * Any thread (atomic).
 */
void futoin_uv_budget_release(FutoInUvBudget* b);
/**
 * @brief Charges @p n bytes if they fit.
 * @param b  the budget
 * @param n  the bytes to charge
 * @return 0 when charged, -1 when used + n would exceed the limit (counted as
 *         a refusal; nothing charged) or b is NULL
 * @par Ownership
 * A charge is the caller's until given back with futoin_uv_budget_give().
 * @par Thread
 * Any thread (atomic).
 */
int futoin_uv_budget_take(FutoInUvBudget* b, size_t n);
/**
 * @brief Returns @p n bytes charged by futoin_uv_budget_take().
 * @param b  the budget (NULL: nothing happens)
 * @param n  the bytes to give back (at most what was charged)
 * @par Ownership
 * Ends the caller's charge of n bytes.
 * @par Thread
 * Any thread (atomic).
 */
void futoin_uv_budget_give(FutoInUvBudget* b, size_t n);
/**
 * @brief The bytes charged now.
 * @param b  the budget
 * @return the bytes charged (0 for NULL)
 * @par Ownership
 * Reads only.
 * @par Thread
 * Any thread (atomic).
 */
size_t futoin_uv_budget_used(const FutoInUvBudget* b);
/**
 * @brief The limit given to futoin_uv_budget_new().
 * @param b  the budget
 * @return the limit (0 for NULL)
 * @par Ownership
 * Reads only.
 * @par Thread
 * Any thread (atomic).
 */
size_t futoin_uv_budget_limit(const FutoInUvBudget* b);
/**
 * @brief How many charges were refused so far.
 * @param b  the budget
 * @return the count (0 for NULL)
 * @par Ownership
 * Reads only.
 * @par Thread
 * Any thread (atomic).
 */
unsigned long futoin_uv_budget_refusals(const FutoInUvBudget* b);

/**
 * @brief Makes stream @p s charge its receive buffer to budget @p b.
 *
 * Call it before the first read step (e.g. in the connection callback of
 * futoin_uv_serve()); a charge already made moves to the new budget. The
 * stream holds a reference to @p b until it is destroyed.
 * @param s the stream (NULL: nothing happens)
 * @param b the budget, or NULL for none (the default)
 * @par Ownership
 * The stream takes a reference of its own: the caller's stays the caller's.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
void futoin_uv_stream_set_budget(FutoInUvStream* s, FutoInUvBudget* b);

/**
 * @brief Step: connects to host:port.
 *
 * A name is resolved like futoin_uv_resolve(), so a connect given up while
 * it resolves lets go of the lookup at once; each address is tried in
 * turn. Success: arg0 = the stream (futoin_uv_stream_type). Errors:
 * ConnectError ("ECONNREFUSED: connect 127.0.0.1:1", ...).
 * @param as    the flow
 * @param host  a numeric IPv4/IPv6 address or a name (not NULL); copied
 * @param port  1..65535
 * @par Ownership
 * The stream value holds one reference, dropped when the next step
 * returns: take one (futoin_uv_stream_ref()) to keep the connection.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_tcp_connect(FutoInAsyncSteps* as, const char* host, unsigned port);

/**
 * @brief Step: reads one line ending in "\n".
 *
 * Success: arg0 = the line as FTN_TYPE_STRING without "\n" or "\r\n".
 * Errors: CommError ("EOF: read: connection closed by peer" when the peer
 * closed before a full line, "ENOBUFS: read: line longer than N bytes"
 * when the line with its terminator would exceed max_len, N being max_len
 * or its default).
 * @param as       the flow
 * @param s        the stream (not NULL)
 * @param max_len  the most bytes, terminator included: 0..UINT32_MAX; 0:
 *                 64 KiB
 * @par Ownership
 * The step takes a reference to s when it is added, so the caller may
 * release its own right after; it is dropped when the step that added it
 * ends (its parameters live in that step's stack() memory).
 * The data read is the next step's value: borrowed by that step, freed by
 * the engine when it returns.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_read_line(FutoInAsyncSteps* as, FutoInUvStream* s, size_t max_len);

/**
 * @brief Step: reads up to and including the first occurrence of delim.
 *
 * Success: arg0 = FTN_TYPE_STRING including delim. E.g. delim "\r\n\r\n"
 * reads an HTTP head in one step. Errors: like futoin_uv_read_line(), but
 * the limit is "ENOBUFS: read: delimiter not found within N bytes".
 * @param as       the flow
 * @param s        the stream (not NULL)
 * @param delim    the delimiter (NULL or "": "\n"); copied
 * @param max_len  the most bytes, delimiter included: 0..UINT32_MAX; 0:
 *                 64 KiB
 * @par Ownership
 * The step takes a reference to s when it is added, so the caller may
 * release its own right after; it is dropped when the step that added it
 * ends (its parameters live in that step's stack() memory).
 * The data read is the next step's value: borrowed by that step, freed by
 * the engine when it returns.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_read_until(FutoInAsyncSteps* as, FutoInUvStream* s, const char* delim,
        size_t max_len);

/**
 * @brief Step: reads exactly n bytes.
 *
 * Success: arg0 = FTN_TYPE_UINT8 | FTN_TYPE_ARRAY of n bytes. Errors:
 * CommError ("EOF: read: connection closed by peer" when the peer closed
 * first).
 * @param as  the flow
 * @param s   the stream (not NULL)
 * @param n   the number of bytes, 0..UINT32_MAX
 * @par Ownership
 * The step takes a reference to s when it is added, so the caller may
 * release its own right after; it is dropped when the step that added it
 * ends (its parameters live in that step's stack() memory).
 * The data read is the next step's value: borrowed by that step, freed by
 * the engine when it returns.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
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
 * @par Ownership
 * The step takes a reference to s when it is added, so the caller may
 * release its own right after; it is dropped when the step that added it
 * ends (its parameters live in that step's stack() memory).
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_read_wait(FutoInAsyncSteps* as, FutoInUvStream* s);

/**
 * @brief Step: reads whatever is available, at least 1 byte.
 *
 * Success: arg0 = FTN_TYPE_UINT8 | FTN_TYPE_ARRAY. Errors: CommError ("EOF:
 * read: connection closed by peer" when the peer closed with nothing
 * buffered).
 * @param as   the flow
 * @param s    the stream (not NULL)
 * @param max  the most bytes: 0..UINT32_MAX; 0: 64 KiB
 * @par Ownership
 * The step takes a reference to s when it is added, so the caller may
 * release its own right after; it is dropped when the step that added it
 * ends (its parameters live in that step's stack() memory).
 * The data read is the next step's value: borrowed by that step, freed by
 * the engine when it returns.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_read_some(FutoInAsyncSteps* as, FutoInUvStream* s, size_t max);

/**
 * @brief Step: writes len bytes.
 *
 * Succeeds with no result once libuv has handed all bytes to the kernel
 * (often at once, via uv_try_write). A cancelled write may still be
 * completed by libuv in the background. Errors: CommError ("EPIPE: write",
 * ...).
 * @param as    the flow
 * @param s     the stream (not NULL)
 * @param data  the bytes (NULL only with len 0); copied now
 * @param len   how many, 0..UINT32_MAX
 * @par Ownership
 * The step takes a reference to s when it is added, so the caller may
 * release its own right after; it is dropped when the step that added it
 * ends (its parameters live in that step's stack() memory).
 * data stays the caller's (the step has its copy).
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_write(FutoInAsyncSteps* as, FutoInUvStream* s, const void* data, size_t len);
/**
 * @brief Writes what the kernel takes now, without a step and without waiting.
 *
 * For a write that usually completes at once (a small response on an idle
 * connection): write with this first, and add a write step (under a
 * timeout) only for the rest, so that the common case pays for no timer.
 * Nothing is written while writes are queued on the stream (order is kept).
 * On a TLS stream (futoin_uv_tls_handshake()) that has nothing queued, all
 * of the data is encrypted and taken: what the kernel does not take at
 * once is queued, and len is returned; UV_ENOTCONN before its handshake
 * completed, UV_EPROTO after a TLS failure.
 * @param s    the stream
 * @param data the bytes (may be NULL only with len 0)
 * @param len  how many (at most UINT32_MAX are tried)
 * @return the number of bytes written (0..len: 0 when the kernel takes
 *         nothing now or writes are queued), or a negative libuv error
 *         (UV_EINVAL for NULL, UV_EBADF once the stream is closed, UV_EPIPE, ...)
 * @par Ownership
 * data is read during the call only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
long futoin_uv_try_write(FutoInUvStream* s, const void* data, size_t len);

/**
 * @brief Step: futoin_uv_write() without the copy.
 * @param as    the flow
 * @param s     the stream (not NULL)
 * @param data  the bytes (NULL only with len 0); not copied
 * @param len   how many, 0..UINT32_MAX
 * @par Ownership
 * data stays the caller's and must stay valid and unchanged until the
 * stream is closed (e.g. a string literal or a static table): a cancelled
 * write may still be in libuv's hands. The stream as for futoin_uv_write().
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
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
 * @par Ownership
 * The step takes a reference to s when it is added, so the caller may
 * release its own right after; it is dropped when the step that added it
 * ends (its parameters live in that step's stack() memory).
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_shutdown(FutoInAsyncSteps* as, FutoInUvStream* s);

/**
 * @brief Step: closes the stream, taking over the caller's reference.
 *
 * When the step runs it closes the stream, whoever else holds references
 * (pending writes are flushed first with uv_shutdown when graceful is
 * non-zero; a pending read fails with CommError "ECANCELED: read: stream
 * closed"), and it succeeds when libuv has closed it (at once when the
 * stream was closed already). Errors: CommError "EBUSY: close: already
 * being closed" when another close step is at it.
 * @param as        the flow
 * @param s         the stream (not NULL)
 * @param graceful  non-zero: flush the queued writes first
 * @par Ownership
 * **The caller's reference passes to the step at the call**, whatever
 * happens next: do not release it afterwards (that would drop a reference
 * twice), and do not use s after the step unless you hold another
 * reference. The step drops it when the step that called futoin_uv_close()
 * ends: after the close step ran, or when it is dropped without running
 * (an error or cancel first), so the stream is closed even then if that
 * was the last reference. If the step cannot be added (as is NULL, or no
 * memory: InternalError "close: out of memory"), the reference is dropped
 * at once. A NULL s: InternalError, no reference touched.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_close(FutoInAsyncSteps* as, FutoInUvStream* s, int graceful);

/* ------------------------------------------------------------------------ */
/* TCP servers                                                               */

/**
 * @brief Binds and listens at once (not a step).
 * @param uv        the backend (NULL: UV_EINVAL)
 * @param host      a numeric IPv4/IPv6 address; NULL or "": 127.0.0.1
 * @param port      0..65535; 0 picks a free port (futoin_uv_server_port())
 * @param backlog   1..INT_MAX (the kernel caps it at SOMAXCONN); 0: 511
 * @param uv_error  receives the libuv error on failure (may be NULL)
 * @return the listening server with one reference, or NULL: out-of-range
 *         port or backlog, or a NULL uv, give UV_EINVAL (nothing bound);
 *         out of memory gives UV_ENOMEM; a failed bind or listen its libuv
 *         error (UV_EADDRINUSE, ...)
 * @par Ownership
 * The caller holds the reference: futoin_uv_server_release() stops
 * listening and frees the server (with the last reference).
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
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
 * @par Ownership
 * As futoin_uv_server_new().
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvServer* futoin_uv_server_new_ex(FutoInUv* uv, const char* host, unsigned port, int backlog,
        unsigned flags, int* uv_error);

/**
 * @brief Step form of futoin_uv_server_new(): binds and listens when the
 * step runs.
 *
 * Success: arg0 = the server (futoin_uv_server_type). Errors: ConnectError
 * (a failed bind or listen); out of range: InternalError.
 * @param as       the flow
 * @param host     as futoin_uv_server_new(); copied
 * @param port     as futoin_uv_server_new()
 * @param backlog  as futoin_uv_server_new()
 * @par Ownership
 * The server value holds one reference, dropped when the next step
 * returns: take one (futoin_uv_server_ref()) to keep the server listening.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_tcp_listen(FutoInAsyncSteps* as, const char* host, unsigned port, int backlog);

/**
 * @brief Takes a reference to a server.
 * @param srv  the server (NULL: NULL)
 * @return srv
 * @par Ownership
 * The caller owes one futoin_uv_server_release() for it.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvServer* futoin_uv_server_ref(FutoInUvServer* srv);
/**
 * @brief Drops a reference to a server; the last one stops listening (a
 * pending accept fails with CommError) and frees it.
 * @param srv  the server (NULL: nothing happens)
 * @par Ownership
 * Ends one reference of the caller's; srv must not be used afterwards unless
 * the caller holds another.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
void futoin_uv_server_release(FutoInUvServer* srv);
/**
 * @brief Stops listening now, without dropping a reference: a pending accept
 * (and so futoin_uv_serve()) fails with CommError "ECANCELED: accept: server
 * closed".
 * @param srv  the server (NULL: nothing happens)
 * @par Ownership
 * References stay as they are: each holder still releases its own.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
void futoin_uv_server_close(FutoInUvServer* srv);
/**
 * @brief The bound port (useful after port 0).
 * @param srv  the server
 * @return the port, 0 if srv is NULL
 * @par Ownership
 * Reads only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
unsigned futoin_uv_server_port(const FutoInUvServer* srv);

/**
 * @brief Step: waits for the next connection.
 *
 * Success: arg0 = the stream (futoin_uv_stream_type). Errors: CommError
 * ("ECANCELED: accept: server closed" once the server is closed, EMFILE
 * and the like).
 * @param as   the flow
 * @param srv  the server (not NULL)
 * @par Ownership
 * The step takes a reference to srv when it is added, dropped when the
 * step that added it ends. The stream value holds one reference, dropped
 * when the next step returns: take one to keep the connection.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_accept(FutoInAsyncSteps* as, FutoInUvServer* srv);

/**
 * Receives each connection futoin_uv_serve() accepts. Runs inside a step
 * of the serving flow, on the loop's thread: start one new root per
 * connection rather than blocking the accept loop.
 * @param data  the data given to futoin_uv_serve()
 * @param s     the connection, borrowed for the call: take a reference
 *              (futoin_uv_stream_ref()) to keep it; without one it is
 *              closed when the call returns
 */
typedef void (*FutoInUvConnectionCb)(void* data, FutoInUvStream* s);
/**
 * @brief Step: an accept loop that hands each connection to cb.
 *
 * Runs until the server is closed (CommError "ECANCELED: accept: server
 * closed") or the flow is cancelled. Other accept failures (EMFILE, ...)
 * pause the loop for 100 ms and it goes on.
 * @param as    the flow
 * @param srv   the server (not NULL)
 * @param cb    the connection callback (not NULL)
 * @param data  passed to cb
 * @par Ownership
 * The step takes a reference to srv, as futoin_uv_accept(). data stays the
 * caller's, valid while the step runs.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_serve(FutoInAsyncSteps* as, FutoInUvServer* srv, FutoInUvConnectionCb cb,
        void* data);

/* ------------------------------------------------------------------------ */
/* UDP sockets                                                               */

/** A bound UDP socket, reference counted (opaque). */
typedef struct FutoInUvUdp FutoInUvUdp;

/** Type descriptor of UDP socket values, as futoin_uv_stream_type is of
 * streams. Its cleanup drops one reference. */
extern const FutoInType futoin_uv_udp_type;

/** Flags of futoin_uv_udp_new() and futoin_uv_udp_bind(). */
enum {
    /**
     * SO_REUSEADDR (libuv's UV_UDP_REUSEADDR): several sockets may bind the
     * same address and port, e.g. the members of a multicast group on one
     * host; a unicast datagram goes to one of them.
     */
    FUTOIN_UV_UDP_REUSEADDR = 1u,
    /** IPV6_V6ONLY for an IPv6 address: no IPv4-mapped traffic. */
    FUTOIN_UV_UDP_IPV6ONLY = 2u
};

/**
 * The most datagrams a UDP socket keeps received while no
 * futoin_uv_udp_recv() step waits for them.
 *
 * Once a receive step has started, the socket keeps reading between
 * receive steps, into a queue of this many datagrams; when the queue is
 * full it stops reading until a receive step takes one, and further
 * datagrams wait in the kernel's receive buffer (SO_RCVBUF), which drops
 * what does not fit (the kernel counts them: RcvbufErrors of
 * /proc/net/snmp). So the library itself never drops a datagram it has
 * read, and never holds more than this many.
 *
 * A socket keeps futoin_uv_run() going only while a receive step waits on
 * it or a send is queued in libuv: a socket kept for later, even one that
 * reads ahead, lets the run end when nothing else is left.
 */
#define FUTOIN_UV_UDP_QUEUE_MAX 16u

/** The largest datagram a UDP socket receives whole (bytes). */
#define FUTOIN_UV_UDP_DATAGRAM_MAX 65536u

/**
 * @brief Binds a UDP socket at once (not a step).
 * @param uv        the backend (NULL: UV_EINVAL)
 * @param host      a numeric IPv4/IPv6 address; NULL or "": 127.0.0.1;
 *                  "0.0.0.0" or "::" for every interface
 * @param port      0..65535; 0 picks a free port (futoin_uv_udp_port())
 * @param flags     0 or FUTOIN_UV_UDP_REUSEADDR | FUTOIN_UV_UDP_IPV6ONLY;
 *                  other bits: UV_EINVAL
 * @param uv_error  receives the libuv error on failure (may be NULL)
 * @return the bound socket with one reference, or NULL: a NULL uv, a port
 *         out of range, other flags or a host that is not a numeric
 *         address give UV_EINVAL (nothing bound); out of memory gives
 *         UV_ENOMEM; a failed bind its libuv error (UV_EADDRINUSE,
 *         UV_EADDRNOTAVAIL, UV_EACCES, ...)
 * @par Ownership
 * The caller holds the reference: futoin_uv_udp_release() closes the
 * socket with the last one.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvUdp* futoin_uv_udp_new(FutoInUv* uv, const char* host, unsigned port, unsigned flags,
        int* uv_error);

/**
 * @brief Step form of futoin_uv_udp_new(): binds when the step runs.
 *
 * Success: arg0 = the socket (futoin_uv_udp_type). Errors: ConnectError
 * "<UV_E...>: bind HOST:PORT" for a failed bind ("EADDRINUSE: bind
 * 127.0.0.1:5000") or a host that is not a numeric address ("EINVAL: bind
 * example.org:53"), with futoin_uv_errno() its libuv number; a port out
 * of range or unknown flags: InternalError "EINVAL: futoin_uv_udp_bind:
 * ..." when the step is added; out of memory: InternalError "ENOMEM: bind
 * HOST:PORT: out of memory".
 * @param as     the flow
 * @param host   as futoin_uv_udp_new(); copied
 * @param port   as futoin_uv_udp_new()
 * @param flags  as futoin_uv_udp_new()
 * @par Ownership
 * The socket value holds one reference, dropped when the next step
 * returns: take one (futoin_uv_udp_ref()) to keep the socket.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_udp_bind(FutoInAsyncSteps* as, const char* host, unsigned port, unsigned flags);

/**
 * @brief Argument i as a UDP socket (a value of futoin_uv_udp_type).
 * @param args  the arguments a step received (may be NULL)
 * @param i     the index, 0..3
 * @return the socket, or NULL if argument i is not one
 * @par Ownership
 * Borrowed, as for futoin_uv_arg_stream(); keep it with futoin_uv_udp_ref().
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvUdp* futoin_uv_arg_udp(const FutoInArgs* args, int i);

/**
 * @brief Takes a reference to a UDP socket.
 *
 * As for streams: the result value of futoin_uv_udp_bind() holds one,
 * dropped when the receiving step returns; steps that use the socket
 * hold one from when they are added until the step that added them ends.
 * @param u  the socket (NULL: NULL)
 * @return u
 * @par Ownership
 * The caller owes one futoin_uv_udp_release() for it.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvUdp* futoin_uv_udp_ref(FutoInUvUdp* u);
/**
 * @brief Drops a reference; the last one closes the socket (queued
 * datagrams are dropped) and frees it from libuv's close callback.
 * @param u  the socket (NULL: nothing happens)
 * @par Ownership
 * Ends one reference of the caller's; u must not be used afterwards unless
 * the caller holds another.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
void futoin_uv_udp_release(FutoInUvUdp* u);
/**
 * @brief Closes the socket now, without dropping a reference.
 *
 * A waiting futoin_uv_udp_recv() fails with CommError "ECANCELED:
 * udp_recv HOST:PORT: socket closed", queued datagrams are dropped, later
 * steps on the socket fail with CommError (EBADF for a send, ECANCELED
 * for a receive). A send that libuv had queued completes in the
 * background.
 * @param u  the socket (NULL: nothing happens)
 * @par Ownership
 * References stay as they are: each holder still releases its own.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
void futoin_uv_udp_close(FutoInUvUdp* u);
/**
 * @brief The bound port (useful after port 0).
 * @param u  the socket
 * @return the port, 0 if u is NULL
 * @par Ownership
 * Reads only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
unsigned futoin_uv_udp_port(const FutoInUvUdp* u);
/**
 * @brief The libuv handle, e.g. for uv_udp_set_broadcast(),
 * uv_udp_set_multicast_ttl() or uv_udp_set_multicast_loop().
 * @param u  the socket
 * @return its uv_udp_t, NULL if u is NULL
 * @par Ownership
 * Borrowed: the socket owns the handle; never close it yourself
 * (futoin_uv_udp_close()), and do not start or stop receiving on it.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
uv_udp_t* futoin_uv_udp_handle(FutoInUvUdp* u);
/**
 * @brief The datagrams received and queued for the next receive steps.
 * @param u  the socket
 * @return their number, 0..FUTOIN_UV_UDP_QUEUE_MAX (0 if u is NULL)
 * @par Ownership
 * Reads only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
size_t futoin_uv_udp_queued(const FutoInUvUdp* u);

/**
 * @brief Gives the socket a default peer (uv_udp_connect()): datagrams
 * from other addresses are no longer received, a send with host NULL goes
 * to it, and the kernel reports the peer's ICMP errors: a receive or a
 * send after a datagram to a port where nobody listens fails with
 * CommError "ECONNREFUSED: ...".
 * @param u     the socket
 * @param host  a numeric IPv4/IPv6 address, or NULL to remove the default
 *              peer (port is then ignored)
 * @param port  1..65535
 * @return 0, or a negative libuv error: UV_EINVAL for a NULL u, a closed
 *         socket, a port out of range or a host that is not a numeric
 *         address; UV_EISCONN when a peer is set already (remove it
 *         first); what connect() says otherwise
 * @par Ownership
 * host is read during the call only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
int futoin_uv_udp_connect(FutoInUvUdp* u, const char* host, unsigned port);

/**
 * @brief Joins a multicast group on the socket (uv_udp_set_membership()).
 * @param u      the socket (bind it to the group's port, with
 *               FUTOIN_UV_UDP_REUSEADDR when several sockets of the host
 *               join)
 * @param group  the group's numeric address, e.g. "239.255.0.1" or "ff02::1:3"
 * @param iface  the local interface's address, or NULL: the kernel chooses
 * @return 0, or a negative libuv error: UV_EINVAL for NULL u or group, a
 *         closed socket or an address that is not a multicast one;
 *         UV_EADDRINUSE when joined already; UV_ENODEV when no interface
 *         can reach the group (no multicast route); what the kernel says
 *         otherwise
 * @par Ownership
 * group and iface are read during the call only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
int futoin_uv_udp_join(FutoInUvUdp* u, const char* group, const char* iface);
/**
 * @brief Leaves a multicast group joined with futoin_uv_udp_join().
 * @param u      the socket
 * @param group  the group's numeric address
 * @param iface  the interface given to futoin_uv_udp_join(), or NULL
 * @return 0, or a negative libuv error: UV_EINVAL as for
 *         futoin_uv_udp_join(), UV_EADDRNOTAVAIL when not a member
 * @par Ownership
 * group and iface are read during the call only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
int futoin_uv_udp_leave(FutoInUvUdp* u, const char* group, const char* iface);

/**
 * @brief Step: sends one datagram.
 *
 * Succeeds with no result once libuv has handed the datagram to the
 * kernel (usually at once, with uv_udp_try_send(); otherwise it waits,
 * described as "udp_send HOST:PORT"). UDP does not tell whether anybody
 * received it. A cancelled send may still be completed by libuv in the
 * background. Errors: CommError "<UV_E...>: udp_send HOST:PORT" (EMSGSIZE
 * for a datagram larger than the path allows, ENETUNREACH, EACCES for a
 * broadcast without uv_udp_set_broadcast(), ECONNREFUSED on a connected
 * socket after an ICMP error, EBADF once the socket is closed); a host
 * that is not a numeric address: InternalError "EINVAL: udp_send
 * HOST:PORT: not a numeric address"; host NULL on a socket without a
 * default peer (futoin_uv_udp_connect()): InternalError "EDESTADDRREQ:
 * udp_send: no default peer"; out of memory: InternalError "ENOMEM:
 * udp_send HOST:PORT: out of memory"; futoin_uv_errno() gives the number.
 * A NULL u, a port or length out of range, NULL data with a length:
 * InternalError "EINVAL: futoin_uv_udp_send: ..." when the step is added.
 * @param as    the flow
 * @param u     the socket (not NULL)
 * @param host  the destination's numeric IPv4/IPv6 address (copied), or
 *              NULL: the socket's default peer (futoin_uv_udp_connect())
 * @param port  1..65535 (ignored with host NULL)
 * @param data  the bytes (NULL only with len 0); copied now
 * @param len   0..FUTOIN_UV_UDP_DATAGRAM_MAX
 * @par Ownership
 * The step takes a reference to u when it is added, dropped when the step
 * that added it ends. data and host stay the caller's (the step has
 * copies).
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_udp_send(FutoInAsyncSteps* as, FutoInUvUdp* u, const char* host, unsigned port,
        const void* data, size_t len);

/**
 * @brief Step: receives one datagram.
 *
 * Takes the oldest queued datagram (see FUTOIN_UV_UDP_QUEUE_MAX), or waits
 * for the next one, described as "udp_recv HOST:PORT" (the socket's own
 * bound address). Success: arg0 = the datagram (FTN_TYPE_UINT8 |
 * FTN_TYPE_ARRAY, possibly empty; futoin_uv_arg_bytes()), arg1 = the
 * sender's numeric address (FTN_TYPE_STRING, "127.0.0.1" or "::1"), arg2 =
 * the sender's port (FTN_TYPE_UINT32): futoin_uv_udp_send() answers with
 * arg1 and arg2 as they are.
 *
 * On a timeout, root cancel, a failing sibling branch or break/continue,
 * the socket stops reading (uv_udp_recv_stop()) and stays as it was: the
 * queued datagrams stay queued and a datagram that arrives later waits in
 * the kernel for the next receive step; nothing reaches the step that is
 * gone. One receive step at a time per socket.
 *
 * Errors: CommError "EMSGSIZE: udp_recv HOST:PORT: datagram of N bytes
 * longer than M" (the datagram is consumed: it cannot be received
 * otherwise), "EMSGSIZE: ...: datagram truncated" for one larger than
 * FUTOIN_UV_UDP_DATAGRAM_MAX, "ECANCELED: udp_recv HOST:PORT: socket
 * closed", "EBUSY: udp_recv HOST:PORT: another receive is pending",
 * "ECONNREFUSED: udp_recv HOST:PORT" (a connected socket whose peer sent
 * back an ICMP error; reported once, to the waiting or the next receive
 * step); out of memory: InternalError "ENOMEM: udp_recv HOST:PORT: out of
 * memory" (a datagram already queued stays queued; one not yet read stays
 * in the kernel). futoin_uv_errno() gives the number.
 * @param as   the flow
 * @param u    the socket (not NULL)
 * @param max  the longest datagram accepted: 0..FUTOIN_UV_UDP_DATAGRAM_MAX;
 *             0: FUTOIN_UV_UDP_DATAGRAM_MAX
 * @par Ownership
 * The step takes a reference to u when it is added, dropped when the step
 * that added it ends. The datagram and the address are the next step's
 * values: borrowed by it, freed by the engine when it returns.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_udp_recv(FutoInAsyncSteps* as, FutoInUvUdp* u, size_t max);

/* ------------------------------------------------------------------------ */
/* Local sockets and pipes                                                   */

/**
 * @brief Step: connects to a Unix domain stream socket.
 *
 * The stream is a FutoInUvStream like a TCP connection: every read, write,
 * shutdown and close step, references, futoin_uv_stream_peer() (the path)
 * and the budget work on it as they are; futoin_uv_stream_handle() is NULL
 * for it. Waits are described with the path: "connect /run/app.sock",
 * "read /run/app.sock". Success: arg0 = the stream (futoin_uv_stream_type).
 * Errors: ConnectError "<UV_E...>: connect PATH" ("ENOENT: connect
 * /run/app.sock" when nobody made it, ECONNREFUSED when nobody listens on
 * it any more, EACCES, ...), with futoin_uv_errno() its number; a NULL path
 * or one that is empty or too long for a socket address (107 bytes on
 * Linux): InternalError "EINVAL: futoin_uv_pipe_connect: ..." when the
 * step is added; out of memory: InternalError "ENOMEM: connect PATH: out
 * of memory".
 * @param as    the flow
 * @param path  the socket's path (copied)
 * @par Ownership
 * The stream value holds one reference, dropped when the next step
 * returns: take one (futoin_uv_stream_ref()) to keep the connection.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_pipe_connect(FutoInAsyncSteps* as, const char* path);

/**
 * @brief Listens on a Unix domain stream socket at once (not a step).
 *
 * The server is a FutoInUvServer like a TCP one: futoin_uv_accept() and
 * futoin_uv_serve() give streams as futoin_uv_pipe_connect() does, named
 * by the server's path; "accept /run/app.sock" describes the wait. The
 * socket file is created by the bind and removed when the server closes
 * (the last release or futoin_uv_server_close()); an existing file is not
 * replaced: UV_EADDRINUSE (remove a stale one first). futoin_uv_server_port()
 * is 0.
 * @param uv        the backend (NULL: UV_EINVAL)
 * @param path      the socket's path (not NULL or empty: UV_EINVAL; too
 *                  long for a socket address, 107 bytes on Linux:
 *                  UV_ENAMETOOLONG)
 * @param backlog   1..INT_MAX; 0: 511
 * @param uv_error  receives the libuv error on failure (may be NULL)
 * @return the listening server with one reference, or NULL: UV_EINVAL,
 *         UV_ENAMETOOLONG as above, UV_ENOMEM, or the error of the bind or
 *         listen (UV_EADDRINUSE, UV_EACCES, UV_ENOENT for a missing
 *         directory, ...)
 * @par Ownership
 * The caller holds the reference: futoin_uv_server_release() stops
 * listening, removes the file and frees the server (with the last one).
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvServer* futoin_uv_pipe_server_new(FutoInUv* uv, const char* path, int backlog,
        int* uv_error);

/**
 * @brief Step form of futoin_uv_pipe_server_new(): listens when the step
 * runs.
 *
 * Success: arg0 = the server (futoin_uv_server_type). Errors: ConnectError
 * "<UV_E...>: listen PATH" ("EADDRINUSE: listen /run/app.sock"), with
 * futoin_uv_errno() its number; a NULL path or a negative backlog:
 * InternalError "EINVAL: futoin_uv_pipe_listen: ..." when the step is added;
 * out of memory: InternalError "ENOMEM: listen PATH: out of memory" (or
 * "listen: out of memory" when the step cannot be added).
 * @param as       the flow
 * @param path     as futoin_uv_pipe_server_new(); copied
 * @param backlog  as futoin_uv_pipe_server_new()
 * @par Ownership
 * The server value holds one reference, dropped when the next step
 * returns: take one (futoin_uv_server_ref()) to keep the server listening.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_pipe_listen(FutoInAsyncSteps* as, const char* path, int backlog);

/**
 * @brief Wraps a descriptor of yours as a stream (uv_pipe_open()): one end
 * of a pipe(2), a socketpair(2) or an inherited socket.
 *
 * The descriptor is put in non-blocking mode; read, write, shutdown and
 * close steps work on it as on any stream ("read fd 5" describes a wait;
 * the end of the other side is "EOF: read: connection closed by peer").
 * Closing the stream closes the descriptor.
 * @param uv        the backend (NULL: UV_EINVAL)
 * @param fd        the descriptor (negative: UV_EINVAL)
 * @param uv_error  receives the libuv error on failure (may be NULL)
 * @return the stream with one reference, or NULL: UV_EINVAL, UV_ENOMEM, or
 *         what uv_pipe_open() says (UV_EBADF, ...)
 * @par Ownership
 * On success the descriptor passes to the stream: do not close it
 * yourself. On failure it stays yours. The caller holds the stream's
 * reference (futoin_uv_stream_release() or a futoin_uv_close() step).
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvStream* futoin_uv_pipe_open(FutoInUv* uv, int fd, int* uv_error);

/**
 * @brief The credentials of the process at the other end of a Unix socket
 * (SO_PEERCRED): who connected, or whom we connected to, as they were at
 * connect() time.
 * @param s    a local stream (futoin_uv_pipe_connect(), an accepted one of
 *             futoin_uv_pipe_server_new(), futoin_uv_pipe_open() of a
 *             socket)
 * @param pid  receives the peer's process id (may be NULL)
 * @param uid  receives its user id (may be NULL)
 * @param gid  receives its group id (may be NULL)
 * @return 0; UV_EINVAL for NULL s; UV_ENOTSUP for a TCP stream, a pipe(2)
 *         and on platforms other than Linux; UV_EBADF once the stream is
 *         closed; another libuv error from getsockopt()
 * @par Ownership
 * Reads only; nothing is written on failure.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
int futoin_uv_stream_peer_cred(FutoInUvStream* s, long* pid, long* uid, long* gid);

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
 * @param host the name (not NULL), or a numeric address; copied
 *
 * Success: arg0 = first address (FTN_TYPE_STRING, numeric), arg1 = number
 * of addresses (FTN_TYPE_UINT32), arg2 = every address, one per line
 * (FTN_TYPE_STRING); a success always carries all three. Errors:
 * ConnectError ("EAI_NONAME: getaddrinfo x"); InternalError "ENOMEM:
 * resolve x: out of memory" when the result cannot be copied.
 * @par Ownership
 * The strings of the result are the next step's values: borrowed by it,
 * freed by the engine when it returns.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet. The lookup runs on a thread of its own.
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
 * @par Ownership
 * path is copied. The content is the next step's value: borrowed by it,
 * freed by the engine when it returns.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet. The file operations run on libuv's thread pool.
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
 * @par Ownership
 * path and data are copied when the step is added.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet. The file operations run on libuv's thread pool.
 */
void futoin_uv_file_write(FutoInAsyncSteps* as, const char* path, const void* data, size_t len,
        int append);

/* ------------------------------------------------------------------------ */
/* File handles and filesystem steps                                         */

/** An open regular file, reference counted (opaque): the result of
 * futoin_uv_file_open(). */
typedef struct FutoInUvFile FutoInUvFile;

/** Type descriptor of file values passed as step results; its cleanup
 * drops one reference. */
extern const FutoInType futoin_uv_file_type;

/**
 * @brief Argument i as a file (a value of futoin_uv_file_type).
 * @param args  the arguments a step received (may be NULL)
 * @param i     the index, 0..3
 * @return the file, or NULL if argument i is not one
 * @par Ownership
 * Borrowed: the value's reference is dropped when the step returns; take
 * one with futoin_uv_file_ref() to keep the file.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvFile* futoin_uv_arg_file(const FutoInArgs* args, int i);

/**
 * @brief Takes a reference to a file.
 *
 * The result value of futoin_uv_file_open() holds one reference, dropped
 * when the receiving step returns; steps that use a file hold one from
 * when they are added until the step that added them ends, and one while
 * their request runs in libuv's pool. When the last reference goes, a
 * descriptor that no futoin_uv_file_close() step closed is closed on the
 * pool (close errors are not reported then).
 * @param f  the file (NULL: NULL)
 * @return f
 * @par Ownership
 * The caller owes one futoin_uv_file_release() for it.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvFile* futoin_uv_file_ref(FutoInUvFile* f);
/**
 * @brief Drops one reference (see futoin_uv_file_ref()); the last one
 * closes the descriptor if it is still open, and frees the handle.
 *
 * That close is a request on libuv's pool: let the loop run (futoin_uv_run())
 * before futoin_uv_free(), which otherwise finishes it and logs a warning
 * about what was still open.
 * @param f  the file (NULL: nothing happens)
 * @par Ownership
 * Ends one reference of the caller's.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
void futoin_uv_file_release(FutoInUvFile* f);
/**
 * @brief The path the file was opened with.
 * @param f  the file
 * @return its path (NULL for NULL f)
 * @par Ownership
 * Borrowed: valid while the caller holds a reference.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
const char* futoin_uv_file_path(const FutoInUvFile* f);
/**
 * @brief Whether the file is open: 0 once a futoin_uv_file_close() step
 * started on it (and for NULL), else 1.
 * @param f  the file
 * @return 1 or 0
 * @par Ownership
 * Reads only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
int futoin_uv_file_is_open(const FutoInUvFile* f);

/**
 * @brief Step: opens a regular file (uv_fs_open() on libuv's pool).
 *
 * O_NONBLOCK, O_NOCTTY and O_CLOEXEC are added to @p flags, and the file
 * is checked with fstat() before the step succeeds: like
 * futoin_uv_file_read(), only a regular file is kept open, so that no
 * request on it can hold a pool thread. Anything else is closed again and
 * refused with CommError "EISDIR: open PATH: is a directory" or "EFTYPE:
 * open PATH: not a regular file" ("ENXIO: open PATH: not a regular file
 * (socket or device)" when open() itself refuses).
 *
 * "file_open PATH" describes the wait. When the step is cancelled or
 * times out while open() runs on the pool, the step ends at once and the
 * descriptor that open() returns later is closed: nothing leaks.
 *
 * Errors: CommError with the libuv number (futoin_uv_errno()): "ENOENT:
 * open PATH", "EACCES: open PATH", "EEXIST: open PATH" (O_CREAT | O_EXCL),
 * the refusals above; InternalError "EINVAL: futoin_uv_file_open: path is
 * NULL" or "... mode M out of range (0..07777)"; out of memory:
 * InternalError "open: out of memory" (before anything is opened).
 * @param as     the flow
 * @param path   the file (not NULL)
 * @param flags  O_RDONLY, O_WRONLY or O_RDWR, with O_CREAT, O_EXCL,
 *               O_TRUNC, O_APPEND as open(2)
 * @param mode   permissions of a created file: 0..07777 (e.g. 0644)
 *
 * Success: arg0 = the file (futoin_uv_file_type; futoin_uv_arg_file()).
 * @par Ownership
 * path is copied. The value's reference is the next step's, dropped when
 * it returns: take one with futoin_uv_file_ref() to keep the file.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet. The file operations run on libuv's thread pool.
 */
void futoin_uv_file_open(FutoInAsyncSteps* as, const char* path, int flags, int mode);

/**
 * @brief Step: reads at most @p max bytes of a file, at an offset or at
 * the file's position (one uv_fs_read()).
 *
 * A step never reads more than @p max bytes, and holds a buffer of
 * max + 1 bytes while it runs: a loop of such steps reads a file of any
 * size in bounded memory (@ref md_RECIPES "docs/RECIPES.md", "Reading a
 * large file in chunks"). Fewer bytes come only at the end of the file;
 * an empty result means the end.
 *
 * Sequential (@p offset -1): the read starts at the position the handle
 * keeps (0 after open), which moves by the bytes read when the step
 * succeeds. A read that fails or is cancelled leaves it where it was. Run
 * one sequential step on a file at a time.
 *
 * "file_pread PATH" describes the wait; a cancel or timeout ends the step
 * at once, the request's late result is dropped.
 *
 * Errors: CommError "EBADF: pread PATH: file is closed" after a
 * futoin_uv_file_close() step, "EAGAIN: pread PATH: would block", other
 * read errors ("EIO: pread PATH"); InternalError "EINVAL: ..." for a NULL
 * f, an offset below -1 or @p max out of range; out of memory (the
 * buffer): InternalError "pread: out of memory".
 * @param as      the flow
 * @param f       the file
 * @param offset  the byte offset, or -1: the file's position
 * @param max     the most bytes: 0..UINT32_MAX - 1; 0: 65536
 *
 * Success: arg0 = the bytes (FTN_TYPE_UINT8 | FTN_TYPE_ARRAY, NUL after
 * them; futoin_uv_arg_bytes()).
 * @par Ownership
 * The step takes a reference to f when it is added. The bytes are the next
 * step's value: borrowed by it, freed by the engine when it returns.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet. The read runs on libuv's thread pool.
 */
void futoin_uv_file_pread(FutoInAsyncSteps* as, FutoInUvFile* f, int64_t offset, size_t max);

/**
 * @brief Step: writes @p len bytes to a file, at an offset or at the
 * file's position (uv_fs_write(), again after a short write).
 *
 * Sequential (@p offset -1): at the position the handle keeps, which moves
 * by the bytes written when the step succeeds (a file opened with O_APPEND
 * is appended to whatever the offset). "file_pwrite PATH" describes the
 * wait; a cancelled step ends at once, and what the pool was writing may
 * or may not reach the file.
 *
 * Errors: CommError "EBADF: pwrite PATH: file is closed" (also for a file
 * opened read-only: "EBADF: pwrite PATH"), "ENOSPC: pwrite PATH", "EFBIG:
 * pwrite PATH"; InternalError "EINVAL: ..." for a NULL f, an offset below
 * -1, NULL data with len > 0 or len out of range; out of memory (the
 * copy): InternalError "pwrite: out of memory".
 * @param as      the flow
 * @param f       the file
 * @param offset  the byte offset, or -1: the file's position
 * @param data    the bytes (copied now; NULL only with len 0)
 * @param len     how many: 0..UINT32_MAX - 1
 *
 * Success: arg0 = bytes written (FTN_TYPE_UINT64).
 * @par Ownership
 * data is copied when the step is added; the step takes a reference to f.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet. The write runs on libuv's thread pool.
 */
void futoin_uv_file_pwrite(FutoInAsyncSteps* as, FutoInUvFile* f, int64_t offset, const void* data,
        size_t len);

/**
 * @brief Step: fsync() of a file. "file_fsync PATH" describes the wait.
 *
 * Errors: CommError "EBADF: fsync PATH: file is closed", "EIO: fsync
 * PATH"; InternalError "EINVAL: futoin_uv_file_fsync: f is NULL"; out of
 * memory: InternalError "fsync: out of memory".
 * @param as  the flow
 * @param f   the file
 *
 * Success: no values.
 * @par Ownership
 * The step takes a reference to f when it is added.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_file_fsync(FutoInAsyncSteps* as, FutoInUvFile* f);

/**
 * @brief Step: fstat() of a file. "file_fstat PATH" describes the wait.
 *
 * Success: arg0 = size in bytes (FTN_TYPE_UINT64), arg1 = st_mode, type
 * bits included (FTN_TYPE_UINT32; S_ISDIR() and the like apply), arg2 =
 * the modification time in milliseconds since the epoch
 * (FTN_TYPE_INT64), as futoin_uv_stat().
 *
 * Errors: CommError "EBADF: fstat PATH: file is closed"; InternalError
 * "EINVAL: futoin_uv_file_fstat: f is NULL"; out of memory: InternalError
 * "fstat: out of memory".
 * @param as  the flow
 * @param f   the file
 * @par Ownership
 * The step takes a reference to f when it is added.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_file_fstat(FutoInAsyncSteps* as, FutoInUvFile* f);

/**
 * @brief Step: closes a file's descriptor (uv_fs_close()).
 *
 * The file counts as closed from when the step starts: steps on it that
 * start later fail with CommError "EBADF: OP PATH: file is closed". The
 * descriptor itself is closed once no request on it runs in libuv's pool
 * (a cancelled read that the pool still runs, say), so that its number is
 * never reused under such a request. A cancelled close step still closes
 * the descriptor. "file_close PATH" describes the wait. The handle lives
 * on until its last reference goes.
 *
 * Errors: CommError "EBADF: close PATH: file is closed" (closed already),
 * "EIO: close PATH"; InternalError "EINVAL: futoin_uv_file_close: f is
 * NULL"; out of memory: InternalError "close: out of memory" (the file
 * stays open).
 * @param as  the flow
 * @param f   the file
 *
 * Success: no values.
 * @par Ownership
 * The step takes a reference to f when it is added; the caller's own
 * references are unchanged.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_file_close(FutoInAsyncSteps* as, FutoInUvFile* f);

/**
 * @brief Step: stat() of a path (follows symbolic links). "stat PATH"
 * describes the wait.
 *
 * Success: arg0 = size (FTN_TYPE_UINT64), arg1 = st_mode (FTN_TYPE_UINT32),
 * arg2 = modification time in ms since the epoch (FTN_TYPE_INT64).
 *
 * Errors: CommError "ENOENT: stat PATH", "EACCES: stat PATH",
 * "ENOTDIR: stat PATH"; InternalError "EINVAL: futoin_uv_stat: path is
 * NULL"; out of memory: InternalError "stat: out of memory".
 * @param as    the flow
 * @param path  the path (not NULL); copied
 * @par Ownership
 * path is copied when the step is added.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_stat(FutoInAsyncSteps* as, const char* path);

/**
 * @brief Step: rename(from, to). "rename FROM" describes the wait.
 *
 * Errors: CommError "ENOENT: rename FROM", "EACCES: rename FROM", "EXDEV:
 * rename FROM", "ENOTEMPTY: rename FROM" (onto a non-empty directory);
 * InternalError "EINVAL: futoin_uv_rename: from is NULL" (or to); out of
 * memory: InternalError "rename: out of memory".
 * @param as    the flow
 * @param from  the existing path (not NULL)
 * @param to    the new path (not NULL); replaced if it exists
 *
 * Success: no values.
 * @par Ownership
 * Both paths are copied when the step is added.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_rename(FutoInAsyncSteps* as, const char* from, const char* to);

/**
 * @brief Step: unlink() of a path. "unlink PATH" describes the wait.
 *
 * Errors: CommError "ENOENT: unlink PATH", "EACCES: unlink PATH", "EISDIR:
 * unlink PATH" (a directory: futoin_uv_rmdir()); InternalError "EINVAL:
 * futoin_uv_unlink: path is NULL"; out of memory: InternalError "unlink:
 * out of memory".
 * @param as    the flow
 * @param path  the path (not NULL)
 *
 * Success: no values.
 * @par Ownership
 * path is copied when the step is added.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_unlink(FutoInAsyncSteps* as, const char* path);

/**
 * @brief Step: mkdir() of a path. "mkdir PATH" describes the wait.
 *
 * Errors: CommError "EEXIST: mkdir PATH", "ENOENT: mkdir PATH" (no parent),
 * "EACCES: mkdir PATH", "ENOSPC: mkdir PATH"; InternalError "EINVAL:
 * futoin_uv_mkdir: path is NULL" or "... mode M out of range (0..07777)";
 * out of memory: InternalError "mkdir: out of memory".
 * @param as    the flow
 * @param path  the directory (not NULL)
 * @param mode  its permissions, before the umask: 0..07777 (e.g. 0755)
 *
 * Success: no values.
 * @par Ownership
 * path is copied when the step is added.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_mkdir(FutoInAsyncSteps* as, const char* path, int mode);

/**
 * @brief Step: rmdir() of an empty directory. "rmdir PATH" describes the
 * wait.
 *
 * Errors: CommError "ENOTEMPTY: rmdir PATH", "ENOENT: rmdir PATH",
 * "ENOTDIR: rmdir PATH"; InternalError "EINVAL: futoin_uv_rmdir: path is
 * NULL"; out of memory: InternalError "rmdir: out of memory".
 * @param as    the flow
 * @param path  the directory (not NULL)
 *
 * Success: no values.
 * @par Ownership
 * path is copied when the step is added.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_rmdir(FutoInAsyncSteps* as, const char* path);

/**
 * @brief Step: the names in a directory (uv_fs_scandir(), without "." and
 * ".."). "readdir PATH" describes the wait.
 *
 * Success: arg0 = the names (FTN_TYPE_UINT8 | FTN_TYPE_ARRAY), each
 * followed by a NUL, its length counting those NULs (0 for an empty
 * directory); arg1 = how many names (FTN_TYPE_UINT32). Walk them with
 * @code
 * size_t len;
 * const char* names = futoin_uv_arg_bytes(args, 0, &len);
 * for (const char* n = names; n < names + len; n += strlen(n) + 1) { ... }
 * @endcode
 * The order is libuv's (not guaranteed sorted).
 *
 * Errors: CommError "ENOENT: readdir PATH", "ENOTDIR: readdir PATH",
 * "EACCES: readdir PATH"; InternalError "EINVAL: futoin_uv_readdir: path is
 * NULL"; out of memory (the copy of the names): InternalError "ENOMEM:
 * readdir PATH: out of memory", or "readdir: out of memory" at the start.
 * @param as    the flow
 * @param path  the directory (not NULL)
 * @par Ownership
 * path is copied when the step is added. The names are the next step's
 * value: borrowed by it, freed by the engine when it returns.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_readdir(FutoInAsyncSteps* as, const char* path);

/**
 * @brief Step: succeeds with no result after ms milliseconds (an AsyncTool
 * timer: no libuv handle per sleep).
 * @param as  the flow
 * @param ms  the delay: any uint32_t
 * @par Ownership
 * Nothing passes: the timer is the step's.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_sleep(FutoInAsyncSteps* as, uint32_t ms);

/* ------------------------------------------------------------------------ */
/* Signals                                                                   */

/** The most signals one futoin_uv_signal_wait() step waits for. */
#define FUTOIN_UV_SIGNALS_MAX 32u

/**
 * @brief Step: waits until one of a set of signals arrives.
 *
 * When the step starts it watches each signal of the set with a uv_signal_t
 * of its own, and it succeeds with the number of the first of them that
 * libuv delivers: arg0 = the signal number (FTN_TYPE_INT32), e.g. SIGINT.
 * Then, and when the step ends any other way (futoin_set_timeout() on the
 * step that adds it, root cancel, a failing sibling branch, break or
 * continue), every watcher of the step is stopped and closed at once:
 * nothing reaches the step afterwards, and their memory is released by
 * libuv's close callbacks (futoin_uv_free() finds no handle of it open).
 * A Timeout's error_info names the wait: "signal SIGINT SIGTERM".
 *
 * What libuv does with signals (uv_signal_start()), and so what a program
 * gets:
 *   - while a watcher of a signal exists anywhere in the process, libuv's
 *     own handler is installed for it, and every watcher of that signal,
 *     on every loop, gets each delivery: several steps that wait for the
 *     same signal all succeed with it;
 *   - when the last watcher of a signal stops, libuv puts back the
 *     default disposition (SIG_DFL, not the handler the program had): a
 *     signal that arrives while no step (and no uv_signal_t of the
 *     program) waits for it takes its default action, and SIGINT, SIGTERM,
 *     SIGHUP, SIGUSR1 or SIGUSR2 end the process. To catch a signal for the
 *     whole life of a program, keep a step waiting for it all along (a root
 *     of its own, as examples/uv/tcp_echo_server.c does for SIGINT and
 *     SIGTERM), or keep a uv_signal_t of your own started;
 *   - signals are not queued for a step: deliveries that come together
 *     (libuv hands them over on its next iteration) end the step once,
 *     with the first; another signal of the set that arrives with it is
 *     not kept for a later step;
 *   - a signal blocked in every thread (pthread_sigmask()) is not
 *     delivered until it is unblocked.
 * @param as      the flow
 * @param signals the signal numbers (copied now; duplicates are harmless)
 * @param count   1..FUTOIN_UV_SIGNALS_MAX
 *
 * Errors: InternalError "EINVAL: futoin_uv_signal_wait: ..." (with
 * futoin_uv_errno() UV_EINVAL) for signals NULL, a count out of range or a
 * number outside 1..64, refused when the step is added, and for a signal
 * that cannot be watched (SIGKILL, SIGSTOP, a number the platform lacks:
 * "EINVAL: signal SIGKILL") when it starts; CommError when libuv cannot
 * watch a signal for want of resources ("EMFILE: signal SIGINT").
 * @par Ownership
 * signals is copied when the step is added. The watchers are the step's,
 * closed when it ends; the result is a plain value.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet. The signal may come to any thread of the process: libuv
 * hands it to the loop thread.
 */
void futoin_uv_signal_wait(FutoInAsyncSteps* as, const int* signals, size_t count);

/* ------------------------------------------------------------------------ */
/* Child processes                                                           */

/** What a child's standard descriptor (FutoInUvSpawnOptions.stdio) is. */
enum FutoInUvStdio {
    /** The child shares this process's descriptor (the default: 0). */
    FUTOIN_UV_STDIO_INHERIT = 0,
    /** The child gets /dev/null. */
    FUTOIN_UV_STDIO_IGNORE = 1,
    /** A pipe to this process: a FutoInUvStream (futoin_uv_process_stdio()),
     * written for stdin, read for stdout and stderr. */
    FUTOIN_UV_STDIO_PIPE = 2
};

/** The grace period between the term signal and SIGKILL when
 * FutoInUvSpawnOptions.kill_grace_ms is 0. */
#define FUTOIN_UV_KILL_GRACE_MS_DEFAULT 5000u

/** What futoin_uv_spawn() starts; zero it, then set file (and what else
 * differs from the defaults). Only read during the call. */
typedef struct FutoInUvSpawnOptions {
    /** The program: a path, or a name looked up in PATH (execvp()). */
    const char* file;
    /** The arguments, argv[0] first, NULL-terminated; NULL: { file, NULL }. */
    const char* const* argv;
    /** The environment, "NAME=value" strings, NULL-terminated; NULL: this
     * process's own. */
    const char* const* env;
    /** The working directory; NULL: this process's. */
    const char* cwd;
    /** stdin, stdout, stderr: enum FutoInUvStdio each (0: inherit). */
    int stdio[3];
    /** After the term signal, how long the child may take to exit before
     * SIGKILL (ms); 0: FUTOIN_UV_KILL_GRACE_MS_DEFAULT. */
    uint32_t kill_grace_ms;
    /** The signal that asks the child to end; 0: SIGTERM. */
    int term_signal;
} FutoInUvSpawnOptions;

/**
 * @brief Starts a child process at once (uv_spawn(); not a step).
 *
 * The child runs opts->file with opts->argv, opts->env and opts->cwd; its
 * descriptors 0, 1 and 2 are inherited, /dev/null or pipes, as opts->stdio
 * says; every other descriptor of this process stays out of it (libuv
 * opens its own with O_CLOEXEC). A piped descriptor is a stream of the
 * process (futoin_uv_process_stdio()) that the read, write, shutdown and
 * close steps use as any other; "read pid 1234 stdout" describes a wait.
 * libuv reaps the child when it exits (SIGCHLD): futoin_uv_process_wait()
 * and futoin_uv_process_exited() tell how it ended.
 *
 * The kill policy, for a futoin_uv_process_wait() step that is cancelled
 * or times out, and for a process whose last reference is released while
 * the child runs: the child is sent opts->term_signal (SIGTERM), then
 * SIGKILL if it has not exited kill_grace_ms later; libuv reaps it either
 * way. Until then the process keeps futoin_uv_run() alive, and its memory
 * and handles stay: never a zombie, never a handle freed early.
 *
 * futoin_uv_free() kills (SIGKILL) and reaps every child still running at
 * once, waiting for each in waitpid() (SIGKILL cannot be caught: it is
 * short). A process still referenced then also gets a FUTOIN_LOG_WARNING
 * line "futoin_uv_free: child processes not released (killed and reaped)",
 * and its memory is lost: release every process before.
 * @param uv        the backend (NULL: UV_EINVAL)
 * @param opts      what to start (NULL, a NULL or empty file, a stdio mode
 *                  or a term_signal outside 0..64: UV_EINVAL)
 * @param uv_error  receives the libuv error on failure (may be NULL)
 * @return the process with one reference, or NULL: UV_EINVAL as above,
 *         UV_ENOMEM, or what uv_spawn() says: UV_ENOENT for a program that
 *         does not exist, UV_EACCES, UV_ENOTDIR or UV_ENOENT for a bad cwd,
 *         UV_EMFILE, UV_EAGAIN, ... (futoin_uv_errno() is for steps; this
 *         number is uv_error)
 * @par Ownership
 * The caller holds the reference: futoin_uv_process_release(). The
 * strings of opts are copied by libuv before the call returns.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvProcess* futoin_uv_spawn(FutoInUv* uv, const FutoInUvSpawnOptions* opts, int* uv_error);

/**
 * @brief Takes a reference to a process.
 * @param p  the process (NULL: NULL)
 * @return p
 * @par Ownership
 * The caller owes one futoin_uv_process_release() for it.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvProcess* futoin_uv_process_ref(FutoInUvProcess* p);

/**
 * @brief Drops one reference; the last one, while the child runs, ends it
 * by the kill policy (futoin_uv_spawn()).
 *
 * The process's memory and its streams' references go when the child has
 * exited and libuv has closed its handles.
 * @param p  the process (NULL: nothing happens)
 * @par Ownership
 * Ends one reference of the caller's. Streams of the process that the
 * caller took references to stay open until those are released.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
void futoin_uv_process_release(FutoInUvProcess* p);

/**
 * @brief A piped standard descriptor of the child as a stream.
 * @param p   the process
 * @param fd  0 (stdin: write to it), 1 (stdout) or 2 (stderr: read them)
 * @return the stream, or NULL: p NULL, fd not 0..2, or that descriptor not
 *         FUTOIN_UV_STDIO_PIPE
 * @par Ownership
 * Borrowed: the process holds a reference until it goes; take one
 * (futoin_uv_stream_ref()) to keep the stream longer, and pass such a
 * reference, not the borrowed one, to futoin_uv_close(). To send the
 * child an end of input, close stdin: futoin_uv_stream_close().
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
FutoInUvStream* futoin_uv_process_stdio(FutoInUvProcess* p, int fd);

/**
 * @brief The child's process id.
 * @param p  the process
 * @return the pid (also after the child exited); 0 for NULL
 * @par Ownership
 * Reads only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
long futoin_uv_process_pid(const FutoInUvProcess* p);

/**
 * @brief Sends a signal to the child (uv_process_kill()).
 * @param p       the process
 * @param signum  the signal (0 checks that the child exists)
 * @return 0; UV_EINVAL for NULL p or signum outside 0..64; UV_ESRCH once
 *         the child's exit was reported; another error of kill()
 * @par Ownership
 * Nothing passes.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
int futoin_uv_process_kill(FutoInUvProcess* p, int signum);

/**
 * @brief Whether the child's exit was reported, and how it ended.
 * @param p            the process
 * @param status       receives the exit status (0 when a signal ended
 *                     it); may be NULL
 * @param term_signal  receives the signal that ended it, or 0; may be NULL
 * @return 1 once the child exited (libuv reaped it); 0 while it runs, and
 *         for NULL (nothing written then)
 * @par Ownership
 * Reads only.
 * @par Thread
 * The backend's loop thread (the one that called futoin_uv_new()).
 */
int futoin_uv_process_exited(const FutoInUvProcess* p, int64_t* status, int* term_signal);

/**
 * @brief Step: waits until the child exits.
 *
 * Success: arg0 = the exit status (FTN_TYPE_INT64; 0 when a signal ended
 * the child), arg1 = the signal that ended it (FTN_TYPE_INT32; 0 for a
 * normal exit). A child that exited already completes the step at once.
 * "wait pid 1234 /bin/sh" describes the wait. When the step is cancelled
 * or times out (futoin_set_timeout() on the step that adds it, root cancel,
 * ...), the child is ended by the kill policy of futoin_uv_spawn() (term
 * signal, SIGKILL after the grace period) and reaped; nothing reaches the
 * step afterwards.
 *
 * Errors: InternalError "EINVAL: futoin_uv_process_wait: p is NULL" when
 * the step is added; InternalError "EBUSY: wait pid N FILE: another step
 * waits for it" (one wait step at a time per process); out of memory:
 * InternalError "wait: out of memory".
 * @param as  the flow
 * @param p   the process
 * @par Ownership
 * The step takes a reference to p when it is added, dropped when the step
 * that added it ends.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_process_wait(FutoInAsyncSteps* as, FutoInUvProcess* p);

/* ------------------------------------------------------------------------ */
/* TLS streams                                                               */

/** A TLS configuration (an OpenSSL SSL_CTX): the client or server side,
 * trusted certificates, an own certificate; reference counted (opaque). */
typedef struct FutoInUvTls FutoInUvTls;

/** futoin_uv_tls_new() flag: the server side (else a client). */
#define FUTOIN_UV_TLS_SERVER 0x1u
/** futoin_uv_tls_new() flag of a server: ask the client for a certificate
 * and verify one that is given (futoin_uv_tls_set_ca() names the CA). */
#define FUTOIN_UV_TLS_CLIENT_CERT 0x2u
/** futoin_uv_tls_new() flag of a server: the client must present a valid
 * certificate (implies FUTOIN_UV_TLS_CLIENT_CERT). */
#define FUTOIN_UV_TLS_CLIENT_CERT_REQUIRED 0x4u

/**
 * @brief Whether the backend was built with TLS streams (OpenSSL 3).
 *
 * Without them (CMake FUTOIN_WITH_TLS=OFF, or no OpenSSL at build time)
 * futoin_uv_tls_new() returns NULL with UV_ENOTSUP and
 * futoin_uv_tls_handshake() fails with InternalError "ENOTSUP:
 * futoin_uv_tls_handshake: built without TLS".
 * @return 1 when TLS streams are built in, else 0
 * @par Thread
 * Any thread.
 */
int futoin_uv_tls_available(void);

/**
 * @brief A new TLS configuration (not a step).
 *
 * TLS 1.2 and 1.3 only; renegotiation refused (SSL_OP_NO_RENEGOTIATION:
 * TLS 1.3 has none, and a TLS 1.2 peer asking for one gets a
 * no_renegotiation alert). A client verifies the server's certificate
 * chain against the CA of futoin_uv_tls_set_ca(), or the system's store
 * (OpenSSL's default paths) when none is set, and its name against the
 * host given to futoin_uv_tls_handshake(). A server needs
 * futoin_uv_tls_set_cert() before its first handshake.
 * @param flags     0 (a client), or FUTOIN_UV_TLS_SERVER, optionally with
 *                  FUTOIN_UV_TLS_CLIENT_CERT or
 *                  FUTOIN_UV_TLS_CLIENT_CERT_REQUIRED
 * @param uv_error  receives the error on failure (may be NULL)
 * @return the configuration with one reference, or NULL: UV_EINVAL
 *         (unknown flags, client certificate flags on a client), UV_ENOMEM
 *         (out of memory), UV_ENOTSUP (built without TLS)
 * @par Ownership
 * The caller holds the reference (futoin_uv_tls_release()); each TLS
 * stream holds one too, so it may be released while streams use it.
 * @par Thread
 * Any thread; a configuration in use by streams is changed only on their
 * loop's thread.
 */
FutoInUvTls* futoin_uv_tls_new(unsigned flags, int* uv_error);

/**
 * @brief Trusts the CA certificates of a PEM file (not a step).
 *
 * Clients: only these verify servers (the system store is then not used).
 * Servers: these verify client certificates.
 * @param t        the configuration
 * @param ca_file  a PEM file of one or more certificates
 * @return 0, UV_EINVAL (NULL argument), UV_ENOTSUP (built without TLS) or
 *         UV_EPROTO: the file could not be used; futoin_uv_tls_last_error()
 *         tells why
 * @par Ownership
 * ca_file is read during the call only.
 * @par Thread
 * As futoin_uv_tls_new().
 */
int futoin_uv_tls_set_ca(FutoInUvTls* t, const char* ca_file);

/**
 * @brief The own certificate (chain) and private key, from PEM files (not a step).
 *
 * Required for a server; a client presents it when the server asks.
 * @param t          the configuration
 * @param cert_file  a PEM file: the certificate, then any intermediates
 * @param key_file   a PEM file of its unencrypted private key
 * @return 0, UV_EINVAL (NULL argument), UV_ENOTSUP (built without TLS) or
 *         UV_EPROTO: unreadable, or the key does not match the
 *         certificate; futoin_uv_tls_last_error() tells why
 * @par Ownership
 * The files are read during the call only.
 * @par Thread
 * As futoin_uv_tls_new().
 */
int futoin_uv_tls_set_cert(FutoInUvTls* t, const char* cert_file, const char* key_file);

/**
 * @brief Why the last call on t failed: OpenSSL's reason.
 * @param t  the configuration (NULL: "")
 * @return e.g. "set_ca /x.pem: no such file", "" when nothing failed;
 *         valid until the next call on t
 * @par Thread
 * As futoin_uv_tls_new().
 */
const char* futoin_uv_tls_last_error(const FutoInUvTls* t);

/**
 * @brief The configuration's OpenSSL SSL_CTX, for settings not offered here.
 *
 * E.g. SSL_CTX_set_max_proto_version(), SSL_CTX_set_ciphersuites(), or a
 * certificate and key held in memory (SSL_CTX_use_certificate()). Change
 * it before the first handshake that uses it.
 * @param t  the configuration
 * @return an SSL_CTX*, or NULL (NULL t, built without TLS)
 * @par Ownership
 * Borrowed: valid while t is.
 * @par Thread
 * As futoin_uv_tls_new().
 */
void* futoin_uv_tls_ssl_ctx(FutoInUvTls* t);

/**
 * @brief Takes one more reference.
 * @param t  the configuration (NULL: nothing)
 * @return t
 * @par Thread
 * The thread that uses it (references are not atomic).
 */
FutoInUvTls* futoin_uv_tls_ref(FutoInUvTls* t);

/**
 * @brief Drops one reference; the last frees the configuration.
 * @param t  the configuration (NULL: nothing)
 * @par Thread
 * As futoin_uv_tls_ref().
 */
void futoin_uv_tls_release(FutoInUvTls* t);

/**
 * @brief Step: makes a connected stream a TLS stream, as client or server of t.
 *
 * Any connected stream: a TCP connection (futoin_uv_tcp_connect(),
 * futoin_uv_accept()) or a local one. Bytes the stream read ahead already
 * are taken as the start of the TLS input (a protocol that switches to TLS
 * in the middle works). OpenSSL runs over memory buffers: no call blocks;
 * the stream's own reads and writes carry the records.
 *
 * Success: no result, the handshake is complete. From then on the same
 * steps as for TCP read and write the plain text: futoin_uv_read_line()
 * and the other reads, futoin_uv_write(), futoin_uv_write_static(),
 * futoin_uv_try_write() (which, on an idle stream, takes all of the data:
 * what the kernel does not take at once is queued), futoin_uv_shutdown()
 * (a close_notify alert, then the FIN) and futoin_uv_close() (graceful: a
 * close_notify first). Their cancel, timeout and budget rules are those of
 * TCP; the input budget counts the decrypted buffer. A close_notify from
 * the peer reads as its end of stream ("EOF: read: connection closed by
 * peer"). A TLS failure after the handshake fails the read with CommError
 * "EPROTO: read: tls: <reason>" (e.g. "tlsv13 alert certificate required"
 * when a server refused the client's certificate, which TLS 1.3 tells
 * after the client's handshake completed) and a write with CommError
 * "EPROTO: write: tls: <reason>".
 *
 * "tls_handshake <peer>" describes the wait. Errors: CommError
 * "EPROTO: tls_handshake <peer>: <reason>", the reason from OpenSSL and,
 * for a refused certificate, why: "certificate verify failed: unable to
 * get local issuer certificate" (unknown CA), "certificate verify failed:
 * hostname mismatch", "peer did not return a certificate" (a server that
 * requires one); CommError "EOF: tls_handshake <peer>: connection closed
 * by peer"; CommError "EBUSY: tls_handshake <peer>: already TLS" (a second
 * handshake on the stream); CommError "EBADF: tls_handshake: stream
 * closed"; InternalError "EINVAL: futoin_uv_tls_handshake: ..." for NULL
 * s or t, and for a server configuration without a certificate;
 * InternalError "ENOMEM: tls_handshake: out of memory". After a failed or
 * cancelled handshake (timeout, cancel) the stream is closed: its reads
 * and writes fail.
 * @param as    the flow
 * @param s     a connected stream (not NULL)
 * @param t     the configuration (not NULL); a reference is taken
 * @param host  client: the server's name or IP address: sent as SNI (a
 *              name) and checked against its certificate; NULL: no SNI,
 *              no name check (the chain is still verified). Server:
 *              ignored. Copied.
 * @par Ownership
 * The step takes a reference to s and to t when it is added, dropped when
 * the step that added it ends; the stream keeps its own reference to t.
 * @par Thread
 * The backend's loop thread, where futoin_add() is allowed: inside an
 * execute callback or error handler of the flow as, or on a root that was
 * not executed yet.
 */
void futoin_uv_tls_handshake(FutoInAsyncSteps* as, FutoInUvStream* s, FutoInUvTls* t,
        const char* host);

/**
 * @brief Whether the stream is a TLS stream (futoin_uv_tls_handshake() started on it).
 * @param s  the stream (NULL: 0)
 * @return 1 for a TLS stream, else 0
 * @par Thread
 * The backend's loop thread.
 */
int futoin_uv_stream_is_tls(const FutoInUvStream* s);

/**
 * @brief The OpenSSL SSL object of a TLS stream, for inspection.
 *
 * E.g. SSL_get_version(), SSL_get0_peer_certificate(),
 * SSL_get0_alpn_selected(). Do not read, write or shut it down yourself:
 * the stream's steps do that.
 * @param s  the stream
 * @return an SSL*, or NULL (not a TLS stream, NULL s)
 * @par Ownership
 * Borrowed: valid while the stream is.
 * @par Thread
 * The backend's loop thread.
 */
void* futoin_uv_stream_ssl(FutoInUvStream* s);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_UV_H */
