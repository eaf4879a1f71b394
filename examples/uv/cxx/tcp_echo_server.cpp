/* SPDX-License-Identifier: MIT */
/*
 * examples/uv/tcp_echo_server.c the C++ way, over futoin/uv.hpp: the same
 * command line, the same lines on stdout, the same behaviour (and so the
 * same test, tests/uv/test_tcp_echo_server.c, run with this binary).
 *
 *   cxx_tcp_echo_server [-p PORT] [-i IDLE_MS] [-d DRAIN_MS] [-c CONNS] [-q QUEUE]
 *
 * The pieces, as in C:
 *   - the acceptor root: futoin::uv::serve(), whose lambda starts one root
 *     per connection;
 *   - a connection: a futoin::Root and a futoin::uv::Stream in a Conn of a
 *     std::list; admission through a futoin::Limiter, then an echo loop of
 *     read_some() and write(), each under the idle timeout; the session's
 *     error handler tells the ends apart by uv_errno();
 *   - the signal root: signal_wait() for SIGINT or SIGTERM, then the drain:
 *     stop accepting, let the connections end, close the rest after
 *     DRAIN_MS.
 * The run ends when nothing is left; the objects go in the reverse order
 * of their members (connections, roots, the Limiter, the listener, then the
 * backend).
 */
#include <futoin/sync.h>
#include <futoin/uv.hpp>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <optional>
#include <string_view>

using futoin::Steps;
using namespace std::chrono_literals;
namespace uv = futoin::uv;

namespace {

struct Server;

struct Conn {
    Conn(Server* srv, uv::Stream s, FutoInLoop* loop)
        : srv(srv)
        , s(std::move(s))
        , root(loop)
    {
    }
    Server* srv;
    uv::Stream s; /* our reference */
    futoin::Root root;
    std::list<Conn>::iterator self;
};

struct Server {
    /* Destroyed last: everything below belongs to its loop. */
    uv::Backend uv;
    uv::Server listener;
    std::optional<futoin::Limiter> limiter;
    std::optional<futoin::Root> acceptor;
    std::optional<futoin::Root> signals;
    std::list<Conn> conns; /* every connection still alive */
    std::chrono::milliseconds idle{ 10000 };
    std::chrono::milliseconds drain{ 10000 };
    unsigned conns_max = 64;
    unsigned queue_max = 64;
    bool draining = false;
    bool acceptor_done = false;
    bool finished = false;
    unsigned long accepted = 0, rejected = 0, peer_closed = 0, idle_closed = 0, errors = 0,
                  cut_at_deadline = 0;

    /* Frees a connection; from a callback of its own root too (the root
     * is released when the callback returns; the lambdas capture only
     * pointers, so nothing of the Conn is used afterwards). */
    void conn_free(Conn* c)
    {
        conns.erase(c->self);
        finish_if_done();
    }

    /* The drain is over when the acceptor and the last connection are gone:
     * the signal root's deadline must not keep the loop alive any longer. */
    void finish_if_done()
    {
        if (draining && acceptor_done && conns.empty() && !finished) {
            finished = true;
            signals->cancel();
        }
    }

    void on_connection(uv::Stream s)
    {
        ++accepted;
        conns.emplace_front(this, std::move(s), uv.loop());
        Conn* c = &conns.front();
        c->self = conns.begin();
        c->root.add(
                [c](Steps& as) {
                    as.sync(*c->srv->limiter, [c](Steps& as) {
                        as.loop([c](Steps& as) {
                            as.add([c](Steps& as) {
                                as.set_timeout(c->srv->idle); /* the idle timeout */
                                uv::read_some(as, c->s, 64 * 1024);
                            });
                            as.add([c](Steps& as, uv::Bytes bytes) {
                                /* A peer that stops reading must not hold
                                 * the connection forever. */
                                as.set_timeout(c->srv->idle);
                                uv::write(as, c->s, bytes.view()); /* copied */
                            });
                        });
                    });
                },
                [c](Steps& as, std::string_view code) { c->srv->session_end(c, as, code); });
        c->root.add([c](Steps&) { c->srv->conn_free(c); });
        c->root.execute([c](Steps& as, std::string_view code) {
            Server* srv = c->srv;
            ++srv->errors;
            std::fprintf(stderr, "tcp_echo_server: connection: %.*s %.*s\n", int(code.size()),
                    code.data(), int(as.error_info().size()), as.error_info().data());
            srv->conn_free(c);
        });
    }

    /* How a session ended; every end is a normal one for an echo server. */
    void session_end(Conn* c, Steps& as, std::string_view code)
    {
        if (code == FUTOIN_TIMEOUT) {
            ++idle_closed;
        } else if (code == FUTOIN_DEFENSE_REJECTED) {
            ++rejected; /* the Limiter's queue was full */
        } else {
            switch (uv::uv_errno(as)) {
            case UV_EOF:        /* the peer closed its side */
            case UV_ECONNRESET: /* or reset the connection */
            case UV_EPIPE:
                ++peer_closed;
                break;
            default:
                ++errors;
                std::fprintf(stderr, "tcp_echo_server: %.*s: %.*s %.*s\n", int(c->s.peer().size()),
                        c->s.peer().data(), int(code.size()), code.data(),
                        int(as.error_info().size()), as.error_info().data());
                break;
            }
        }
        as.success();
    }

    void start()
    {
        /* The signal root first: roots take turns in the order they are
         * executed, so its wait has started before the acceptor says that
         * we listen. */
        uv::signal_wait(*signals, { SIGINT, SIGTERM });
        signals->add([this](Steps& as, int sig) { drain_start(as, sig); });
        signals->execute([this](Steps& as, std::string_view code) {
            std::fprintf(stderr, "tcp_echo_server: signal wait failed: %.*s %.*s\n",
                    int(code.size()), code.data(), int(as.error_info().size()),
                    as.error_info().data());
            ++errors;
        });

        acceptor->add([this](Steps& as) {
            std::printf("tcp_echo_server: listening on 127.0.0.1:%u (idle %lld ms, drain %lld ms, "
                        "%u at once, %u waiting)\n",
                    listener.port(), static_cast<long long>(idle.count()),
                    static_cast<long long>(drain.count()), conns_max, queue_max);
            std::fflush(stdout);
            uv::serve(as, listener, [this](uv::Stream s) { on_connection(std::move(s)); });
        });
        /* The serve step ends only with an error: "ECANCELED: accept:
         * server closed" when the drain closes the listener. */
        acceptor->execute([this](Steps& as, std::string_view code) {
            if (!draining) {
                std::fprintf(stderr, "tcp_echo_server: accept loop failed: %.*s %.*s\n",
                        int(code.size()), code.data(), int(as.error_info().size()),
                        as.error_info().data());
                ++errors;
            }
            acceptor_done = true;
            finish_if_done();
        });
    }

    void drain_start(Steps& as, int sig)
    {
        draining = true;
        /* Stop accepting: the serve step fails with ECANCELED. */
        listener.close();
        const std::size_t open = conns.size();
        std::printf("tcp_echo_server: %s: draining, %zu connection%s open\n",
                sig == SIGTERM ? "SIGTERM" : "SIGINT", open, open == 1 ? "" : "s");
        std::fflush(stdout);
        /* The connections go on until their peer closes or their idle
         * timeout; whatever is left at the deadline is closed. */
        uv::sleep(as, drain);
        as.add([this](Steps&) {
            while (!conns.empty()) {
                ++cut_at_deadline;
                conn_free(&conns.front()); /* frees its root, drops its stream */
            }
        });
    }
};

bool parse_uint(const char* s, unsigned long max, unsigned long* out)
{
    if (!s || *s < '0' || *s > '9') {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    const unsigned long v = std::strtoul(s, &end, 10);
    if (errno || *end || v > max) {
        return false;
    }
    *out = v;
    return true;
}

int usage()
{
    std::fprintf(stderr,
            "usage: tcp_echo_server [-p PORT] [-i IDLE_MS] [-d DRAIN_MS] [-c CONNS] "
            "[-q QUEUE]\n");
    return 2;
}

} // namespace

int main(int argc, char** argv)
{
    unsigned long port = 7007, idle = 10000, drain = 10000, conns = 64, queue = 64;
    for (int i = 1; i < argc; i += 2) {
        const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
        const std::string_view opt = argv[i];
        bool ok = false;
        if (opt == "-p") {
            ok = parse_uint(v, 65535, &port);
        } else if (opt == "-i") {
            ok = parse_uint(v, UINT32_MAX, &idle);
        } else if (opt == "-d") {
            ok = parse_uint(v, UINT32_MAX, &drain);
        } else if (opt == "-c") {
            ok = parse_uint(v, UINT32_MAX, &conns) && conns != 0;
        } else if (opt == "-q") {
            ok = parse_uint(v, UINT32_MAX, &queue);
        }
        if (!ok) {
            return usage();
        }
    }
    /* A peer that resets its connection must cost an EPIPE, not the
     * process: libuv writes with plain write(). */
    std::signal(SIGPIPE, SIG_IGN);

    unsigned long accepted, rejected, peer_closed, idle_closed, cut, errors;
    int rc = 0;
    {
        Server srv;
        srv.idle = std::chrono::milliseconds(idle);
        srv.drain = std::chrono::milliseconds(drain);
        srv.conns_max = static_cast<unsigned>(conns);
        srv.queue_max = static_cast<unsigned>(queue);
        int err = 0;
        srv.listener = uv::Server::listen(srv.uv, "127.0.0.1", static_cast<unsigned>(port), 0, 0,
                &err);
        if (!srv.listener) {
            std::fprintf(stderr, "tcp_echo_server: listen 127.0.0.1:%lu: %s\n", port,
                    uv_strerror(err));
            return 1;
        }
        /* CONNS sessions at once, QUEUE more waiting; the rate stage is
         * left wide open (a million entries a second). */
        futoin::Limiter::Options lo;
        lo.concurrent = srv.conns_max;
        lo.max_queue = srv.queue_max;
        lo.rate = 1000000;
        lo.period_ms = 1000;
        srv.limiter.emplace(srv.uv.loop(), lo);
        srv.acceptor.emplace(srv.uv.loop());
        srv.signals.emplace(srv.uv.loop());
        srv.start();

        srv.uv.run(); /* until the drain is over */

        rc = srv.conns.empty() ? 0 : 1; /* cannot happen: the run ends with them */
        srv.acceptor.reset();
        srv.signals.reset();
        srv.listener.reset();
        if (srv.limiter->free() != FUTOIN_SYNC_OK) {
            rc = 1;
        }
        accepted = srv.accepted;
        rejected = srv.rejected;
        peer_closed = srv.peer_closed;
        idle_closed = srv.idle_closed;
        cut = srv.cut_at_deadline;
        errors = srv.errors;
    } /* the backend goes last */
    std::printf("tcp_echo_server: stopped: accepted %lu, rejected %lu, closed by peer %lu, idle "
                "%lu, cut at the deadline %lu, errors %lu\n",
            accepted, rejected, peer_closed, idle_closed, cut, errors);
    return rc;
}
