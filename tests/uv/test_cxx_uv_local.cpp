/* SPDX-License-Identifier: MIT */
// futoin/uv.hpp (labels uv and cxx) for UDP sockets, Unix domain sockets
// and pipes, child processes, and file handles and paths: each family
// through the C++ API on the loopback and in a temporary directory, with
// its typed results (Datagram, Stat, Exit, DirNames, Udp, File), its
// errors as an error handler sees them (code, error_info, uv_errno()), and
// every closure counted (Track: destroyed exactly once). Built as C++17,
// C++20 and with -fno-exceptions.
#include "cxx_support.hpp"

#include <futoin/uv.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>

using futoin::Steps;
using namespace std::chrono_literals;
namespace uv = futoin::uv;

namespace {

// A fresh directory under TMPDIR (or /tmp), removed with what is left in it.
struct TempDir {
    std::string path;
    TempDir()
    {
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/futoin_cxx_uv_XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        assert_non_null(mkdtemp(buf.data()));
        path = buf.data();
    }
    ~TempDir()
    {
        if (nftw(path.c_str(), &remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
            std::fprintf(stderr, "could not remove %s\n", path.c_str());
        }
    }
    static int remove_entry(const char* p, const struct stat*, int, struct FTW*)
    {
        return std::remove(p);
    }
    std::string operator/(const char* name) const
    {
        return path + "/" + name;
    }
};

// What an error handler saw: "code|error_info|uv_errno".
std::string seen(Steps& as, std::string_view code)
{
    return std::string(code) + "|" + std::string(as.error_info()) + "|"
            + std::to_string(uv::uv_errno(as));
}

// ---- UDP ------------------------------------------------------------------

// An echo: the server receives a Datagram and answers its sender with
// host and port as they came; the client binds with the step form,
// receives the answer as (Bytes, host, port), then sends to its default
// peer (connect()) and receives the second answer.
void test_udp_echo_with_sender(void**)
{
    uv::Backend b;
    int err = 0;
    uv::Udp srv = uv::Udp::bind(b, "127.0.0.1", 0, 0, &err);
    assert_true(static_cast<bool>(srv));
    assert_int_equal(err, 0);
    const unsigned srv_port = srv.port();
    std::string log;
    unsigned client_port = 0;
    {
        futoin::Root server = b.root();
        futoin::Root client = b.root();
        server.repeat(2, [&srv, &log, t = Track(1)](Steps& as, std::size_t) {
            uv::udp_recv(as, srv);
            as.add([&srv, &log, t = Track(2)](Steps& as, uv::Datagram d) {
                log += "server got " + std::string(d.data.view()) + " from " + std::string(d.host)
                        + ";";
                std::string up(d.data.view());
                std::transform(up.begin(), up.end(), up.begin(),
                        [](char c) { return char(c - 'a' + 'A'); });
                uv::udp_send(as, srv, d.host, d.port, up);
            });
        });
        client.add([](Steps& as) { uv::udp_bind(as, "127.0.0.1", 0); })
                .add([&, t = Track(3)](Steps& as, uv::Udp u) {
                    client_port = u.port();
                    as.state<uv::Udp>("u", u);
                    uv::udp_send(as, u, "127.0.0.1", srv_port, "ping");
                    uv::udp_recv(as, u);
                })
                .add([&, t = Track(4)](Steps& as, uv::Bytes data, std::string_view host,
                             unsigned port) {
                    log += "client got " + std::string(data.view()) + " from " + std::string(host)
                            + (port == srv_port ? ":srv;" : ":?;");
                    uv::Udp& u = *as.state<uv::Udp>("u");
                    assert_int_equal(u.connect("127.0.0.1", srv_port), 0);
                    assert_int_equal(u.connect("127.0.0.1", srv_port), UV_EISCONN);
                    uv::udp_send(as, u, "pong");
                    uv::udp_recv(as, u);
                })
                .add([&](Steps& as, uv::Datagram d) {
                    log += "client got " + std::string(d.data.view()) + ";";
                    assert_int_equal(d.port, srv_port);
                    assert_int_equal(as.state<uv::Udp>("u")->disconnect(), 0);
                });
        server.execute([&](Steps& as, std::string_view code) { log += seen(as, code); });
        client.execute([&](Steps& as, std::string_view code) { log += seen(as, code); });
        b.run();
        assert_int_equal(Track::live, 0);
    }
    assert_true(client_port > 0);
    assert_string_equal(log.c_str(),
            "server got ping from 127.0.0.1;client got PING from 127.0.0.1:srv;"
            "server got pong from 127.0.0.1;client got PONG;");
    // The socket closed under a waiting receive: ECANCELED to the handler.
    std::string closed;
    {
        futoin::Root root = b.root();
        root.add(
                [&srv](Steps& as) {
                    uv::udp_recv(as, srv);
                    as.add([](Steps&, uv::Datagram) {});
                },
                [&closed](Steps& as, std::string_view code) {
                    closed = seen(as, code);
                    as.success();
                });
        root.execute();
        futoin::Root closer = b.root();
        closer.add([](Steps& as) { uv::sleep(as, 1ms); }).add([&srv](Steps&) { srv.close(); });
        closer.execute();
        b.run();
    }
    srv.reset();
    assert_string_equal(closed.c_str(),
            ("CommError|ECANCELED: udp_recv 127.0.0.1:" + std::to_string(srv_port)
                    + ": socket closed|" + std::to_string(UV_ECANCELED))
                    .c_str());
}

// ---- Unix domain sockets ------------------------------------------------------

// A server (pipe_listen()'s Server value) answers one line and closes; the
// client sees the peer's credentials, the answer, then the peer gone (EOF).
// A path nobody made: ConnectError ENOENT; a path in use: EADDRINUSE.
void test_unix_socket_serve_and_peer_gone(void**)
{
    TempDir dir;
    const std::string path = dir / "app.sock";
    uv::Backend b;
    std::string log;
    uv::PeerCred cred;
    {
        futoin::Root server = b.root();
        futoin::Root client = b.root();
        server.add([&path](Steps& as) { uv::pipe_listen(as, path); })
                .add([t = Track(1)](Steps& as, uv::Server srv) {
                    as.state<uv::Server>("srv", srv);
                    uv::accept(as, srv);
                })
                .add([&log, t = Track(2)](Steps& as, uv::Stream s) {
                    as.state<uv::Server>("srv")->close(); // one connection
                    log += "accepted from " + std::string(s.peer()) + ";";
                    as.state<uv::Stream>("conn", s);
                    uv::read_line(as, s);
                })
                .add([](Steps& as, std::string_view name) {
                    uv::Stream& s = *as.state<uv::Stream>("conn");
                    uv::write(as, s, "hi " + std::string(name) + "\n");
                    uv::close(as, std::move(s)); // the peer goes away
                });
        client.add([](Steps& as) { uv::sleep(as, 1ms); })
                .add([&path, t = Track(3)](Steps& as) { uv::pipe_connect(as, path); })
                .add([&](Steps& as, uv::Stream s) {
                    assert_int_equal(uv::peer_cred(s, cred), 0);
                    as.state<uv::Stream>("conn", s);
                    uv::write(as, s, std::string_view("bob\n"));
                    uv::read_line(as, s);
                })
                .add([&log, t = Track(4)](Steps& as, std::string_view answer) {
                    log += "answer " + std::string(answer) + ";";
                    as.add(
                            [](Steps& as) {
                                uv::read_line(as, *as.state<uv::Stream>("conn"));
                                as.add([](Steps&, std::string_view) {});
                            },
                            [&log, t = Track(5)](Steps& as, std::string_view code) {
                                log += seen(as, code) + ";";
                                as.success();
                            });
                })
                .add([&path, &log](Steps& as) {
                    as.add([&path](Steps& as) { uv::pipe_connect(as, path); },
                            [&log](Steps& as, std::string_view code) {
                                log += seen(as, code) + ";";
                                as.success();
                            });
                });
        server.execute([&](Steps& as, std::string_view code) { log += seen(as, code); });
        client.execute([&](Steps& as, std::string_view code) { log += seen(as, code); });
        b.run();
    }
    assert_int_equal(cred.pid, long(getpid()));
    assert_int_equal(cred.uid, long(getuid()));
    assert_string_equal(log.c_str(),
            ("accepted from " + path
                    + ";answer hi bob;CommError|EOF: read: connection closed by "
                      "peer|"
                    + std::to_string(UV_EOF) + ";ConnectError|ENOENT: connect " + path + "|"
                    + std::to_string(UV_ENOENT) + ";")
                    .c_str());
    // The plain form; a second server on the same path is refused.
    int err = 0;
    uv::Server a = uv::pipe_server(b, path, 0, &err);
    assert_true(static_cast<bool>(a));
    uv::Server again = uv::pipe_server(b, path, 0, &err);
    assert_false(static_cast<bool>(again));
    assert_int_equal(err, UV_EADDRINUSE);
    assert_int_equal(a.port(), 0u);
    a.reset(); // removes the file
    assert_int_equal(access(path.c_str(), F_OK), -1);
    // A pipe(2) end as a stream: what the other end writes, then its EOF.
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    uv::Stream rd = uv::pipe_open(b, fds[0], &err);
    assert_true(static_cast<bool>(rd));
    assert_int_equal(uv::peer_cred(rd, cred), UV_ENOTSUP);
    assert_int_equal(write(fds[1], "x\n", 2), 2);
    close(fds[1]);
    std::string got;
    {
        futoin::Root root = b.root();
        root.add([&rd](Steps& as) {
                uv::read_line(as, rd);
            }).add([&](Steps& as, std::string_view line) {
            got = std::string(line);
            uv::read_some(as, rd);
            as.add([](Steps&, uv::Bytes) {});
        });
        root.execute([&](Steps& as, std::string_view code) { got += "," + seen(as, code); });
        b.run();
    }
    rd.reset();
    assert_string_equal(got.c_str(),
            ("x,CommError|EOF: read: connection closed by peer|" + std::to_string(UV_EOF)).c_str());
}

// serve() on a Unix socket: each connection starts a session root of its
// own; the client writes a line and goes away, and the session reads the
// line, then the end of the stream. Closing the server ends serve().
void test_unix_socket_serve_client_gone(void**)
{
    TempDir dir;
    const std::string path = dir / "srv.sock";
    uv::Backend b;
    int err = 0;
    uv::Server srv = uv::pipe_server(b, path, 0, &err);
    assert_true(static_cast<bool>(srv));
    std::list<futoin::Root> sessions;
    std::string serve_log;
    std::string session_log;
    std::string client_log;
    {
        futoin::Root acceptor = b.root();
        acceptor.add([&](Steps& as) {
            uv::serve(as, srv, [&, t = Track(1)](uv::Stream s) {
                srv.close(); // one connection
                futoin::Root& r = sessions.emplace_back(b.loop());
                r.add([s, t = Track(2)](Steps& as) {
                     uv::read_line(as, s);
                 }).add([&session_log, s](Steps& as, std::string_view line) {
                    session_log += "line " + std::string(line) + ";";
                    uv::read_line(as, s);
                    as.add([](Steps&, std::string_view) {});
                });
                r.execute([&session_log](Steps& as, std::string_view code) {
                    session_log += seen(as, code);
                });
            });
        });
        acceptor.execute([&serve_log](Steps& as, std::string_view code) {
            serve_log = std::string(code) + "|" + std::string(as.error_info());
        });
        futoin::Root client = b.root();
        client.add([&path](Steps& as) {
                  uv::pipe_connect(as, path);
              }).add([](Steps& as, uv::Stream s) {
            uv::write(as, s, "x\n");
            uv::close(as, std::move(s)); // gone
        });
        client.execute([&client_log](Steps& as, std::string_view code) {
            client_log = seen(as, code);
        });
        b.run();
        assert_int_equal(sessions.size(), 1u);
        sessions.clear();
    }
    srv.reset();
    assert_string_equal(serve_log.c_str(), "CommError|ECANCELED: accept: server closed");
    assert_string_equal(session_log.c_str(),
            ("line x;CommError|EOF: read: connection closed by peer|" + std::to_string(UV_EOF))
                    .c_str());
    assert_string_equal(client_log.c_str(), "");
}

// ---- child processes -----------------------------------------------------------

// A child's stdout read line by line to its end, stdin written and
// closed, the exit status; a program that does not exist.
void test_process_output_and_status(void**)
{
    uv::Backend b;
    uv::SpawnOptions o;
    o.file = "/bin/sh";
    o.args = { "sh", "-c", "read name; echo \"hello $name\"; echo done; exit 3" };
    o.stdio[0] = uv::Stdio::pipe;
    o.stdio[1] = uv::Stdio::pipe;
    int err = 0;
    uv::Process p = uv::Process::spawn(b, o, &err);
    assert_true(static_cast<bool>(p));
    assert_true(p.pid() > 0);
    assert_false(p.exited().has_value());
    assert_false(static_cast<bool>(p.stdio(2))); // not piped
    std::vector<std::string> lines;
    uv::Exit exit;
    std::string log;
    {
        futoin::Root root = b.root();
        root.add([&p, t = Track(1)](Steps& as) {
                uv::write(as, p.stdio(0), "world\n");
                as.add([&p](Steps&) { p.close_stdin(); });
            })
                .loop([&p, &lines, t = Track(2)](Steps& as) {
                    as.add([&p](Steps& as) { uv::read_line(as, p.stdio(1)); },
                            [](Steps& as, std::string_view) {
                                if (uv::uv_errno(as) == UV_EOF) {
                                    as.break_loop();
                                }
                            });
                    as.add([&lines](Steps&, std::string_view line) { lines.emplace_back(line); });
                })
                .add([&p](Steps& as) { uv::process_wait(as, p); })
                .add([&exit, t = Track(3)](Steps&, uv::Exit e) { exit = e; });
        root.execute([&](Steps& as, std::string_view code) { log += seen(as, code); });
        b.run();
    }
    assert_string_equal(log.c_str(), "");
    assert_int_equal(lines.size(), 2u);
    assert_string_equal(lines[0].c_str(), "hello world");
    assert_string_equal(lines[1].c_str(), "done");
    assert_int_equal(exit.status, 3);
    assert_int_equal(exit.signal, 0);
    assert_false(exit.ok());
    assert_true(p.exited().has_value());
    assert_int_equal(p.exited()->status, 3);
    assert_int_equal(p.kill(0), UV_ESRCH);
    p.reset();

    uv::SpawnOptions missing;
    missing.file = "/nonexistent/futoin-no-such-program";
    assert_false(static_cast<bool>(uv::Process::spawn(b, missing, &err)));
    assert_int_equal(err, UV_ENOENT);
    missing.file = std::string("/bin/sh\0x", 9);
    assert_false(static_cast<bool>(uv::Process::spawn(b, missing, &err)));
    assert_int_equal(err, UV_EINVAL);
}

// A wait that times out ends the child by its kill policy (the term
// signal); a second wait step then reports how it ended, as (status,
// signal) values.
void test_process_timeout_signals_child(void**)
{
    uv::Backend b;
    uv::SpawnOptions o;
    o.file = "/bin/sh";
    o.args = { "sh", "-c", "exec sleep 60" };
    o.stdio[0] = uv::Stdio::ignore;
    o.kill_grace = 30s;
    o.term_signal = SIGUSR1;
    int err = 0;
    uv::Process p = uv::Process::spawn(b, o, &err);
    assert_true(static_cast<bool>(p));
    std::string log;
    std::int64_t status = -1;
    int sig = -1;
    {
        futoin::Root root = b.root();
        root.add(
                    [&p, t = Track(1)](Steps& as) {
                        as.set_timeout(20ms);
                        uv::process_wait(as, p);
                    },
                    [&log, t = Track(2)](Steps& as, std::string_view code) {
                        log += std::string(code) + "|" + std::string(as.error_info()) + ";";
                        as.success();
                    })
                .add([&p](Steps& as) { uv::process_wait(as, p); })
                .add([&](Steps&, std::int64_t st, int s) {
                    status = st;
                    sig = s;
                });
        root.execute([&](Steps& as, std::string_view code) { log += seen(as, code); });
        b.run();
    }
    const std::string timeout = "Timeout|wait pid " + std::to_string(p.pid()) + " /bin/sh;";
    assert_string_equal(log.c_str(), timeout.c_str());
    assert_int_equal(status, 0);
    assert_int_equal(sig, SIGUSR1);
}

// ---- files and paths ------------------------------------------------------------

// A file handle through open, pwrite, pread, fstat, fsync, close; a
// directory made, listed, the file renamed into it, stat, unlink, rmdir;
// whole-file read and write.
void test_files_and_paths(void**)
{
    TempDir dir;
    const std::string a = dir / "a.txt";
    const std::string sub = dir / "sub";
    const std::string moved = sub + "/b.txt";
    uv::Backend b;
    std::string log;
    std::vector<std::string> names;
    std::size_t count = 0;
    {
        futoin::Root root = b.root();
        root.add([&a, t = Track(1)](Steps& as) {
                uv::file_open(as, a, O_RDWR | O_CREAT | O_TRUNC, 0600);
            })
                .add([&log, t = Track(2)](Steps& as, uv::File f) {
                    log += "open " + std::string(f.path().substr(f.path().rfind('/') + 1)) + ";";
                    as.state<uv::File>("f", f);
                    uv::file_pwrite(as, f, 0, "hello world");
                })
                .add([&log](Steps& as, std::uint64_t n) {
                    log += "wrote " + std::to_string(n) + ";";
                    uv::file_pread(as, *as.state<uv::File>("f"), 6, 5);
                })
                .add([&log](Steps& as, uv::Bytes bytes) {
                    log += "read " + std::string(bytes.view()) + ";";
                    uv::file_fstat(as, *as.state<uv::File>("f"));
                })
                .add([&log](Steps& as, uv::Stat st) {
                    log += "size " + std::to_string(st.size) + (st.is_file() ? " file" : " ?")
                            + ((st.mode & 0777) == 0600 ? " 0600;" : " mode?;");
                    assert_true(st.mtime() > std::chrono::system_clock::time_point());
                    uv::File& f = *as.state<uv::File>("f");
                    uv::file_fsync(as, f);
                    uv::file_close(as, f);
                    as.add([&log, &f](Steps&) { log += f.is_open() ? "open;" : "closed;"; });
                })
                .add([&sub](Steps& as) { uv::mkdir(as, sub, 0700); })
                .add([&dir](Steps& as) { uv::readdir(as, dir.path); })
                .add([&names, &count, t = Track(3)](Steps&, uv::DirNames d) {
                    names = d.vector();
                    count = d.size();
                    std::sort(names.begin(), names.end());
                })
                .add([&](Steps& as) {
                    uv::rename(as, a, moved);
                    uv::stat(as, std::string_view(moved)); // a view: copied with a NUL
                })
                .add([&log, &moved](Steps& as, uv::Stat st) {
                    log += "moved " + std::to_string(st.size) + ";";
                    uv::file_write(as, moved, "more", true);
                })
                .add([&moved](Steps& as, std::uint64_t) { uv::file_read(as, moved); })
                .add([&](Steps& as, uv::Bytes all) {
                    log += "whole " + std::string(all.view()) + ";";
                    uv::unlink(as, moved);
                    uv::rmdir(as, sub);
                    uv::readdir(as, dir.path);
                })
                .add([&log](Steps&, uv::DirNames d) {
                    log += d.empty() && d.size() == 0 && d.begin() == d.end() ? "empty;"
                                                                              : "not empty;";
                });
        root.execute([&](Steps& as, std::string_view code) { log += seen(as, code); });
        b.run();
    }
    assert_string_equal(log.c_str(),
            "open a.txt;wrote 11;read world;size 11 file 0600;closed;moved 11;"
            "whole hello worldmore;empty;");
    assert_int_equal(count, 2u);
    assert_int_equal(names.size(), 2u);
    assert_string_equal(names[0].c_str(), "a.txt");
    assert_string_equal(names[1].c_str(), "sub");
}

// Errors as the C API documents them, seen by the C++ error handler:
// ENOENT from stat and open (code, error_info, uv_errno()), a path with a
// NUL refused before anything runs, a value of another type than the
// record a step wants, empty owners given to steps.
void test_file_errors(void**)
{
    TempDir dir;
    const std::string missing = dir / "missing";
    uv::Backend b;
    std::vector<std::string> got;
    {
        futoin::Root root = b.root();
        auto record = [&got](Steps& as, std::string_view code) {
            got.push_back(seen(as, code));
            as.success();
        };
        root.add(
                    [&missing](Steps& as) {
                        uv::stat(as, missing);
                        as.add([](Steps&, uv::Stat) {});
                    },
                    record)
                .add(
                        [&missing, t = Track(1)](Steps& as) {
                            uv::file_open(as, missing, O_RDONLY);
                            as.add([](Steps&, uv::File) {});
                        },
                        [&got, t = Track(2)](Steps& as, std::string_view code) {
                            got.push_back(seen(as, code));
                            as.success();
                        })
                .add(
                        [](Steps& as) {
                            uv::unlink(as, std::string_view("a\0b", 3));
                            as.add([](Steps&) {});
                        },
                        record)
                .add(
                        [](Steps& as) {
                            uv::mkdir(as, std::string("a\0b", 3));
                            as.add([](Steps&) {});
                        },
                        record)
                .add(
                        [&dir](Steps& as) {
                            uv::file_write(as, dir / "x", "12");
                            as.add([](Steps&, uv::Stat) {});
                        },
                        record)
                // Empty owners: the C step refuses the NULL it receives.
                .add([](Steps& as) { uv::file_pread(as, uv::File()); }, record)
                .add([](Steps& as) { uv::udp_recv(as, uv::Udp()); }, record)
                .add([](Steps& as) { uv::process_wait(as, uv::Process()); }, record);
        root.execute([&](Steps& as, std::string_view code) { got.push_back(seen(as, code)); });
        b.run();
    }
    assert_int_equal(got.size(), 8u);
    const std::string enoent = std::to_string(UV_ENOENT);
    assert_string_equal(got[0].c_str(),
            ("CommError|ENOENT: stat " + missing + "|" + enoent).c_str());
    assert_string_equal(got[1].c_str(),
            ("CommError|ENOENT: open " + missing + "|" + enoent).c_str());
    assert_string_equal(got[2].c_str(),
            ("InternalError|EINVAL: futoin_uv_unlink: path is NULL|" + std::to_string(UV_EINVAL))
                    .c_str());
    assert_string_equal(got[3].c_str(),
            ("InternalError|EINVAL: futoin_uv_mkdir: path is NULL|" + std::to_string(UV_EINVAL))
                    .c_str());
    assert_string_equal(got[4].c_str(),
            "InternalError|futoin::Steps: parameter 1 of the step wants futoin::uv::Stat (size, "
            "mode, mtime), the result is a uint64 (2)|0");
    const std::string einval = "|" + std::to_string(UV_EINVAL);
    assert_string_equal(got[5].c_str(),
            ("InternalError|EINVAL: futoin_uv_file_pread: f is NULL" + einval).c_str());
    assert_string_equal(got[6].c_str(),
            ("InternalError|EINVAL: futoin_uv_udp_recv: u is NULL" + einval).c_str());
    assert_string_equal(got[7].c_str(),
            ("InternalError|EINVAL: futoin_uv_process_wait: p is NULL" + einval).c_str());
}

} // namespace

int main()
{
    std::signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_udp_echo_with_sender, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_unix_socket_serve_and_peer_gone, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_unix_socket_serve_client_gone, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_process_output_and_status, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_process_timeout_signals_child, track_setup,
                track_teardown),
        cmocka_unit_test_setup_teardown(test_files_and_paths, track_setup, track_teardown),
        cmocka_unit_test_setup_teardown(test_file_errors, track_setup, track_teardown),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
