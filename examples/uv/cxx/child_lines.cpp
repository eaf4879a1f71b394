/* SPDX-License-Identifier: MIT */
/*
 * A child process and files as steps, over futoin/uv.hpp:
 *
 *   cxx_child_lines [PROGRAM [ARG...]]
 *
 * 1. runs a child (PROGRAM with its arguments, or a small shell script)
 *    with its stdout and stderr on pipes, and reads both at once, line by
 *    line, in two branches of a parallel step: stdout lines are printed
 *    as they come, stderr lines counted;
 * 2. waits for its exit and prints the status;
 * 3. saves the stdout lines to a file in a temporary directory (open,
 *    pwrite, fstat, close), lists the directory, and removes both;
 * 4. gives a slow child 50 ms: the wait's timeout ends it with its term
 *    signal, and a second wait reports the signal.
 * Every error reaches the root's handler, which prints code, error_info
 * and the libuv error number, and the program exits 1.
 */
#include <futoin/uv.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>

using futoin::Steps;
using namespace std::chrono_literals;
namespace uv = futoin::uv;

namespace {

struct Run {
    uv::Process child;
    std::vector<std::string> lines; /* the child's stdout */
    std::size_t errors = 0;         /* lines on its stderr */
    std::string dir;                /* the temporary directory */
    std::string file;               /* the saved lines */
};

/* Reads lines from one of the child's pipes until its end (EOF), handing
 * each to on_line. */
template <class F> void read_lines(Steps& as, Run& run, int fd, F on_line)
{
    as.loop([&run, fd, on_line](Steps& as) {
        as.add([&run, fd](Steps& as) { uv::read_line(as, run.child.stdio(fd)); },
                [](Steps& as, std::string_view) {
                    if (uv::uv_errno(as) == UV_EOF) {
                        as.break_loop();
                    }
                });
        as.add([on_line](Steps&, std::string_view line) { on_line(line); });
    });
}

void print_error(Steps& as, std::string_view code)
{
    std::printf("error: %.*s: %.*s (uv error %d)\n", int(code.size()), code.data(),
            int(as.error_info().size()), as.error_info().data(), uv::uv_errno(as));
}

} // namespace

int main(int argc, char** argv)
{
    std::signal(SIGPIPE, SIG_IGN);
    uv::Backend b;
    Run run;

    uv::SpawnOptions o;
    if (argc > 1) {
        o.file = argv[1];
        o.args.assign(argv + 1, argv + argc);
    } else {
        o.file = "/bin/sh";
        o.args = { "sh", "-c",
            "echo alpha; echo warning >&2; echo beta; echo gamma; echo done >&2; exit 3" };
    }
    o.stdio[0] = uv::Stdio::ignore;
    o.stdio[1] = uv::Stdio::pipe;
    o.stdio[2] = uv::Stdio::pipe;
    int err = 0;
    run.child = uv::Process::spawn(b, o, &err);
    if (!run.child) {
        std::printf("cannot start %s: %s\n", o.file.c_str(), uv_strerror(err));
        return 1;
    }
    std::string tmpl = "/tmp/futoin_child_lines_XXXXXX";
    if (const char* t = std::getenv("TMPDIR"); t && *t) {
        tmpl = std::string(t) + "/futoin_child_lines_XXXXXX";
    }
    if (!mkdtemp(tmpl.data())) {
        std::perror("mkdtemp");
        return 1;
    }
    run.dir = tmpl;
    run.file = run.dir + "/lines.txt";

    bool failed = false;
    {
        futoin::Root root = b.root();
        /* 1. both pipes at once */
        root.add([&run](Steps& as) {
                Steps p = as.parallel();
                p.add([&run](Steps& as) {
                    read_lines(as, run, 1, [&run](std::string_view line) {
                        run.lines.emplace_back(line);
                        std::printf("%2zu: %.*s\n", run.lines.size(), int(line.size()),
                                line.data());
                    });
                });
                p.add([&run](Steps& as) {
                    read_lines(as, run, 2, [&run](std::string_view) { ++run.errors; });
                });
            })
                /* 2. the exit */
                .add([&run](Steps& as) {
                    std::printf("stderr: %zu line(s)\n", run.errors);
                    uv::process_wait(as, run.child);
                })
                .add([&run](Steps& as, uv::Exit e) {
                    std::printf("exit status %lld, signal %d\n", static_cast<long long>(e.status),
                            e.signal);
                    run.child.reset();
                    /* 3. the lines to a file */
                    uv::file_open(as, run.file, O_WRONLY | O_CREAT | O_EXCL, 0600);
                })
                .add([&run](Steps& as, uv::File f) {
                    std::string text;
                    for (const std::string& l : run.lines) {
                        text += l + "\n";
                    }
                    uv::file_pwrite(as, f, 0, text);
                    uv::file_fstat(as, f);
                    as.add([f](Steps& as, uv::Stat st) {
                        std::printf("saved %llu bytes, mode %o\n",
                                static_cast<unsigned long long>(st.size),
                                static_cast<unsigned>(st.mode & 0777));
                        uv::file_close(as, f);
                    });
                })
                .add([&run](Steps& as) { uv::readdir(as, run.dir); })
                .add([&run](Steps& as, uv::DirNames names) {
                    for (std::string_view n : names) {
                        std::printf("in the directory: %.*s\n", int(n.size()), n.data());
                    }
                    uv::unlink(as, run.file);
                    uv::rmdir(as, run.dir);
                })
                /* 4. a slow child and a timeout */
                .add([&run, &b](Steps& as) {
                    uv::SpawnOptions slow;
                    slow.file = "/bin/sh";
                    slow.args = { "sh", "-c", "exec sleep 60" };
                    slow.stdio[0] = uv::Stdio::ignore;
                    slow.kill_grace = 2s;
                    int err = 0;
                    run.child = uv::Process::spawn(b, slow, &err);
                    if (!run.child) {
                        as.error(FUTOIN_COMM_ERROR, uv_strerror(err));
                        return;
                    }
                    as.add(
                            [&run](Steps& as) {
                                as.set_timeout(50ms);
                                uv::process_wait(as, run.child);
                            },
                            [](Steps& as, std::string_view code) {
                                std::printf("a slow child: %.*s\n", int(code.size()), code.data());
                                as.success();
                            });
                    as.add([&run](Steps& as) { uv::process_wait(as, run.child); });
                })
                .add([&run](Steps&, uv::Exit e) {
                    std::printf("ended by signal %d (SIGTERM: %s)\n", e.signal,
                            e.signal == SIGTERM ? "yes" : "no");
                    run.child.reset();
                });
        root.execute([&failed](Steps& as, std::string_view code) {
            print_error(as, code);
            failed = true;
        });
        b.run();
    }
    run.child.reset();
    return failed ? 1 : 0;
}
