/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief FutoIn AsyncSteps on libuv for C++17: a thin header-only layer over
 * futoin/uv.h and futoin/asyncsteps.hpp.
 *
 * - futoin::uv::Backend owns a FutoInUv (futoin_uv_new() / futoin_uv_free()):
 *   the FutoInLoop to create roots on, driven by a libuv loop;
 * - futoin::uv::Stream and futoin::uv::Server hold one reference each to a
 *   connection or a listening socket (futoin_uv_stream_ref() / _release(),
 *   futoin_uv_server_ref() / _release()): copying takes another reference,
 *   the destructor drops it;
 * - free functions add the backend's steps to a futoin::Steps
 *   (futoin::uv::read_line(as, s), futoin::uv::write(as, s, text), ...);
 *   their results reach the next step typed: a Stream, a Server, a
 *   std::string_view (lines, delimited reads, addresses), a
 *   futoin::uv::Bytes (exact and partial reads) or an int (signals).
 *
 * The rules of futoin/uv.h hold unchanged: everything on the backend's
 * loop thread; a step function is called where futoin_add() is allowed;
 * every Stream and Server is released (destroyed or reset()) and every
 * root freed before the Backend is destroyed; SIGPIPE ignored.
 *
 * Ownership, as futoin/uv.h hands references out:
 *   - a stream or server value that a step receives holds one reference,
 *     dropped when that step returns: a parameter of type Stream (or
 *     Server) takes a reference of its own, so the step may keep it (move
 *     it into a closure, a state variable, a connection object);
 *   - the step functions that use a stream (reads, writes, shutdown) take
 *     a reference of their own while they run: the caller's Stream may go
 *     right after the call;
 *   - close(as, std::move(s)) hands the Stream's reference to the close
 *     step (futoin_uv_close() takes over the caller's);
 *   - serve()'s callback receives each connection as a Stream holding its
 *     own reference: keep it (move or copy it) to keep the connection,
 *     else it is closed when the callback returns.
 */
#ifndef FUTOIN_UV_HPP
#define FUTOIN_UV_HPP

#include <futoin/asyncsteps.hpp>
#include <futoin/uv.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace futoin {

/** The C++ layer over the libuv backend (futoin/uv.h). */
namespace uv {

    /**
     * An owning backend: futoin_uv_new(), freed by futoin_uv_free() in the
     * destructor. Move-only.
     */
    class Backend {
    public:
        /**
         * @param uv_loop your libuv loop (kept yours: it must outlive the
         * Backend and the run after it, as futoin_uv_free() says), or NULL:
         * the backend makes and owns one
         */
        explicit Backend(uv_loop_t* uv_loop = nullptr)
            : uv_(futoin_uv_new(uv_loop))
        {
            if (!uv_) {
                detail::out_of_memory();
            }
        }
        Backend(const Backend&) = delete;
        Backend& operator=(const Backend&) = delete;
        /** @param o the backend to take over */
        Backend(Backend&& o) noexcept
            : uv_(o.uv_)
        {
            o.uv_ = nullptr;
        }
        /** @param o the backend to take over  @return *this */
        Backend& operator=(Backend&& o) noexcept
        {
            if (this != &o) {
                reset();
                uv_ = o.uv_;
                o.uv_ = nullptr;
            }
            return *this;
        }
        ~Backend()
        {
            reset();
        }
        /** Frees the backend now (futoin_uv_free()): free every root and
         * release every Stream and Server of it before. */
        void reset() noexcept
        {
            FutoInUv* u = uv_;
            uv_ = nullptr;
            futoin_uv_free(u);
        }
        /** @return the C backend */
        FutoInUv* handle() const noexcept
        {
            return uv_;
        }
        /** @return the FutoInLoop to create roots and sync objects on */
        FutoInLoop* loop() const noexcept
        {
            return futoin_uv_loop(uv_);
        }
        /** @return the libuv loop */
        uv_loop_t* uv_loop() const noexcept
        {
            return futoin_uv_uv_loop(uv_);
        }
        /** @return a new root on this backend's loop */
        Root root()
        {
            return Root(loop());
        }
        /** Runs until neither libuv nor the loop has work (futoin_uv_run()).
         * @return uv_run()'s result, or UV_EBUSY from inside a callback */
        int run() noexcept
        {
            return futoin_uv_run(uv_);
        }

    private:
        FutoInUv* uv_;
    };

    /**
     * One reference to a TCP connection. Copying takes another reference;
     * the destructor drops its own (the last one closes the connection).
     * Converts to FutoInUvStream* for the step functions and the C API.
     */
    class Stream {
    public:
        /** No stream. */
        Stream() noexcept = default;
        /** @param s a stream whose reference this object takes over
         * (adopt) @return the owner */
        static Stream adopt(FutoInUvStream* s) noexcept
        {
            return Stream(s);
        }
        /** @param s a borrowed stream  @return an owner of a new reference */
        static Stream ref(FutoInUvStream* s) noexcept
        {
            return Stream(futoin_uv_stream_ref(s));
        }
        /** @param o the stream to take another reference to */
        Stream(const Stream& o) noexcept
            : s_(futoin_uv_stream_ref(o.s_))
        {
        }
        /** @param o the stream whose reference to take over */
        Stream(Stream&& o) noexcept
            : s_(o.s_)
        {
            o.s_ = nullptr;
        }
        /** @param o the stream to refer to  @return *this */
        Stream& operator=(Stream o) noexcept
        {
            std::swap(s_, o.s_);
            return *this;
        }
        ~Stream()
        {
            futoin_uv_stream_release(s_);
        }
        /** Drops the reference now. */
        void reset() noexcept
        {
            FutoInUvStream* s = s_;
            s_ = nullptr;
            futoin_uv_stream_release(s);
        }
        /** Gives the reference up to the caller, who owes its release.
         * @return the stream */
        FutoInUvStream* release() noexcept
        {
            FutoInUvStream* s = s_;
            s_ = nullptr;
            return s;
        }
        /** @return the stream (borrowed) */
        FutoInUvStream* get() const noexcept
        {
            return s_;
        }
        /** @return the stream (borrowed) */
        operator FutoInUvStream*() const noexcept
        {
            return s_;
        }
        /** @return whether it holds a stream */
        explicit operator bool() const noexcept
        {
            return s_ != nullptr;
        }
        /** @return the peer, "host:port" ("" when unknown) */
        std::string_view peer() const noexcept
        {
            return futoin_uv_stream_peer(s_);
        }
        /** @return whether the connection is open */
        bool is_open() const noexcept
        {
            return futoin_uv_stream_is_open(s_) != 0;
        }
        /** Closes the connection now (futoin_uv_stream_close()); the
         * reference stays. */
        void close_now() noexcept
        {
            futoin_uv_stream_close(s_);
        }
        /** @return bytes received and not yet read by a step */
        std::size_t buffered() const noexcept
        {
            return futoin_uv_stream_buffered(s_);
        }
        /** @return the libuv handle (borrowed: never close it) */
        uv_tcp_t* uv_handle() const noexcept
        {
            return futoin_uv_stream_handle(s_);
        }

    private:
        explicit Stream(FutoInUvStream* s) noexcept
            : s_(s)
        {
        }
        FutoInUvStream* s_ = nullptr;
    };

    /**
     * One reference to a listening socket, as Stream is to a connection:
     * the last reference stops listening. Converts to FutoInUvServer*.
     */
    class Server {
    public:
        /** No server. */
        Server() noexcept = default;
        /** @param s a server whose reference this object takes over
         * @return the owner */
        static Server adopt(FutoInUvServer* s) noexcept
        {
            return Server(s);
        }
        /** @param s a borrowed server  @return an owner of a new reference */
        static Server ref(FutoInUvServer* s) noexcept
        {
            return Server(futoin_uv_server_ref(s));
        }
        /**
         * Binds and listens now (futoin_uv_server_new_ex()).
         * @param b the backend  @param host a numeric address (NULL or "":
         * 127.0.0.1)  @param port 0..65535 (0: any free port)
         * @param backlog 0: 511  @param flags 0 or FUTOIN_UV_SERVER_REUSEPORT
         * @param uv_error receives the libuv error on failure (may be NULL)
         * @return the server, empty on failure
         */
        static Server listen(Backend& b, const char* host, unsigned port, int backlog = 0,
                unsigned flags = 0, int* uv_error = nullptr) noexcept
        {
            return Server(futoin_uv_server_new_ex(b.handle(), host, port, backlog, flags,
                    uv_error));
        }
        /** @param o the server to take another reference to */
        Server(const Server& o) noexcept
            : s_(futoin_uv_server_ref(o.s_))
        {
        }
        /** @param o the server whose reference to take over */
        Server(Server&& o) noexcept
            : s_(o.s_)
        {
            o.s_ = nullptr;
        }
        /** @param o the server to refer to  @return *this */
        Server& operator=(Server o) noexcept
        {
            std::swap(s_, o.s_);
            return *this;
        }
        ~Server()
        {
            futoin_uv_server_release(s_);
        }
        /** Drops the reference now. */
        void reset() noexcept
        {
            FutoInUvServer* s = s_;
            s_ = nullptr;
            futoin_uv_server_release(s);
        }
        /** @return the server (borrowed) */
        FutoInUvServer* get() const noexcept
        {
            return s_;
        }
        /** @return the server (borrowed) */
        operator FutoInUvServer*() const noexcept
        {
            return s_;
        }
        /** @return whether it holds a server */
        explicit operator bool() const noexcept
        {
            return s_ != nullptr;
        }
        /** @return the bound port */
        unsigned port() const noexcept
        {
            return futoin_uv_server_port(s_);
        }
        /** Stops listening now (futoin_uv_server_close()): a pending accept
         * or serve() fails with CommError "ECANCELED"; references stay. */
        void close() noexcept
        {
            futoin_uv_server_close(s_);
        }

    private:
        explicit Server(FutoInUvServer* s) noexcept
            : s_(s)
        {
        }
        FutoInUvServer* s_ = nullptr;
    };

    /**
     * Bytes a read step delivered (read_exact(), read_some(); a string
     * value too): borrowed from the value, valid until the receiving step
     * returns, like a std::string_view parameter.
     */
    struct Bytes {
        const char* data = nullptr; /**< the bytes (NUL after them) */
        std::size_t size = 0;       /**< their number */
        /** @return them as a view */
        std::string_view view() const noexcept
        {
            return std::string_view(data, size);
        }
    };

    /**
     * The libuv error number of the error being handled (futoin_uv_errno()).
     * @param as the flow in its error handler  @return UV_E*, or 0
     */
    inline int uv_errno(Steps& as) noexcept
    {
        return futoin_uv_errno(as.handle());
    }

    /* ---- steps: each adds ONE step to as (see the C function's comment) --- */

    /** Connects (futoin_uv_tcp_connect()); the next step receives a Stream.
     * @param as the flow  @param host address or name  @param port 1..65535 */
    inline void tcp_connect(Steps& as, const std::string& host, unsigned port)
    {
        futoin_uv_tcp_connect(as.handle(), host.c_str(), port);
    }
    /** Binds and listens when the step runs (futoin_uv_tcp_listen()); the
     * next step receives a Server. @param as the flow  @param host numeric
     * address ("": 127.0.0.1)  @param port 0..65535  @param backlog 0: 511 */
    inline void tcp_listen(Steps& as, const std::string& host, unsigned port, int backlog = 0)
    {
        futoin_uv_tcp_listen(as.handle(), host.c_str(), port, backlog);
    }
    /** Waits for one connection (futoin_uv_accept()); the next step
     * receives a Stream. @param as the flow  @param srv the server */
    inline void accept(Steps& as, FutoInUvServer* srv)
    {
        futoin_uv_accept(as.handle(), srv);
    }

    namespace impl {
        template <class F> inline void serve_thunk(void* data, FutoInUvStream* s) noexcept
        {
            F* f = static_cast<F*>(data);
            futoin::detail::guarded_quiet("exception from a uv::serve() callback",
                    [&] { (*f)(Stream::ref(s)); });
        }
    }

    /**
     * An accept loop (futoin_uv_serve()) that calls cb(Stream) for each
     * connection, on the loop thread: start a root per connection there.
     * It ends only with an error (CommError "ECANCELED: accept: server
     * closed" once the server is closed) or a cancel. The closure lives in
     * the stack() memory of a step around the serve step, destroyed with
     * it; an exception from cb is logged and dropped.
     * @param as the flow  @param srv the server  @param cb the callback
     */
    template <class F> inline void serve(Steps& as, FutoInUvServer* srv, F&& cb)
    {
        using FD = std::decay_t<F>;
        as.add([srv = Server::ref(srv), cb = FD(std::forward<F>(cb))](Steps& as) mutable {
            FD* f = as.stack<FD>(std::move(cb));
            if (!f) {
                as.error(FUTOIN_INTERNAL_ERROR, "ENOMEM: serve: out of memory");
                return; /* -fno-exceptions: error() returns */
            }
            futoin_uv_serve(as.handle(), srv, &impl::serve_thunk<FD>, f);
        });
    }

    /** Reads a line (futoin_uv_read_line()); the next step receives it as
     * std::string_view, without "\n" or "\r\n". @param as the flow
     * @param s the stream  @param max_len the most bytes (0: 64 KiB) */
    inline void read_line(Steps& as, FutoInUvStream* s, std::size_t max_len = 0)
    {
        futoin_uv_read_line(as.handle(), s, max_len);
    }
    /** Reads up to and including delim (futoin_uv_read_until()); the next
     * step receives a std::string_view. @param as the flow  @param s the
     * stream  @param delim the delimiter  @param max_len (0: 64 KiB) */
    inline void read_until(Steps& as, FutoInUvStream* s, const std::string& delim,
            std::size_t max_len = 0)
    {
        futoin_uv_read_until(as.handle(), s, delim.c_str(), max_len);
    }
    /** Reads exactly n bytes (futoin_uv_read_exact()); the next step
     * receives Bytes. @param as the flow  @param s the stream  @param n */
    inline void read_exact(Steps& as, FutoInUvStream* s, std::size_t n)
    {
        futoin_uv_read_exact(as.handle(), s, n);
    }
    /** Reads what is there, at least a byte (futoin_uv_read_some()); the
     * next step receives Bytes. @param as the flow  @param s the stream
     * @param max the most bytes (0: 64 KiB) */
    inline void read_some(Steps& as, FutoInUvStream* s, std::size_t max = 0)
    {
        futoin_uv_read_some(as.handle(), s, max);
    }
    /** Waits until a byte is buffered (futoin_uv_read_wait()), consuming
     * nothing. @param as the flow  @param s the stream */
    inline void read_wait(Steps& as, FutoInUvStream* s)
    {
        futoin_uv_read_wait(as.handle(), s);
    }
    /** Writes a copy of data (futoin_uv_write(): copied when the step is
     * added, so a temporary std::string is fine). @param as the flow
     * @param s the stream  @param data the bytes */
    inline void write(Steps& as, FutoInUvStream* s, std::string_view data)
    {
        futoin_uv_write(as.handle(), s, data.data(), data.size());
    }
    /** Writes data without a copy (futoin_uv_write_static()): it must stay
     * valid and unchanged until the stream is closed (a literal, a static
     * table). @param as the flow  @param s the stream  @param data the bytes */
    inline void write_static(Steps& as, FutoInUvStream* s, std::string_view data)
    {
        futoin_uv_write_static(as.handle(), s, data.data(), data.size());
    }
    /** Flushes and sends FIN (futoin_uv_shutdown()). @param as the flow
     * @param s the stream */
    inline void shutdown(Steps& as, FutoInUvStream* s)
    {
        futoin_uv_shutdown(as.handle(), s);
    }
    /** Makes s a TLS stream (futoin_uv_tls_handshake(), docs/TLS.md); the
     * steps above then read and write its plain text.
     * @param as the flow  @param s a connected stream  @param t the TLS
     * configuration  @param host client: the server's name or address to
     * check and send as SNI (empty: none); server: ignored */
    inline void tls_handshake(Steps& as, FutoInUvStream* s, FutoInUvTls* t,
            const std::string& host = std::string())
    {
        futoin_uv_tls_handshake(as.handle(), s, t, host.empty() ? nullptr : host.c_str());
    }
    /** Closes the stream (futoin_uv_close()), which takes over s's
     * reference. @param as the flow  @param s the stream (moved in)
     * @param graceful flush queued writes first */
    inline void close(Steps& as, Stream s, bool graceful = true)
    {
        futoin_uv_close(as.handle(), s.release(), graceful ? 1 : 0);
    }
    /** Resolves a name (futoin_uv_resolve()); the next step receives
     * (std::string_view first, std::uint32_t count, std::string_view all).
     * @param as the flow  @param host the name */
    inline void resolve(Steps& as, const std::string& host)
    {
        futoin_uv_resolve(as.handle(), host.c_str());
    }
    /** Sleeps (futoin_uv_sleep()), d rounded up to ms and capped at
     * UINT32_MAX. @param as the flow  @param d the delay */
    template <class Rep, class Period>
    inline void sleep(Steps& as, std::chrono::duration<Rep, Period> d)
    {
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
        std::uint32_t t = 0;
        if (ms > 0) {
            t = ms >= static_cast<decltype(ms)>(std::numeric_limits<std::uint32_t>::max())
                    ? std::numeric_limits<std::uint32_t>::max()
                    : static_cast<std::uint32_t>(ms);
        }
        futoin_uv_sleep(as.handle(), t);
    }
    /** Waits for one of signals (futoin_uv_signal_wait()); the next step
     * receives its number as int. @param as the flow  @param signals the
     * signal numbers (1..FUTOIN_UV_SIGNALS_MAX of them) */
    inline void signal_wait(Steps& as, std::initializer_list<int> signals)
    {
        futoin_uv_signal_wait(as.handle(), signals.begin(), signals.size());
    }

} // namespace uv

namespace detail {

    /* Result values of the backend as step parameters. */
    template <> struct ArgConv<uv::Stream> {
        static constexpr const char* name = "futoin::uv::Stream";
        static Match match(const FutoInBinaryValue& v) noexcept
        {
            return v.type == &futoin_uv_stream_type ? Match::ok : Match::wrong_type;
        }
        static uv::Stream get(const FutoInBinaryValue& v) noexcept
        {
            return uv::Stream::ref(static_cast<FutoInUvStream*>(v.custom_data));
        }
    };
    template <> struct ArgConv<uv::Server> {
        static constexpr const char* name = "futoin::uv::Server";
        static Match match(const FutoInBinaryValue& v) noexcept
        {
            return v.type == &futoin_uv_server_type ? Match::ok : Match::wrong_type;
        }
        static uv::Server get(const FutoInBinaryValue& v) noexcept
        {
            return uv::Server::ref(static_cast<FutoInUvServer*>(v.custom_data));
        }
    };
    template <> struct ArgConv<uv::Bytes> {
        static constexpr const char* name = "futoin::uv::Bytes";
        static Match match(const FutoInBinaryValue& v) noexcept
        {
            const int f = flags_of(v);
            return f == FTN_TYPE_STRING || f == (FTN_TYPE_UINT8 | FTN_TYPE_ARRAY)
                    ? Match::ok
                    : Match::wrong_type;
        }
        static uv::Bytes get(const FutoInBinaryValue& v) noexcept
        {
            uv::Bytes b;
            b.data = static_cast<const char*>(v.p);
            b.size = v.length;
            return b;
        }
    };

} // namespace detail

} // namespace futoin

#endif /* FUTOIN_UV_HPP */
