/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief FutoIn AsyncSteps on libuv for C++17: a thin header-only layer over
 * futoin/uv.h and futoin/asyncsteps.hpp.
 *
 * - futoin::uv::Backend owns a FutoInUv (futoin_uv_new() / futoin_uv_free()):
 *   the FutoInLoop to create roots on, driven by a libuv loop;
 * - futoin::uv::Stream (a TCP connection, a Unix socket, a pipe, a
 *   child's stdio), futoin::uv::Server (TCP or Unix domain),
 *   futoin::uv::Udp, futoin::uv::File and futoin::uv::Process hold one
 *   reference each to their C object (futoin_uv_stream_ref() / _release()
 *   and the like): copying takes another reference, the destructor drops
 *   it;
 * - free functions add the backend's steps to a futoin::Steps
 *   (futoin::uv::read_line(as, s), futoin::uv::write(as, s, text),
 *   futoin::uv::udp_recv(as, u), futoin::uv::stat(as, path), ...); their
 *   results reach the next step typed: a Stream, a Server, a Udp, a File,
 *   a std::string_view (lines, delimited reads, addresses), a
 *   futoin::uv::Bytes (reads, files, datagrams), an int (signals), a
 *   std::uint64_t (bytes written), or a record of several values as one
 *   parameter: futoin::uv::Datagram (bytes, sender's address and port),
 *   futoin::uv::Stat (size, mode, time), futoin::uv::Exit (status,
 *   signal), futoin::uv::DirNames (a directory's names); a step may take
 *   the record's values as separate parameters instead;
 * - strings go in as futoin::uv::CStr: a const char*, a std::string or a
 *   std::string_view (copied with a NUL after it); one with a NUL inside
 *   is passed as NULL, which the C step refuses;
 * - each step function is one call of its C function: nothing is
 *   allocated and nothing wrapped around it, so it costs what the C step
 *   costs (a std::string_view is copied to the stack first, to the heap
 *   beyond 127 bytes; a std::string is searched for a NUL).
 *
 * The rules of futoin/uv.h hold unchanged: everything on the backend's
 * loop thread; a step function is called where futoin_add() is allowed;
 * every Stream, Server, Udp, File and Process is released (destroyed or
 * reset()) and every root freed before the Backend is destroyed; SIGPIPE
 * ignored. The errors (codes, error_info, uv_errno()) are the C steps'.
 *
 * Ownership, as futoin/uv.h hands references out:
 *   - a stream, server, UDP socket or file value that a step receives
 *     holds one reference, dropped when that step returns: a parameter of
 *     type Stream (or Server, Udp, File) takes a reference of its own, so
 *     the step may keep it (move it into a closure, a state variable, a
 *     connection object);
 *   - the step functions that use a stream, a socket, a file or a process
 *     (reads, writes, shutdown, udp_send(), file_pread(), process_wait(),
 *     ...) take a reference of their own while they run: the caller's
 *     object may go right after the call;
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
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <sys/stat.h>

namespace futoin {

/** The C++ layer over the libuv backend (futoin/uv.h). */
namespace uv {

    /** @cond FUTOIN_DETAIL */
    namespace impl {
        /* d in ms, rounded up, capped at UINT32_MAX; 0 for d <= 0. */
        template <class Rep, class Period>
        inline std::uint32_t to_ms(std::chrono::duration<Rep, Period> d) noexcept
        {
            const auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
            if (ms <= 0) {
                return 0;
            }
            return ms >= static_cast<decltype(ms)>(std::numeric_limits<std::uint32_t>::max())
                    ? std::numeric_limits<std::uint32_t>::max()
                    : static_cast<std::uint32_t>(ms);
        }
    }
    /** @endcond */

    /**
     * A string argument that the C API reads as NUL-terminated: a
     * `const char*` (passed as it is, NULL too), a `std::string` (its
     * c_str()) or a `std::string_view`, copied with a NUL after it (on the
     * stack up to 127 bytes). The C functions copy what they keep, so a
     * temporary is fine. A `std::string` or `std::string_view` that
     * contains a NUL is passed as NULL, so that the step fails with
     * InternalError "EINVAL: ...: path is NULL" rather than act on a
     * shorter name.
     */
    class CStr {
    public:
        /** @param s a C string, or NULL (passed on as NULL) */
        CStr(const char* s) noexcept
            : p_(s)
        {
        }
        /** @param s a string (borrowed for the call; NULL if it contains
         * a NUL) */
        CStr(const std::string& s) noexcept
            : p_(std::memchr(s.data(), '\0', s.size()) ? nullptr : s.c_str())
        {
        }
        /** @param s a view, copied with a NUL after it */
        CStr(std::string_view s)
        {
            if (s.find('\0') != std::string_view::npos) {
                return; /* NULL: refused by the C function */
            }
            char* out = small_;
            if (s.size() >= sizeof(small_)) {
                heap_ = static_cast<char*>(std::malloc(s.size() + 1));
                if (!heap_) {
                    futoin::detail::out_of_memory();
                }
                out = heap_;
            }
            if (!s.empty()) {
                std::memcpy(out, s.data(), s.size());
            }
            out[s.size()] = '\0';
            p_ = out;
        }
        CStr(const CStr&) = delete;
        CStr& operator=(const CStr&) = delete;
        ~CStr()
        {
            std::free(heap_);
        }
        /** @return the NUL-terminated string, or NULL */
        const char* c_str() const noexcept
        {
            return p_;
        }

    private:
        const char* p_ = nullptr;
        char* heap_ = nullptr;
        char small_[128];
    };

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
     * One reference to a bound UDP socket (futoin_uv_udp_new(),
     * udp_bind()), as Stream is to a connection: copying takes another
     * reference, the destructor drops its own (the last one closes the
     * socket). Converts to FutoInUvUdp*.
     */
    class Udp {
    public:
        /** No socket. */
        Udp() noexcept = default;
        /** @param u a socket whose reference this object takes over
         * @return the owner */
        static Udp adopt(FutoInUvUdp* u) noexcept
        {
            return Udp(u);
        }
        /** @param u a borrowed socket  @return an owner of a new reference */
        static Udp ref(FutoInUvUdp* u) noexcept
        {
            return Udp(futoin_uv_udp_ref(u));
        }
        /**
         * Binds now (futoin_uv_udp_new()).
         * @param b the backend  @param host a numeric address (NULL or "":
         * 127.0.0.1; "0.0.0.0" or "::" for every interface)
         * @param port 0..65535 (0: any free port)  @param flags 0,
         * FUTOIN_UV_UDP_REUSEADDR, FUTOIN_UV_UDP_IPV6ONLY
         * @param uv_error receives the libuv error on failure (may be NULL)
         * @return the socket, empty on failure
         */
        static Udp bind(Backend& b, CStr host, unsigned port, unsigned flags = 0,
                int* uv_error = nullptr) noexcept
        {
            return Udp(futoin_uv_udp_new(b.handle(), host.c_str(), port, flags, uv_error));
        }
        /** @param o the socket to take another reference to */
        Udp(const Udp& o) noexcept
            : u_(futoin_uv_udp_ref(o.u_))
        {
        }
        /** @param o the socket whose reference to take over */
        Udp(Udp&& o) noexcept
            : u_(o.u_)
        {
            o.u_ = nullptr;
        }
        /** @param o the socket to refer to  @return *this */
        Udp& operator=(Udp o) noexcept
        {
            std::swap(u_, o.u_);
            return *this;
        }
        ~Udp()
        {
            futoin_uv_udp_release(u_);
        }
        /** Drops the reference now. */
        void reset() noexcept
        {
            FutoInUvUdp* u = u_;
            u_ = nullptr;
            futoin_uv_udp_release(u);
        }
        /** Gives the reference up to the caller, who owes its release.
         * @return the socket */
        FutoInUvUdp* release() noexcept
        {
            FutoInUvUdp* u = u_;
            u_ = nullptr;
            return u;
        }
        /** @return the socket (borrowed) */
        FutoInUvUdp* get() const noexcept
        {
            return u_;
        }
        /** @return the socket (borrowed) */
        operator FutoInUvUdp*() const noexcept
        {
            return u_;
        }
        /** @return whether it holds a socket */
        explicit operator bool() const noexcept
        {
            return u_ != nullptr;
        }
        /** @return the bound port */
        unsigned port() const noexcept
        {
            return futoin_uv_udp_port(u_);
        }
        /** @return the datagrams received and queued for receive steps */
        std::size_t queued() const noexcept
        {
            return futoin_uv_udp_queued(u_);
        }
        /** Closes the socket now (futoin_uv_udp_close()); a waiting receive
         * fails with CommError "ECANCELED: ..."; the reference stays. */
        void close() noexcept
        {
            futoin_uv_udp_close(u_);
        }
        /**
         * Sets the default peer (futoin_uv_udp_connect()): only its
         * datagrams are received, udp_send() without an address goes to it.
         * @param host a numeric address  @param port 1..65535
         * @return 0 or a negative libuv error (UV_EISCONN when one is set)
         */
        int connect(CStr host, unsigned port) noexcept
        {
            return futoin_uv_udp_connect(u_, host.c_str(), port);
        }
        /** Removes the default peer. @return 0 or a negative libuv error */
        int disconnect() noexcept
        {
            return futoin_uv_udp_connect(u_, nullptr, 0);
        }
        /** Joins a multicast group (futoin_uv_udp_join()).
         * @param group its numeric address  @param iface the local
         * interface's address, or NULL  @return 0 or a negative libuv error */
        int join(CStr group, CStr iface = nullptr) noexcept
        {
            return futoin_uv_udp_join(u_, group.c_str(), iface.c_str());
        }
        /** Leaves a multicast group (futoin_uv_udp_leave()).
         * @param group its numeric address  @param iface as for join()
         * @return 0 or a negative libuv error */
        int leave(CStr group, CStr iface = nullptr) noexcept
        {
            return futoin_uv_udp_leave(u_, group.c_str(), iface.c_str());
        }
        /** @return the libuv handle (borrowed: never close it) */
        uv_udp_t* uv_handle() const noexcept
        {
            return futoin_uv_udp_handle(u_);
        }

    private:
        explicit Udp(FutoInUvUdp* u) noexcept
            : u_(u)
        {
        }
        FutoInUvUdp* u_ = nullptr;
    };

    /**
     * One reference to an open regular file (file_open()), as Stream is to
     * a connection: the last reference closes a descriptor that no
     * file_close() step closed. Converts to FutoInUvFile*.
     */
    class File {
    public:
        /** No file. */
        File() noexcept = default;
        /** @param f a file whose reference this object takes over
         * @return the owner */
        static File adopt(FutoInUvFile* f) noexcept
        {
            return File(f);
        }
        /** @param f a borrowed file  @return an owner of a new reference */
        static File ref(FutoInUvFile* f) noexcept
        {
            return File(futoin_uv_file_ref(f));
        }
        /** @param o the file to take another reference to */
        File(const File& o) noexcept
            : f_(futoin_uv_file_ref(o.f_))
        {
        }
        /** @param o the file whose reference to take over */
        File(File&& o) noexcept
            : f_(o.f_)
        {
            o.f_ = nullptr;
        }
        /** @param o the file to refer to  @return *this */
        File& operator=(File o) noexcept
        {
            std::swap(f_, o.f_);
            return *this;
        }
        ~File()
        {
            futoin_uv_file_release(f_);
        }
        /** Drops the reference now. */
        void reset() noexcept
        {
            FutoInUvFile* f = f_;
            f_ = nullptr;
            futoin_uv_file_release(f);
        }
        /** Gives the reference up to the caller, who owes its release.
         * @return the file */
        FutoInUvFile* release() noexcept
        {
            FutoInUvFile* f = f_;
            f_ = nullptr;
            return f;
        }
        /** @return the file (borrowed) */
        FutoInUvFile* get() const noexcept
        {
            return f_;
        }
        /** @return the file (borrowed) */
        operator FutoInUvFile*() const noexcept
        {
            return f_;
        }
        /** @return whether it holds a file */
        explicit operator bool() const noexcept
        {
            return f_ != nullptr;
        }
        /** @return the path it was opened with ("" without a file) */
        std::string_view path() const noexcept
        {
            const char* p = futoin_uv_file_path(f_);
            return p ? std::string_view(p) : std::string_view();
        }
        /** @return false once a file_close() step started on it */
        bool is_open() const noexcept
        {
            return futoin_uv_file_is_open(f_) != 0;
        }

    private:
        explicit File(FutoInUvFile* f) noexcept
            : f_(f)
        {
        }
        FutoInUvFile* f_ = nullptr;
    };

    /** What a child's standard descriptor is (FutoInUvStdio). */
    enum class Stdio : int {
        inherit = FUTOIN_UV_STDIO_INHERIT, /**< shares this process's */
        ignore = FUTOIN_UV_STDIO_IGNORE,   /**< /dev/null */
        pipe = FUTOIN_UV_STDIO_PIPE        /**< a pipe: Process::stdio() */
    };

    /** How a child ended: process_wait()'s result, Process::exited(). */
    struct Exit {
        std::int64_t status = 0; /**< the exit status (0 when a signal ended it) */
        int signal = 0;          /**< the signal that ended it, or 0 */
        /** @return whether it exited by itself with status 0 */
        bool ok() const noexcept
        {
            return status == 0 && signal == 0;
        }
    };

    /**
     * What Process::spawn() starts (the C++ form of FutoInUvSpawnOptions;
     * the strings are copied during the call).
     */
    struct SpawnOptions {
        std::string file;              /**< a path, or a name looked up in PATH */
        std::vector<std::string> args; /**< argv, argv[0] first; empty: { file } */
        /** "NAME=value" strings; empty optional: this process's environment */
        std::optional<std::vector<std::string>> env;
        std::string cwd; /**< the working directory; "": this process's */
        /** stdin, stdout, stderr */
        Stdio stdio[3] = { Stdio::inherit, Stdio::inherit, Stdio::inherit };
        /** from the term signal to SIGKILL when a wait is given up or the
         * last reference goes (rounded up to ms); zero: 5 s */
        std::chrono::milliseconds kill_grace{ 0 };
        int term_signal = 0; /**< the signal that asks the child to end; 0: SIGTERM */
    };

    /**
     * One reference to a child process (futoin_uv_spawn()). Copying takes
     * another reference; the last one, while the child runs, ends it by the
     * kill policy (term signal, SIGKILL after the grace period). Converts to
     * FutoInUvProcess*.
     */
    class Process {
    public:
        /** No process. */
        Process() noexcept = default;
        /** @param p a process whose reference this object takes over
         * @return the owner */
        static Process adopt(FutoInUvProcess* p) noexcept
        {
            return Process(p);
        }
        /** @param p a borrowed process  @return an owner of a new reference */
        static Process ref(FutoInUvProcess* p) noexcept
        {
            return Process(futoin_uv_process_ref(p));
        }
        /**
         * Starts a child now (futoin_uv_spawn()), without a copy of opts.
         * @param b the backend  @param opts the C options
         * @param uv_error receives the libuv error on failure (may be NULL)
         * @return the process, empty on failure
         */
        static Process spawn(Backend& b, const FutoInUvSpawnOptions& opts,
                int* uv_error = nullptr) noexcept
        {
            return Process(futoin_uv_spawn(b.handle(), &opts, uv_error));
        }
        /**
         * Starts a child now (futoin_uv_spawn()).
         * @param b the backend  @param opts what to start
         * @param uv_error receives the libuv error on failure (may be NULL):
         * UV_ENOENT for a program that does not exist, UV_EINVAL for an
         * empty file or a string that contains a NUL, ...
         * @return the process, empty on failure
         */
        static Process spawn(Backend& b, const SpawnOptions& opts, int* uv_error = nullptr)
        {
            std::vector<const char*> argv;
            std::vector<const char*> envp;
            bool bad = opts.file.find('\0') != std::string::npos
                    || opts.cwd.find('\0') != std::string::npos;
            argv.reserve(opts.args.size() + 1);
            for (const std::string& a : opts.args) {
                bad = bad || a.find('\0') != std::string::npos;
                argv.push_back(a.c_str());
            }
            argv.push_back(nullptr);
            if (opts.env) {
                envp.reserve(opts.env->size() + 1);
                for (const std::string& e : *opts.env) {
                    bad = bad || e.find('\0') != std::string::npos;
                    envp.push_back(e.c_str());
                }
                envp.push_back(nullptr);
            }
            if (bad) {
                if (uv_error) {
                    *uv_error = UV_EINVAL;
                }
                return Process();
            }
            FutoInUvSpawnOptions o;
            std::memset(&o, 0, sizeof(o));
            o.file = opts.file.c_str();
            o.argv = opts.args.empty() ? nullptr : argv.data();
            o.env = opts.env ? envp.data() : nullptr;
            o.cwd = opts.cwd.empty() ? nullptr : opts.cwd.c_str();
            for (int i = 0; i < 3; ++i) {
                o.stdio[i] = static_cast<int>(opts.stdio[i]);
            }
            o.kill_grace_ms = impl::to_ms(opts.kill_grace);
            o.term_signal = opts.term_signal;
            return spawn(b, o, uv_error);
        }
        /** @param o the process to take another reference to */
        Process(const Process& o) noexcept
            : p_(futoin_uv_process_ref(o.p_))
        {
        }
        /** @param o the process whose reference to take over */
        Process(Process&& o) noexcept
            : p_(o.p_)
        {
            o.p_ = nullptr;
        }
        /** @param o the process to refer to  @return *this */
        Process& operator=(Process o) noexcept
        {
            std::swap(p_, o.p_);
            return *this;
        }
        ~Process()
        {
            futoin_uv_process_release(p_);
        }
        /** Drops the reference now (the last one ends a running child by
         * the kill policy). */
        void reset() noexcept
        {
            FutoInUvProcess* p = p_;
            p_ = nullptr;
            futoin_uv_process_release(p);
        }
        /** Gives the reference up to the caller, who owes its release.
         * @return the process */
        FutoInUvProcess* release() noexcept
        {
            FutoInUvProcess* p = p_;
            p_ = nullptr;
            return p;
        }
        /** @return the process (borrowed) */
        FutoInUvProcess* get() const noexcept
        {
            return p_;
        }
        /** @return the process (borrowed) */
        operator FutoInUvProcess*() const noexcept
        {
            return p_;
        }
        /** @return whether it holds a process */
        explicit operator bool() const noexcept
        {
            return p_ != nullptr;
        }
        /** @return the child's pid (also after it exited); 0 without one */
        long pid() const noexcept
        {
            return futoin_uv_process_pid(p_);
        }
        /** Sends a signal (futoin_uv_process_kill()). @param signum the
         * signal (0: checks the child exists)  @return 0, or a negative
         * libuv error (UV_ESRCH once its exit was reported) */
        int kill(int signum) const noexcept
        {
            return futoin_uv_process_kill(p_, signum);
        }
        /** @return how the child ended, or nothing while it runs */
        std::optional<Exit> exited() const noexcept
        {
            Exit e;
            std::int64_t status = 0;
            if (!futoin_uv_process_exited(p_, &status, &e.signal)) {
                return std::nullopt;
            }
            e.status = status;
            return e;
        }
        /**
         * A piped standard descriptor as a Stream of its own reference
         * (futoin_uv_process_stdio()): write to 0, read 1 and 2.
         * @param fd 0, 1 or 2  @return the stream, empty when that
         * descriptor is not Stdio::pipe
         */
        Stream stdio(int fd) const noexcept
        {
            return Stream::ref(futoin_uv_process_stdio(p_, fd));
        }
        /** Sends the child an end of input: closes its stdin pipe now
         * (futoin_uv_stream_close()), if it has one. */
        void close_stdin() const noexcept
        {
            futoin_uv_stream_close(futoin_uv_process_stdio(p_, 0));
        }

    private:
        explicit Process(FutoInUvProcess* p) noexcept
            : p_(p)
        {
        }
        FutoInUvProcess* p_ = nullptr;
    };

    /**
     * A received datagram and its sender: udp_recv()'s three values (the
     * bytes, the sender's numeric address, its port) as one parameter. The
     * views are borrowed, valid until the receiving step returns.
     */
    struct Datagram {
        Bytes data;            /**< the datagram (possibly empty) */
        std::string_view host; /**< the sender's address: "127.0.0.1", "::1" */
        unsigned port = 0;     /**< the sender's port */
    };

    /**
     * What stat() and file_fstat() report: their three values (size, mode,
     * modification time) as one parameter.
     */
    struct Stat {
        std::uint64_t size = 0;    /**< in bytes */
        std::uint32_t mode = 0;    /**< st_mode, type bits included */
        std::int64_t mtime_ms = 0; /**< modification time, ms since the epoch */
        /** @return whether it is a regular file */
        bool is_file() const noexcept
        {
            return (mode & S_IFMT) == S_IFREG;
        }
        /** @return whether it is a directory */
        bool is_dir() const noexcept
        {
            return (mode & S_IFMT) == S_IFDIR;
        }
        /** @return the modification time */
        std::chrono::system_clock::time_point mtime() const noexcept
        {
            return std::chrono::system_clock::time_point(
                    std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            std::chrono::milliseconds(mtime_ms)));
        }
    };

    /**
     * The names readdir() found (without "." and ".."), in libuv's order:
     * a view of its values, borrowed until the receiving step returns;
     * iterate it for std::string_view names, or copy them with vector().
     */
    class DirNames {
    public:
        /** Walks the names. */
        class iterator {
        public:
            using iterator_category = std::forward_iterator_tag; /**< a forward iterator */
            using value_type = std::string_view;                 /**< a name */
            using difference_type = std::ptrdiff_t;              /**< a distance */
            using pointer = const std::string_view*;             /**< unused */
            using reference = std::string_view;                  /**< a name, by value */
            /** @param p the first name  @param end the end of the names */
            iterator(const char* p = nullptr, const char* end = nullptr) noexcept
                : p_(p)
                , end_(end)
            {
            }
            /** @return the name */
            std::string_view operator*() const noexcept
            {
                return std::string_view(p_, std::strlen(p_));
            }
            /** @return *this, at the next name */
            iterator& operator++() noexcept
            {
                p_ += std::strlen(p_) + 1;
                if (p_ >= end_) {
                    p_ = end_;
                }
                return *this;
            }
            /** @return the iterator before the step */
            iterator operator++(int) noexcept
            {
                iterator r = *this;
                ++*this;
                return r;
            }
            /** @param o another iterator  @return whether both are at one name */
            bool operator==(const iterator& o) const noexcept
            {
                return p_ == o.p_;
            }
            /** @param o another iterator  @return whether they differ */
            bool operator!=(const iterator& o) const noexcept
            {
                return p_ != o.p_;
            }

        private:
            const char* p_;
            const char* end_;
        };
        /** @param names the names, each followed by a NUL  @param len their
         * length, NULs counted  @param count how many */
        DirNames(const char* names = nullptr, std::size_t len = 0, std::size_t count = 0) noexcept
            : names_(names)
            , len_(names ? len : 0)
            , count_(count)
        {
        }
        /** @return the first name */
        iterator begin() const noexcept
        {
            return iterator(names_, names_ + len_);
        }
        /** @return past the last name */
        iterator end() const noexcept
        {
            return iterator(names_ + len_, names_ + len_);
        }
        /** @return how many names */
        std::size_t size() const noexcept
        {
            return count_;
        }
        /** @return whether there are none */
        bool empty() const noexcept
        {
            return len_ == 0;
        }
        /** @return copies of the names, to keep beyond the step */
        std::vector<std::string> vector() const
        {
            std::vector<std::string> v;
            v.reserve(count_);
            for (std::string_view n : *this) {
                v.emplace_back(n);
            }
            return v;
        }

    private:
        const char* names_;
        std::size_t len_;
        std::size_t count_;
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
    inline void tcp_connect(Steps& as, CStr host, unsigned port)
    {
        futoin_uv_tcp_connect(as.handle(), host.c_str(), port);
    }
    /** Binds and listens when the step runs (futoin_uv_tcp_listen()); the
     * next step receives a Server. @param as the flow  @param host numeric
     * address ("": 127.0.0.1)  @param port 0..65535  @param backlog 0: 511 */
    inline void tcp_listen(Steps& as, CStr host, unsigned port, int backlog = 0)
    {
        futoin_uv_tcp_listen(as.handle(), host.c_str(), port, backlog);
    }
    /** Waits for one connection (futoin_uv_accept()); the next step
     * receives a Stream. @param as the flow  @param srv the server */
    inline void accept(Steps& as, FutoInUvServer* srv)
    {
        futoin_uv_accept(as.handle(), srv);
    }

    /** @cond FUTOIN_DETAIL */
    namespace impl {
        template <class F> inline void serve_thunk(void* data, FutoInUvStream* s) noexcept
        {
            F* f = static_cast<F*>(data);
            futoin::detail::guarded_quiet("exception from a uv::serve() callback",
                    [&] { (*f)(Stream::ref(s)); });
        }
    }
    /** @endcond */

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
        as.add([srv = Server::ref(srv), cb = FD(std::forward<F>(cb))](Steps& step) mutable {
            FD* f = step.stack<FD>(std::move(cb));
            if (!f) {
                step.error(FUTOIN_INTERNAL_ERROR, "ENOMEM: serve: out of memory");
                return; /* -fno-exceptions: error() returns */
            }
            futoin_uv_serve(step.handle(), srv, &impl::serve_thunk<FD>, f);
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
    inline void read_until(Steps& as, FutoInUvStream* s, CStr delim, std::size_t max_len = 0)
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
     * steps above then read and write its plain text. A host with a NUL
     * inside is refused (the added step fails with InternalError "EINVAL:
     * futoin::uv::tls_handshake: host contains a NUL"): passing it as NULL
     * would turn the name check off.
     * @param as the flow  @param s a connected stream  @param t the TLS
     * configuration  @param host client: the server's name or address to
     * check and send as SNI (empty: none); server: ignored */
    inline void tls_handshake(Steps& as, FutoInUvStream* s, FutoInUvTls* t,
            const std::string& host = std::string())
    {
        if (std::memchr(host.data(), '\0', host.size())) {
            as.add([](Steps& as) {
                as.error(FUTOIN_INTERNAL_ERROR,
                        "EINVAL: futoin::uv::tls_handshake: host contains a NUL");
            });
            return;
        }
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
    inline void resolve(Steps& as, CStr host)
    {
        futoin_uv_resolve(as.handle(), host.c_str());
    }
    /** Sleeps (futoin_uv_sleep()), d rounded up to ms and capped at
     * UINT32_MAX. @param as the flow  @param d the delay */
    template <class Rep, class Period>
    inline void sleep(Steps& as, std::chrono::duration<Rep, Period> d)
    {
        futoin_uv_sleep(as.handle(), impl::to_ms(d));
    }
    /** Waits for one of signals (futoin_uv_signal_wait()); the next step
     * receives its number as int. @param as the flow  @param signals the
     * signal numbers (1..FUTOIN_UV_SIGNALS_MAX of them) */
    inline void signal_wait(Steps& as, std::initializer_list<int> signals)
    {
        futoin_uv_signal_wait(as.handle(), signals.begin(), signals.size());
    }

    /* ---- UDP ------------------------------------------------------------ */

    /** Binds when the step runs (futoin_uv_udp_bind()); the next step
     * receives a Udp. @param as the flow  @param host a numeric address
     * ("": 127.0.0.1)  @param port 0..65535  @param flags as Udp::bind() */
    inline void udp_bind(Steps& as, CStr host, unsigned port, unsigned flags = 0)
    {
        futoin_uv_udp_bind(as.handle(), host.c_str(), port, flags);
    }
    /** Sends one datagram (futoin_uv_udp_send(); data copied now).
     * @param as the flow  @param u the socket  @param host the
     * destination's numeric address  @param port 1..65535
     * @param data the bytes (at most FUTOIN_UV_UDP_DATAGRAM_MAX) */
    inline void udp_send(Steps& as, FutoInUvUdp* u, CStr host, unsigned port, std::string_view data)
    {
        futoin_uv_udp_send(as.handle(), u, host.c_str(), port, data.data(), data.size());
    }
    /** Sends one datagram to the default peer (Udp::connect()).
     * @param as the flow  @param u the socket  @param data the bytes */
    inline void udp_send(Steps& as, FutoInUvUdp* u, std::string_view data)
    {
        futoin_uv_udp_send(as.handle(), u, nullptr, 0, data.data(), data.size());
    }
    /** Receives one datagram (futoin_uv_udp_recv()); the next step
     * receives a Datagram, or (Bytes, std::string_view host, unsigned port).
     * @param as the flow  @param u the socket  @param max the longest
     * datagram accepted (0: FUTOIN_UV_UDP_DATAGRAM_MAX) */
    inline void udp_recv(Steps& as, FutoInUvUdp* u, std::size_t max = 0)
    {
        futoin_uv_udp_recv(as.handle(), u, max);
    }

    /* ---- Unix domain sockets and pipes ---------------------------------- */

    /** Connects to a Unix domain socket (futoin_uv_pipe_connect()); the
     * next step receives a Stream, which every stream step takes.
     * @param as the flow  @param path the socket's path */
    inline void pipe_connect(Steps& as, CStr path)
    {
        futoin_uv_pipe_connect(as.handle(), path.c_str());
    }
    /** Listens on a Unix domain socket when the step runs
     * (futoin_uv_pipe_listen()); the next step receives a Server, for
     * accept() and serve(). @param as the flow  @param path the socket's
     * path (created; removed when the server closes)  @param backlog 0: 511 */
    inline void pipe_listen(Steps& as, CStr path, int backlog = 0)
    {
        futoin_uv_pipe_listen(as.handle(), path.c_str(), backlog);
    }
    /** Listens on a Unix domain socket now (futoin_uv_pipe_server_new()).
     * @param b the backend  @param path the socket's path  @param backlog
     * 0: 511  @param uv_error receives the libuv error on failure (may be
     * NULL)  @return the server, empty on failure */
    inline Server pipe_server(Backend& b, CStr path, int backlog = 0,
            int* uv_error = nullptr) noexcept
    {
        return Server::adopt(futoin_uv_pipe_server_new(b.handle(), path.c_str(), backlog,
                uv_error));
    }
    /** Wraps a descriptor of yours as a stream (futoin_uv_pipe_open()): on
     * success the stream owns it. @param b the backend  @param fd the
     * descriptor  @param uv_error receives the libuv error on failure (may
     * be NULL)  @return the stream, empty on failure (fd stays yours) */
    inline Stream pipe_open(Backend& b, int fd, int* uv_error = nullptr) noexcept
    {
        return Stream::adopt(futoin_uv_pipe_open(b.handle(), fd, uv_error));
    }
    /** The credentials of the process at the other end of a Unix socket. */
    struct PeerCred {
        long pid = 0; /**< its process id */
        long uid = 0; /**< its user id */
        long gid = 0; /**< its group id */
    };
    /** The peer's credentials (futoin_uv_stream_peer_cred()).
     * @param s a local stream  @param out receives them (untouched on
     * failure)  @return 0, or a negative libuv error (UV_ENOTSUP for TCP) */
    inline int peer_cred(FutoInUvStream* s, PeerCred& out) noexcept
    {
        return futoin_uv_stream_peer_cred(s, &out.pid, &out.uid, &out.gid);
    }

    /* ---- child processes ------------------------------------------------ */

    /** Waits until the child exits (futoin_uv_process_wait()); the next
     * step receives an Exit, or (std::int64_t status, int signal). A timeout
     * or cancel ends the child by its kill policy. @param as the flow
     * @param p the process */
    inline void process_wait(Steps& as, FutoInUvProcess* p)
    {
        futoin_uv_process_wait(as.handle(), p);
    }

    /* ---- whole files ---------------------------------------------------- */

    /** Reads a whole regular file (futoin_uv_file_read()); the next step
     * receives Bytes. @param as the flow  @param path the file
     * @param max_bytes the most bytes (0: 64 MiB) */
    inline void file_read(Steps& as, CStr path, std::size_t max_bytes = 0)
    {
        futoin_uv_file_read(as.handle(), path.c_str(), max_bytes);
    }
    /** Writes a whole regular file (futoin_uv_file_write(); data copied
     * now); the next step receives the bytes written as std::uint64_t.
     * @param as the flow  @param path the file (created 0644 or truncated)
     * @param data the bytes  @param append append instead of truncating */
    inline void file_write(Steps& as, CStr path, std::string_view data, bool append = false)
    {
        futoin_uv_file_write(as.handle(), path.c_str(), data.data(), data.size(), append ? 1 : 0);
    }

    /* ---- file handles --------------------------------------------------- */

    /** Opens a regular file (futoin_uv_file_open()); the next step receives
     * a File. @param as the flow  @param path the file  @param flags
     * O_RDONLY, O_WRONLY or O_RDWR with O_CREAT, O_EXCL, O_TRUNC, O_APPEND
     * @param mode permissions of a created file (0..07777) */
    inline void file_open(Steps& as, CStr path, int flags, int mode = 0644)
    {
        futoin_uv_file_open(as.handle(), path.c_str(), flags, mode);
    }
    /** Reads at most max bytes (futoin_uv_file_pread()); the next step
     * receives Bytes, empty at the end of the file. @param as the flow
     * @param f the file  @param offset the byte offset, or -1: the file's
     * position  @param max the most bytes (0: 65536) */
    inline void file_pread(Steps& as, FutoInUvFile* f, std::int64_t offset = -1,
            std::size_t max = 0)
    {
        futoin_uv_file_pread(as.handle(), f, offset, max);
    }
    /** Writes data (futoin_uv_file_pwrite(); copied now); the next step
     * receives the bytes written as std::uint64_t. @param as the flow
     * @param f the file  @param offset the byte offset, or -1: the file's
     * position  @param data the bytes */
    inline void file_pwrite(Steps& as, FutoInUvFile* f, std::int64_t offset, std::string_view data)
    {
        futoin_uv_file_pwrite(as.handle(), f, offset, data.data(), data.size());
    }
    /** fsync() (futoin_uv_file_fsync()). @param as the flow  @param f the file */
    inline void file_fsync(Steps& as, FutoInUvFile* f)
    {
        futoin_uv_file_fsync(as.handle(), f);
    }
    /** fstat() (futoin_uv_file_fstat()); the next step receives a Stat.
     * @param as the flow  @param f the file */
    inline void file_fstat(Steps& as, FutoInUvFile* f)
    {
        futoin_uv_file_fstat(as.handle(), f);
    }
    /** Closes the descriptor (futoin_uv_file_close()); references stay.
     * @param as the flow  @param f the file */
    inline void file_close(Steps& as, FutoInUvFile* f)
    {
        futoin_uv_file_close(as.handle(), f);
    }

    /* ---- paths ---------------------------------------------------------- */

    /** stat() of a path (futoin_uv_stat()); the next step receives a Stat.
     * @param as the flow  @param path the path */
    inline void stat(Steps& as, CStr path)
    {
        futoin_uv_stat(as.handle(), path.c_str());
    }
    /** rename() (futoin_uv_rename()). @param as the flow  @param from the
     * existing path  @param to the new path (replaced if it exists) */
    inline void rename(Steps& as, CStr from, CStr to)
    {
        futoin_uv_rename(as.handle(), from.c_str(), to.c_str());
    }
    /** unlink() (futoin_uv_unlink()). @param as the flow  @param path the path */
    inline void unlink(Steps& as, CStr path)
    {
        futoin_uv_unlink(as.handle(), path.c_str());
    }
    /** mkdir() (futoin_uv_mkdir()). @param as the flow  @param path the
     * directory  @param mode its permissions before the umask (0..07777) */
    inline void mkdir(Steps& as, CStr path, int mode = 0755)
    {
        futoin_uv_mkdir(as.handle(), path.c_str(), mode);
    }
    /** rmdir() of an empty directory (futoin_uv_rmdir()). @param as the
     * flow  @param path the directory */
    inline void rmdir(Steps& as, CStr path)
    {
        futoin_uv_rmdir(as.handle(), path.c_str());
    }
    /** The names in a directory (futoin_uv_readdir()); the next step
     * receives DirNames. @param as the flow  @param path the directory */
    inline void readdir(Steps& as, CStr path)
    {
        futoin_uv_readdir(as.handle(), path.c_str());
    }

} // namespace uv

/** @cond FUTOIN_DETAIL */
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

    template <> struct ArgConv<uv::Udp> {
        static constexpr const char* name = "futoin::uv::Udp";
        static Match match(const FutoInBinaryValue& v) noexcept
        {
            return v.type == &futoin_uv_udp_type ? Match::ok : Match::wrong_type;
        }
        static uv::Udp get(const FutoInBinaryValue& v) noexcept
        {
            return uv::Udp::ref(static_cast<FutoInUvUdp*>(v.custom_data));
        }
    };
    template <> struct ArgConv<uv::File> {
        static constexpr const char* name = "futoin::uv::File";
        static Match match(const FutoInBinaryValue& v) noexcept
        {
            return v.type == &futoin_uv_file_type ? Match::ok : Match::wrong_type;
        }
        static uv::File get(const FutoInBinaryValue& v) noexcept
        {
            return uv::File::ref(static_cast<FutoInUvFile*>(v.custom_data));
        }
    };
    /* Records of several values (ArgSpan): v points to the first. */
    template <> struct ArgConv<uv::Datagram> {
        static constexpr const char* name = "futoin::uv::Datagram (bytes, address, port)";
        static constexpr std::size_t span = 3;
        static Match match(const FutoInBinaryValue* v) noexcept
        {
            return ArgConv<uv::Bytes>::match(v[0]) == Match::ok && flags_of(v[1]) == FTN_TYPE_STRING
                            && flags_of(v[2]) == FTN_TYPE_UINT32
                    ? Match::ok
                    : Match::wrong_type;
        }
        static uv::Datagram get(const FutoInBinaryValue* v) noexcept
        {
            uv::Datagram d;
            d.data = ArgConv<uv::Bytes>::get(v[0]);
            d.host = ArgConv<std::string_view>::get(v[1]);
            d.port = v[2].u32;
            return d;
        }
    };
    template <> struct ArgConv<uv::Stat> {
        static constexpr const char* name = "futoin::uv::Stat (size, mode, mtime)";
        static constexpr std::size_t span = 3;
        static Match match(const FutoInBinaryValue* v) noexcept
        {
            return flags_of(v[0]) == FTN_TYPE_UINT64 && flags_of(v[1]) == FTN_TYPE_UINT32
                            && flags_of(v[2]) == FTN_TYPE_INT64
                    ? Match::ok
                    : Match::wrong_type;
        }
        static uv::Stat get(const FutoInBinaryValue* v) noexcept
        {
            uv::Stat st;
            st.size = v[0].u64;
            st.mode = v[1].u32;
            st.mtime_ms = v[2].i64;
            return st;
        }
    };
    template <> struct ArgConv<uv::Exit> {
        static constexpr const char* name = "futoin::uv::Exit (status, signal)";
        static constexpr std::size_t span = 2;
        static Match match(const FutoInBinaryValue* v) noexcept
        {
            return flags_of(v[0]) == FTN_TYPE_INT64 && flags_of(v[1]) == FTN_TYPE_INT32
                    ? Match::ok
                    : Match::wrong_type;
        }
        static uv::Exit get(const FutoInBinaryValue* v) noexcept
        {
            uv::Exit e;
            e.status = v[0].i64;
            e.signal = v[1].i32;
            return e;
        }
    };
    template <> struct ArgConv<uv::DirNames> {
        static constexpr const char* name = "futoin::uv::DirNames (names, count)";
        static constexpr std::size_t span = 2;
        static Match match(const FutoInBinaryValue* v) noexcept
        {
            return flags_of(v[0]) == (FTN_TYPE_UINT8 | FTN_TYPE_ARRAY)
                            && flags_of(v[1]) == FTN_TYPE_UINT32
                    ? Match::ok
                    : Match::wrong_type;
        }
        static uv::DirNames get(const FutoInBinaryValue* v) noexcept
        {
            return uv::DirNames(static_cast<const char*>(v[0].p), v[0].length, v[1].u32);
        }
    };

} // namespace detail
/** @endcond */

} // namespace futoin

#endif /* FUTOIN_UV_HPP */
