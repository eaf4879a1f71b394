#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The test command: installs the tools (Debian, as root) and runs the whole
# suite in several configurations, each in its own build directory, stopping at
# the first failure:
#   0. source checks: every C/C++ source and header formatted as
#      .clang-format says (scripts/check-format.sh), every file with its
#      SPDX-License-Identifier line (scripts/check-spdx.sh), commit subjects
#      as CONTRIBUTING.md says (scripts/check-commits.sh).
#   1. gcc, Release, -Werror            + ctest (which also runs the checks
#      of the tree: layers, source lists, internal declarations, symbols;
#      the stages after it leave out these checks of the sources, which
#      give the same answer in every configuration, but the symbols)
#   2. clang-tidy over the library, src/ and the libuv backend, with the
#      checks of .clang-tidy, every finding an error (scripts/lint.sh).
#   3. clang, ASan + UBSan              + ctest
#   4. valgrind: the programs of stage 1, not built again, every test
#      under valgrind memcheck but the C++20 copies of the C++ suites (their
#      C++17 builds run) and the tests that run nothing under its wrapper
#      (they would repeat stage 1 exactly), 1.5 x CTEST_JOBS at once
#   5. clang, ThreadSanitizer, the thread tests (scripts/tsan.sh; only
#      the library and their programs are built)
#   6. libFuzzer: the engine against the reference model for FUZZ_SECONDS
#      (default 30; scripts/fuzz.sh)
#   7. cmake --install into a temporary prefix, then scripts/check-consumer.sh:
#      the installed files, and programs on the core and on the libuv backend
#      built against them with pkg-config (shared and --static), CMake
#      find_package and add_subdirectory, checked with nm for one copy of
#      the core.
#   8. gcc, Debug (assertions on), the step node layout of 32-bit targets
#      (FUTOIN_STEP_KIND_BYTE: the kind in a byte of its own) + ctest.
#   9. the API reference: target docs (Doxygen over the public headers and
#      docs/*.md), where an undocumented function, type, enum value or
#      macro, a missing @param or @return, a documentation error, or a
#      broken link between the pages, fails.
#  10. the Debian packages (scripts/check-deb.sh): dpkg-buildpackage, lintian
#      without errors, the packages installed and checked with
#      scripts/check-consumer.sh on /usr, then purged (needs root or sudo).
#  11. gcc, Release, the portable POSIX path (FUTOIN_PORTABLE_POSIX: what
#      macOS and the BSDs take, a pipe, poll(), nanosleep(), one shared
#      listening socket for a port) + ctest, without the C++ tests and
#      examples (headers over the C API, nothing of the system's).
#  12. aarch64 under qemu-user: Debian's cross gcc, every CTest test but
#      the out-of-memory sweeps (scripts/cross-test.sh aarch64, which says
#      why; 64-bit ARM, little-endian).
#  13. s390x under qemu-user: the same (scripts/cross-test.sh s390x;
#      64-bit big-endian).
#  14. the Python binding (bindings/python, docs/PYTHON.md): its cffi
#      extension built in a temporary directory against the library of
#      stage 1 (TEST_BUILD_ROOT/gcc), then its pytest suites with Debian's
#      /usr/bin/python3, then most suites again under valgrind with
#      PYTHONMALLOC=malloc (about 30 s in all).
#  15. 64-bit Windows under wine64: Debian's mingw-w64 gcc and g++, cmocka
#      built for mingw from Debian's source package, the static library,
#      every example and the tests that need no POSIX
#      (scripts/cross-test.sh mingw64; docs/PORTING.md).
#
#   bash scripts/test.sh           the full run, stages 0-15 (CI; about 13 min)
#   bash scripts/test.sh --quick   stages 0 and 1 only, for the inner development
#                                  loop (a few minutes)
#
# --quick: the source checks, then gcc, Release, -Werror, every CTest test (the source checks
# abi_symbols and internal_decls included), in TEST_BUILD_ROOT/gcc like
# stage 1 but kept between runs: the next --quick rebuilds only what
# changed (a full run starts that directory afresh). Only the packages that
# stage needs are installed.
#
# Environment:
#   TEST_BUILD_ROOT=dir  where the build directories go (default: build-test)
#   CTEST_JOBS=n         tests run at once (default 4: they mostly wait;
#                        stage 4 runs half as many again)
#   FUTOIN_SKIP_DEPS=1   do not install missing packages (scripts/deps.sh)
set -euo pipefail

QUICK=0
case "${1:-}" in
    "") ;;
    --quick) QUICK=1 ;;
    -h | --help)
        sed -n '3,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: $0 [--quick]" >&2
        exit 2
        ;;
esac
if [ $# -gt 1 ]; then
    echo "usage: $0 [--quick]" >&2
    exit 2
fi

cd "$(dirname "$0")/.."
ROOT_DIR=$(pwd)
BUILD_ROOT=${TEST_BUILD_ROOT:-build-test}
# Absolute from here on: the install stage hands it to other tools.
case $BUILD_ROOT in
    /*) ;;
    *) BUILD_ROOT=$ROOT_DIR/$BUILD_ROOT ;;
esac
JOBS=2
# Tests run 4 at a time on the 2 cores: most of their time is spent
# waiting (timers, sockets, child processes, timeouts scaled 10x under
# valgrind), so 4 at once halves the valgrind stage (198 -> 118 s) and
# takes a third off the others (32 -> 23 s) without making any busier
# than a loaded machine, which every test is written to pass on.
CTEST_JOBS=${CTEST_JOBS:-4}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

STAGES=("source checks" "gcc Release -Werror" "clang-tidy lint" "clang ASan+UBSan"
    "gcc valgrind" "clang TSan (threads)" "fuzz engine vs model" "install + consumers"
    "gcc 32-bit step layout" "API reference (Doxygen)" "debian packages"
    "portable POSIX path" "aarch64 (qemu-user)" "s390x (qemu-user)" "python binding"
    "windows (mingw-w64 + wine64)")
if [ $QUICK = 1 ]; then
    STAGES=("source checks" "gcc Release -Werror")
fi
declare -A RESULT=() STAGE_START=() SECONDS_OF=()
CURRENT=""
START=$(date +%s)

summary() {
    local rc=$?
    if [ -n "$CURRENT" ] && [ -z "${RESULT[$CURRENT]:-}" ]; then
        RESULT[$CURRENT]="FAILED"
    fi
    echo
    echo "======================================================================"
    echo "== Test summary ($(( $(date +%s) - START )) s)"
    echo "======================================================================"
    for s in "${STAGES[@]}"; do
        # How long each stage took: where the time of a run goes.
        printf '  %-24s %-8s %s\n' "$s" "${RESULT[$s]:-not run}" \
            "${SECONDS_OF[$s]:+${SECONDS_OF[$s]} s}"
        # A run cut short (a signal, an exit status lost on the way) must
        # not read as a pass: every stage has to have passed.
        if [ $rc -eq 0 ] && [ "${RESULT[$s]:-}" != passed ]; then
            rc=1
        fi
    done
    if [ $rc -eq 0 ]; then
        echo "== ALL PASSED"
    else
        echo "== FAILED (exit code $rc) in stage: ${CURRENT:-set-up}"
    fi
    exit $rc
}
trap summary EXIT
# Killed (a CI time limit, Ctrl-C): the summary reports a failure.
trap 'exit 143' TERM
trap 'exit 130' INT

stage() {
    CURRENT=$1
    STAGE_START[$1]=$(date +%s)
    echo
    echo "======================================================================"
    echo "== $1"
    echo "======================================================================"
}

passed() {
    RESULT[$CURRENT]="passed"
    SECONDS_OF[$CURRENT]=$(( $(date +%s) - STAGE_START[$CURRENT] ))
}

. "$ROOT_DIR/scripts/deps.sh"

install_deps() {
    if [ $QUICK = 1 ]; then
        # Stages 0 and 1: clang-format and git for the source checks; gcc and g++ (the headers compiled as C++), cmocka, and
        # libuv with curl and wrk for the backend and its HTTP server tests;
        # libssl-dev and openssl for its TLS streams and their tests.
        futoin_need gcc g++ make cmake pkg-config libcmocka-dev libuv1-dev curl wrk \
            libssl-dev openssl clang-format git
        return
    fi
    # libc6-dbg: libc symbols for valgrind's suppressions and traces;
    # llvm: llvm-symbolizer, for readable ASan/UBSan stack traces;
    # libclang-rt-14-dev: libFuzzer and the TSan runtime for clang;
    # libuv1-dev, curl, wrk: the libuv backend and its HTTP server tests;
    # libssl-dev, openssl: its TLS streams, the HTTPS checks (s_client);
    # clang-format, clang-tidy, git: the source checks and the lint stage.
    futoin_need gcc g++ clang make cmake pkg-config libcmocka-dev valgrind \
        libc6-dbg llvm libclang-rt-14-dev libuv1-dev libssl-dev openssl curl wrk clang-format \
        clang-tidy git
}

# configure_build DIR CMAKE-ARGS...: a fresh configure + build in DIR.
configure_build() {
    local dir=$1
    shift
    rm -rf "$dir"
    cmake -S "$ROOT_DIR" -B "$dir" "$@"
    cmake --build "$dir" -j"$JOBS"
}

# run_ctest DIR [CTEST-ARGS...] (JOBS_NOW=n: tests at once, else CTEST_JOBS)
run_ctest() {
    local dir=$1
    shift
    (cd "$dir" && ctest --output-on-failure -j"${JOBS_NOW:-$CTEST_JOBS}" "$@")
}

# The checks of the source tree itself (label abi but abi_symbols, which
# reads the libraries of the build): the same in every configuration, so
# only stage 1 runs them.
TREE_CHECKS='^(internal_decls|layers|source_lists)$'

install_deps
mkdir -p "$BUILD_ROOT"

# 0 -------------------------------------------------------------------------
# Cheap checks of the sources themselves, before anything is built.
stage "source checks"
bash scripts/check-format.sh
bash scripts/check-spdx.sh
bash scripts/check-commits.sh
passed

# 1 -------------------------------------------------------------------------
stage "gcc Release -Werror"
# FUTOIN_VALGRIND=OFF: stage 4 turns it on in this directory for its run.
GCC_ARGS=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
    -DFUTOIN_WERROR=ON -DFUTOIN_VALGRIND=OFF)
if [ $QUICK = 1 ]; then
    # Incremental: the directory is kept (configure_build starts afresh).
    cmake -S "$ROOT_DIR" -B "$BUILD_ROOT/gcc" "${GCC_ARGS[@]}"
    cmake --build "$BUILD_ROOT/gcc" -j"$JOBS"
else
    configure_build "$BUILD_ROOT/gcc" "${GCC_ARGS[@]}"
fi
run_ctest "$BUILD_ROOT/gcc"
passed
if [ $QUICK = 1 ]; then
    CURRENT=""
    exit 0
fi

# 2 -------------------------------------------------------------------------
# clang-tidy over the library (.clang-tidy): any finding fails.
stage "clang-tidy lint"
FUTOIN_SKIP_DEPS=1 LINT_BUILD_DIR="$BUILD_ROOT/lint" JOBS=$JOBS bash scripts/lint.sh
passed

# 3 -------------------------------------------------------------------------
stage "clang ASan+UBSan"
configure_build "$BUILD_ROOT/clang-sanitize" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DFUTOIN_WERROR=ON \
    -DFUTOIN_SANITIZE=ON
run_ctest "$BUILD_ROOT/clang-sanitize" -E "$TREE_CHECKS"
passed

# 4 -------------------------------------------------------------------------
# The programs of stage 1, not built again: FUTOIN_VALGRIND changes only how
# CTest runs them (the wrapper, cmake/FutoinTest.cmake), so the directory is
# reconfigured with it for this run and without it afterwards (stage 14
# links its library). They are Release builds without -g: a report names
# the functions; a RelWithDebInfo build configured with FUTOIN_VALGRIND=ON
# gives the lines too. The C++20 copies of the C++ suites are left out
# (the C++17 ones run); the timings of stage 1's run are put aside, so that
# CTest starts the tests that are long under valgrind first (their COST).
# Half as many again at once as elsewhere (6 by default): under valgrind
# they wait even more; at 4 they kept 1.1 of the 2 cores busy and took
# 170 s, at 6 1.7 cores and 126 s. Also left out: the tests that start no
# program through the valgrind wrapper, which would repeat stage 1's run
# of the same programs exactly: abi_symbols, uv_http_args, and
# uv_http_load (which runs the server under valgrind itself, in stage 1
# too).
stage "gcc valgrind"
cmake -S "$ROOT_DIR" -B "$BUILD_ROOT/gcc" -DFUTOIN_VALGRIND=ON
cmake --build "$BUILD_ROOT/gcc" -j"$JOBS"
COSTS="$BUILD_ROOT/gcc/Testing/Temporary/CTestCostData.txt"
[ ! -f "$COSTS" ] || mv "$COSTS" "$COSTS.plain"
JOBS_NOW=$((CTEST_JOBS * 3 / 2)) run_ctest "$BUILD_ROOT/gcc" \
    -E "$TREE_CHECKS|_cxx20\$|^(abi_symbols|uv_http_args|uv_http_load)\$"
[ ! -f "$COSTS.plain" ] || mv "$COSTS.plain" "$COSTS"
cmake -S "$ROOT_DIR" -B "$BUILD_ROOT/gcc" -DFUTOIN_VALGRIND=OFF
passed

# 5 -------------------------------------------------------------------------
stage "clang TSan (threads)"
TSAN_BUILD_DIR="$BUILD_ROOT/clang-tsan" JOBS=$JOBS bash scripts/tsan.sh
passed

# 6 -------------------------------------------------------------------------
# A bounded differential fuzz run on every submission (scripts/fuzz.sh SECONDS
# for longer ones); the corpus itself is replayed by ctest in every stage.
stage "fuzz engine vs model"
FUTOIN_SKIP_DEPS=1 FUZZ_BUILD_DIR="$BUILD_ROOT/fuzz" bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
passed

# 7 -------------------------------------------------------------------------
stage "install + consumers"
PREFIX="$BUILD_ROOT/install-prefix"
rm -rf "$PREFIX"
# The prefix is given at configure time: the .pc file records it.
configure_build "$BUILD_ROOT/install" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_INSTALL_PREFIX="$PREFIX" \
    -DFUTOIN_WERROR=ON -DFUTOIN_BUILD_TESTS=OFF -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_BUILD_BENCH=OFF
cmake --install "$BUILD_ROOT/install"

# What an outside project sees (scripts/check-consumer.sh): the installed
# files and SONAMEs; programs on the core and on both libraries built with
# pkg-config (shared and --static), find_package and add_subdirectory, run,
# and checked with nm for a second copy of the core.
CHECK_DIR="$BUILD_ROOT/install-check" JOBS=$JOBS bash scripts/check-consumer.sh "$PREFIX"
passed

# 8 -------------------------------------------------------------------------
# The step node layout that 32-bit targets get, run on this host: the engine
# keeps a step's kind in a byte of its own instead of a pointer's low bits.
stage "gcc 32-bit step layout"
configure_build "$BUILD_ROOT/gcc-kind-byte" -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DFUTOIN_WERROR=ON \
    -DCMAKE_C_FLAGS=-DFUTOIN_STEP_KIND_BYTE -DFUTOIN_WITH_UV=OFF \
    -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_BUILD_BENCH=OFF -DFUTOIN_CXX_TEST_CXX20=OFF
run_ctest "$BUILD_ROOT/gcc-kind-byte" -E "$TREE_CHECKS"
passed

# 9 -------------------------------------------------------------------------
# The API reference: Doxygen over the public headers and docs/*.md with
# warnings as errors (docs/Doxyfile.in), then a check that every link
# between its pages resolves (cmake/CheckDocLinks.cmake). Only the docs
# target is built.
stage "API reference (Doxygen)"
futoin_need doxygen
rm -rf "$BUILD_ROOT/docs"
cmake -S "$ROOT_DIR" -B "$BUILD_ROOT/docs" -DFUTOIN_BUILD_DOCS=ON \
    -DFUTOIN_BUILD_TESTS=OFF -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_BUILD_BENCH=OFF
cmake --build "$BUILD_ROOT/docs" --target docs
echo "API reference: $BUILD_ROOT/docs/docs/html/index.html"
passed

# 10 ------------------------------------------------------------------------
# The Debian packages of debian/, built, checked with lintian, installed,
# used by outside programs and purged again (scripts/check-deb.sh). It
# installs packages, so it needs root or sudo.
stage "debian packages"
if [ "$(id -u)" = 0 ] || command -v sudo >/dev/null; then
    JOBS=$JOBS bash scripts/check-deb.sh
    passed
else
    echo "test.sh: not root and no sudo: the Debian packages are not checked"
    RESULT[$CURRENT]="skipped (not root)"
fi

# 11 ------------------------------------------------------------------------
# The code paths of the other POSIX systems, compiled and run on Linux:
# the wake-up pipe, poll() and nanosleep() of the loop, servers sharing a
# port through one socket (docs/PORTING.md). The benchmarks and the C++
# tests and examples are not built: the C++ layer is headers over the C
# API, with no code of its own that depends on the system (a third of
# this stage's build time).
stage "portable POSIX path"
configure_build "$BUILD_ROOT/gcc-portable" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DFUTOIN_WERROR=ON \
    -DFUTOIN_PORTABLE_POSIX=ON -DFUTOIN_BUILD_BENCH=OFF -DFUTOIN_BUILD_CXX_TEST=OFF
run_ctest "$BUILD_ROOT/gcc-portable" -E "$TREE_CHECKS"
passed

# 12, 13 --------------------------------------------------------------------
# Other architectures under qemu-user (scripts/cross-test.sh, which installs
# the cross compilers, the multiarch libraries and qemu-user): byte order,
# alignment, the signedness of char, atomics, another libc build.
stage "aarch64 (qemu-user)"
CROSS_BUILD_DIR="$BUILD_ROOT/cross-aarch64" JOBS=$JOBS CTEST_JOBS=$CTEST_JOBS \
    bash scripts/cross-test.sh aarch64
passed

stage "s390x (qemu-user)"
CROSS_BUILD_DIR="$BUILD_ROOT/cross-s390x" JOBS=$JOBS CTEST_JOBS=$CTEST_JOBS \
    bash scripts/cross-test.sh s390x
passed

# 14 ------------------------------------------------------------------------
# The Python binding on the static library of stage 1: the package is
# copied to a temporary directory (nothing is written into the tree), its
# extension built there, then the pytest suites run with Debian's Python
# (not a pyenv one on PATH without these packages).
stage "python binding"
futoin_need python3-cffi python3-dev python3-pytest python3-setuptools valgrind
PY_DIR="$BUILD_ROOT/python"
rm -rf "$PY_DIR"
mkdir -p "$PY_DIR"
cp -r "$ROOT_DIR/bindings/python/." "$PY_DIR/"
(cd "$PY_DIR" && FUTOIN_BUILD_DIR="$BUILD_ROOT/gcc" FUTOIN_INCLUDE_DIRS="$ROOT_DIR/include" \
    /usr/bin/python3 setup.py -q build_ext --inplace)
(cd "$PY_DIR" && FUTOIN_BUILD_DIR="$BUILD_ROOT/gcc" FUTOIN_INCLUDE_DIRS="$ROOT_DIR/include" \
    FUTOIN_SOURCE_DIR="$ROOT_DIR" PYTHONPATH="$PY_DIR" FUTOIN_CSTEPS_DIR="$PY_DIR/csteps" \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider tests)
# The C side under valgrind: every malloc through the C allocator
# (PYTHONMALLOC=malloc), no invalid access, and no block "definitely lost"
# but cffi's own one-time allocations (tests/valgrind.supp). Left out:
# the tracemalloc test (it traces Python's allocations itself) and the
# threads_pool example (its checksums are pure Python: slow there, and
# test_threads covers the same C paths); the lifetime tests run 2,000
# steps instead of 100,000, and the C module of the mixed tests is the one
# the first run built (FUTOIN_CSTEPS_DIR).
(cd "$PY_DIR" && FUTOIN_BUILD_DIR="$BUILD_ROOT/gcc" FUTOIN_INCLUDE_DIRS="$ROOT_DIR/include" \
    FUTOIN_SOURCE_DIR="$ROOT_DIR" PYTHONPATH="$PY_DIR" FUTOIN_CSTEPS_DIR="$PY_DIR/csteps" \
    PYTHONMALLOC=malloc FUTOIN_PY_STEPS=2000 \
    valgrind -q --error-exitcode=1 --leak-check=full --show-leak-kinds=definite \
    --errors-for-leak-kinds=definite \
    --suppressions=tests/valgrind.supp \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider -k "not memory_is_flat and not threads_pool" \
    tests/test_mixed.py tests/test_lifetime.py tests/test_examples.py tests/test_basics.py \
    tests/test_threads.py)
passed

# 15 ------------------------------------------------------------------------
# Windows: mingw-w64 and wine64 (scripts/cross-test.sh, which installs
# them and builds cmocka for mingw): the Win32 wake-up, aligned allocation,
# processor count and signal dump, winpthreads, the examples' output.
stage "windows (mingw-w64 + wine64)"
CROSS_BUILD_DIR="$BUILD_ROOT/cross-mingw64" JOBS=$JOBS CTEST_JOBS=$CTEST_JOBS \
    bash scripts/cross-test.sh mingw64
passed
CURRENT=""
