/* SPDX-License-Identifier: MIT */
// futoin/uv.hpp (labels uv and cxx): the Backend, Stream and Server
// references, and the step functions with typed results, client and
// server on one loop over loopback.
#include "cxx_support.hpp"

#include <futoin/uv.hpp>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using futoin::Steps;
using namespace std::chrono_literals;
namespace uv = futoin::uv;

namespace {

// Echo: the server accepts one connection and reads a line and three
// bytes, answers and closes; the client writes, reads the answer, then
// meets the end of the stream (UV_EOF).
void test_uv_echo_accept(void**)
{
    uv::Backend b;
    int err = 0;
    uv::Server srv = uv::Server::listen(b, "127.0.0.1", 0, 0, 0, &err);
    assert_true(static_cast<bool>(srv));
    const unsigned port = srv.port();
    assert_true(port > 0);
    std::string log;
    int eof_errno = 0;
    {
        futoin::Root server = b.root();
        futoin::Root client = b.root();
        server.add([&](Steps& as) { uv::accept(as, srv); })
                .add([&](Steps& as, uv::Stream s) {
                    assert_true(s.is_open());
                    srv.reset(); // one connection: stop listening
                    as.state<uv::Stream>("conn", s);
                    uv::read_line(as, s);
                })
                .add([&](Steps& as, std::string_view line) {
                    log += "line:" + std::string(line) + ";";
                    uv::read_exact(as, *as.state<uv::Stream>("conn"), 3);
                })
                .add([&](Steps& as, uv::Bytes bytes) {
                    log += "exact:" + std::string(bytes.view()) + ";";
                    uv::Stream& s = *as.state<uv::Stream>("conn");
                    uv::write(as, s, std::string("pong\n")); // a temporary: copied
                    uv::close(as, std::move(s));
                });
        client.add([&](Steps& as) { uv::tcp_connect(as, "127.0.0.1", port); })
                .add([&](Steps& as, uv::Stream s) {
                    as.state<uv::Stream>("conn", s);
                    uv::write_static(as, s, "ping\r\nabc");
                    uv::read_line(as, s);
                })
                .add(
                        [&](Steps& as, std::string_view answer) {
                            log += "answer:" + std::string(answer) + ";";
                            uv::read_some(as, *as.state<uv::Stream>("conn"));
                            as.add([&](Steps&, uv::Bytes) { log += "unexpected;"; });
                        },
                        [&](Steps& as, std::string_view code) {
                            log += std::string(code) + ";";
                            eof_errno = uv::uv_errno(as);
                            as.success();
                        });
        server.execute([&](Steps& as, std::string_view code) {
            log += "server:" + std::string(code) + ":" + std::string(as.error_info()) + ";";
        });
        client.execute([&](Steps& as, std::string_view code) {
            log += "client:" + std::string(code) + ":" + std::string(as.error_info()) + ";";
        });
        b.run();
    }
    assert_string_equal(log.c_str(), "line:ping;exact:abc;answer:pong;CommError;");
    assert_int_equal(eof_errno, UV_EOF);
}

// serve(): the lambda receives each connection as a Stream it may keep;
// closing the server ends the serve step with ECANCELED. tcp_listen()'s
// Server value, read_until(), shutdown().
void test_uv_serve_and_listen(void**)
{
    uv::Backend b;
    std::vector<uv::Stream> kept;
    std::string log;
    unsigned port = 0;
    {
        futoin::Root server = b.root();
        futoin::Root client = b.root();
        server.add([&](Steps& as) {
                  uv::tcp_listen(as, "", 0);
              }).add([&](Steps& as, uv::Server srv) {
            port = srv.port();
            as.state<uv::Server>("srv", srv);
            uv::serve(as, srv, [&, srv](uv::Stream s) mutable {
                kept.push_back(std::move(s));
                srv.close();
            });
        });
        server.execute([&](Steps& as, std::string_view code) {
            log += "serve:" + std::string(code) + ":" + std::string(as.error_info()) + ";";
        });
        client.add([&](Steps& as) { uv::sleep(as, 1ms); })
                .add([&](Steps& as) { uv::tcp_connect(as, "127.0.0.1", port); })
                .add([&](Steps& as, uv::Stream s) {
                    uv::write(as, s, "a|b|");
                    uv::shutdown(as, s);
                });
        client.execute();
        b.run();
        assert_int_equal(kept.size(), 1u);
        futoin::Root reader = b.root();
        reader.add([&](Steps& as) { uv::read_until(as, kept[0], "|"); })
                .add([&](Steps& as, std::string_view part) {
                    log += "part:" + std::string(part) + ";";
                    uv::read_until(as, kept[0], "|");
                })
                .add([&](Steps&, std::string_view part) {
                    log += "part:" + std::string(part) + ";";
                });
        reader.execute();
        b.run();
        kept.clear();
    }
    assert_true(port > 0);
    assert_string_equal(log.c_str(),
            "serve:CommError:ECANCELED: accept: server closed;part:a|;part:b|;");
}

// resolve(), a refused connect (uv_errno()), signal_wait().
void test_uv_resolve_errno_signal(void**)
{
    uv::Backend b;
    unsigned closed = 0;
    {
        uv::Server tmp = uv::Server::listen(b, nullptr, 0);
        closed = tmp.port();
    } // released: nothing listens there now
    std::string log;
    int refused = 0;
    {
        futoin::Root root = b.root();
        root.add([&](Steps& as) { uv::resolve(as, "127.0.0.1"); })
                .add([&](Steps& as, std::string_view first, std::uint32_t n, std::string_view) {
                    log += std::string(first) + "/" + std::to_string(n) + ";";
                    as.add([&](Steps& as) { uv::tcp_connect(as, "127.0.0.1", closed); },
                            [&](Steps& as, std::string_view code) {
                                log += std::string(code) + ";";
                                refused = uv::uv_errno(as);
                                as.success();
                            });
                })
                .add([&](Steps& as) {
                    Steps p = as.parallel();
                    p.add([&](Steps& as) {
                        uv::signal_wait(as, { SIGUSR1, SIGUSR2 });
                        as.add([&](Steps&, int sig) {
                            log += sig == SIGUSR2 ? "SIGUSR2;" : "other;";
                        });
                    });
                    p.add([&](Steps& as) {
                        uv::sleep(as, 5ms);
                        as.add([&](Steps&) { std::raise(SIGUSR2); });
                    });
                });
        root.execute();
        b.run();
    }
    assert_string_equal(log.c_str(), "127.0.0.1/1;ConnectError;SIGUSR2;");
    assert_int_equal(refused, UV_ECONNREFUSED);
}

// tls_handshake(): the C step underneath refuses a NULL stream with
// InternalError; a backend built without TLS refuses every handshake
// (futoin_uv_tls_available(), uv.h).
void test_uv_tls_handshake_refused(void**)
{
    uv::Backend b;
    int err = 0;
    FutoInUvTls* t = futoin_uv_tls_new(0, &err);
    assert_int_equal(futoin_uv_tls_available() ? 0 : UV_ENOTSUP, err);
    std::string log;
    {
        futoin::Root root = b.root();
        root.add([&](Steps& as) { uv::tls_handshake(as, nullptr, t, "localhost"); },
                [&](Steps& as, std::string_view code) {
                    log = std::string(code) + ": " + std::string(as.error_info());
                    as.success();
                });
        root.execute();
        b.run();
    }
    assert_string_equal(log.c_str(),
            futoin_uv_tls_available()
                    ? "InternalError: EINVAL: futoin_uv_tls_handshake: s is NULL"
                    : "InternalError: ENOTSUP: futoin_uv_tls_handshake: built without TLS");
    // A host with a NUL inside is refused, not passed as NULL (no name check).
    {
        futoin::Root root = b.root();
        root.add([&](Steps& as) { uv::tls_handshake(as, nullptr, t, std::string("a\0b", 3)); },
                [&](Steps& as, std::string_view code) {
                    log = std::string(code) + ": " + std::string(as.error_info());
                    as.success();
                });
        root.execute();
        b.run();
    }
    futoin_uv_tls_release(t);
    assert_string_equal(log.c_str(),
            "InternalError: EINVAL: futoin::uv::tls_handshake: host contains a NUL");
}

} // namespace

int main()
{
    std::signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uv_echo_accept),
        cmocka_unit_test(test_uv_serve_and_listen),
        cmocka_unit_test(test_uv_resolve_errno_signal),
        cmocka_unit_test(test_uv_tls_handshake_refused),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
