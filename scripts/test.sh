#!/usr/bin/env bash
# The test command: installs the tools (Debian, as root) and runs the whole
# suite in several configurations, each in its own build directory, stopping at
# the first failure:
#   1. gcc, Release, -Werror            + ctest
#   2. clang, ASan + UBSan              + ctest
#   3. gcc, every test under valgrind   + ctest
#   4. clang, ThreadSanitizer, the thread tests (scripts/tsan.sh)
#   5. libFuzzer: the engine against the reference model for FUZZ_SECONDS
#      (default 60; scripts/fuzz.sh)
#   6. cmake --install into a temporary prefix, then build and run a small
#      program against the installed headers and static and shared libraries
#      found with pkg-config.
#   7. gcc, Debug (assertions on), the step node layout of 32-bit targets
#      (FUTOIN_STEP_KIND_BYTE: the kind in a byte of its own) + ctest.
#
#   bash scripts/test.sh
#
# Environment:
#   TEST_BUILD_ROOT=dir  where the build directories go (default: build-test)
#   FUTOIN_SKIP_DEPS=1   do not run apt-get (tools already installed)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT_DIR=$(pwd)
BUILD_ROOT=${TEST_BUILD_ROOT:-build-test}
JOBS=2

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

STAGES=("gcc Release -Werror" "clang ASan+UBSan" "gcc valgrind" "clang TSan (threads)"
    "fuzz engine vs model" "install + pkg-config" "gcc 32-bit step layout")
declare -A RESULT=()
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
        printf '  %-24s %s\n' "$s" "${RESULT[$s]:-not run}"
    done
    if [ $rc -eq 0 ]; then
        echo "== ALL PASSED"
    else
        echo "== FAILED (exit code $rc) in stage: ${CURRENT:-set-up}"
    fi
    exit $rc
}
trap summary EXIT

stage() {
    CURRENT=$1
    echo
    echo "======================================================================"
    echo "== $1"
    echo "======================================================================"
}

passed() {
    RESULT[$CURRENT]="passed"
}

install_deps() {
    if [ "${FUTOIN_SKIP_DEPS:-0}" = 1 ]; then
        return
    fi
    local sudo=()
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null; then
            sudo=(sudo)
        else
            echo "test.sh: not root and no sudo: skipping apt-get" >&2
            return
        fi
    fi
    if ! command -v apt-get >/dev/null; then
        echo "test.sh: no apt-get: install gcc, g++, clang, cmake, pkg-config, cmocka, valgrind yourself" >&2
        return
    fi
    echo "==> Installing tools (apt-get)"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        gcc g++ clang make cmake pkg-config libcmocka-dev valgrind \
        libc6-dbg llvm libclang-rt-14-dev libuv1-dev curl wrk
    # libc6-dbg: libc symbols for valgrind's suppressions and traces;
    # llvm: llvm-symbolizer, for readable ASan/UBSan stack traces;
    # libclang-rt-14-dev: libFuzzer and the TSan runtime for clang;
    # libuv1-dev, curl, wrk: the libuv backend and its HTTP server tests.
}

# configure_build DIR CMAKE-ARGS...: a fresh configure + build in DIR.
configure_build() {
    local dir=$1
    shift
    rm -rf "$dir"
    cmake -S "$ROOT_DIR" -B "$dir" "$@"
    cmake --build "$dir" -j"$JOBS"
}

run_ctest() {
    (cd "$1" && ctest --output-on-failure -j"$JOBS")
}

install_deps
mkdir -p "$BUILD_ROOT"

# 1 -------------------------------------------------------------------------
stage "gcc Release -Werror"
configure_build "$BUILD_ROOT/gcc" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DFUTOIN_WERROR=ON
run_ctest "$BUILD_ROOT/gcc"
passed

# 2 -------------------------------------------------------------------------
stage "clang ASan+UBSan"
configure_build "$BUILD_ROOT/clang-sanitize" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DFUTOIN_WERROR=ON \
    -DFUTOIN_SANITIZE=ON
run_ctest "$BUILD_ROOT/clang-sanitize"
passed

# 3 -------------------------------------------------------------------------
stage "gcc valgrind"
configure_build "$BUILD_ROOT/gcc-valgrind" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DFUTOIN_WERROR=ON \
    -DFUTOIN_VALGRIND=ON
run_ctest "$BUILD_ROOT/gcc-valgrind"
passed

# 4 -------------------------------------------------------------------------
stage "clang TSan (threads)"
TSAN_BUILD_DIR="$BUILD_ROOT/clang-tsan" JOBS=$JOBS bash scripts/tsan.sh
passed

# 5 -------------------------------------------------------------------------
# A bounded differential fuzz run on every submission (scripts/fuzz.sh SECONDS
# for longer ones); the corpus itself is replayed by ctest in every stage.
stage "fuzz engine vs model"
FUTOIN_SKIP_DEPS=1 FUZZ_BUILD_DIR="$BUILD_ROOT/fuzz" bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
passed

# 6 -------------------------------------------------------------------------
stage "install + pkg-config"
PREFIX="$ROOT_DIR/$BUILD_ROOT/install-prefix"
rm -rf "$PREFIX"
# The prefix is given at configure time: the .pc file records it.
configure_build "$BUILD_ROOT/install" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_INSTALL_PREFIX="$PREFIX" \
    -DFUTOIN_WERROR=ON -DFUTOIN_BUILD_TESTS=OFF -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_BUILD_BENCH=OFF
cmake --install "$BUILD_ROOT/install"

PC=$(find "$PREFIX" -name futoin_asyncsteps.pc | head -n1)
[ -n "$PC" ] || { echo "futoin_asyncsteps.pc was not installed"; exit 1; }
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$PC")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
LIBDIR=$(pkg-config --variable=libdir futoin_asyncsteps)
INCDIR=$(pkg-config --variable=includedir futoin_asyncsteps)
echo "pkg-config: libdir=$LIBDIR includedir=$INCDIR"
case "$LIBDIR" in
    "$PREFIX"/*) ;;
    *) echo "the .pc file points outside the install prefix: $LIBDIR"; exit 1 ;;
esac
# Every public header of the source tree, and both libraries.
expected_files=()
for h in "$ROOT_DIR"/include/futoin/*.h; do
    expected_files+=("$INCDIR/futoin/$(basename "$h")")
done
expected_files+=("$LIBDIR/libfutoin_asyncsteps.a" "$LIBDIR/libfutoin_asyncsteps.so")
for f in "${expected_files[@]}"; do
    [ -e "$f" ] || { echo "missing after install: $f"; exit 1; }
    echo "installed: ${f#"$PREFIX"/}"
done

CHECK_DIR="$ROOT_DIR/$BUILD_ROOT/install-check"
rm -rf "$CHECK_DIR"
mkdir -p "$CHECK_DIR"
cat > "$CHECK_DIR/check.c" <<'CEOF'
/* Built against the installed library only. */
#include <futoin/asyncsteps.h>

#include <stdio.h>

static void answer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_success1(as, futoin_val_i32(42));
}

int main(void)
{
    FutoInLoop* loop = futoin_loop_new_virtual();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, answer, NULL, NULL);
    FutoInOutcome out;
    int rc = futoin_promise(root, &out);
    int value = futoin_arg_i32(&out.args, 0, -1);
    futoin_outcome_reset(&out);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
    printf("install check: promise rc=%d value=%d\n", rc, value);
    return rc == FUTOIN_PROMISE_OK && value == 42 ? 0 : 1;
}
CEOF
CFLAGS_CHECK=(-std=c11 -Wall -Wextra -Wpedantic -Werror)
# Shared library, exactly as pkg-config says.
# shellcheck disable=SC2046
gcc "${CFLAGS_CHECK[@]}" -o "$CHECK_DIR/check_shared" "$CHECK_DIR/check.c" \
    $(pkg-config --cflags --libs futoin_asyncsteps)
# ldd's output is captured first: with pipefail, grep -q closing the pipe
# early would make the pipeline fail even on a match.
LDD_OUT=$(LD_LIBRARY_PATH="$LIBDIR" ldd "$CHECK_DIR/check_shared")
if ! grep -q 'libfutoin_asyncsteps\.so' <<<"$LDD_OUT"; then
    echo "check_shared is not linked against the shared library"
    exit 1
fi
printf "shared: "
LD_LIBRARY_PATH="$LIBDIR" "$CHECK_DIR/check_shared"
# Static library: the archive itself plus pkg-config's private libs.
# shellcheck disable=SC2046
gcc "${CFLAGS_CHECK[@]}" -o "$CHECK_DIR/check_static" "$CHECK_DIR/check.c" \
    $(pkg-config --cflags futoin_asyncsteps) "$LIBDIR/libfutoin_asyncsteps.a" \
    $(pkg-config --static --libs-only-l futoin_asyncsteps | sed 's/-lfutoin_asyncsteps//')
LDD_OUT=$(ldd "$CHECK_DIR/check_static")
if grep -q 'libfutoin_asyncsteps' <<<"$LDD_OUT"; then
    echo "check_static depends on the shared library"
    exit 1
fi
printf "static: "
"$CHECK_DIR/check_static"
# The libuv backend (installed when libuv was found), through its own .pc.
if [ -e "$LIBDIR/pkgconfig/futoin_asyncsteps_uv.pc" ]; then
    cat > "$CHECK_DIR/check_uv.c" <<'CEOF'
/* Built against the installed libuv backend only. */
#include <futoin/uv.h>

#include <stdio.h>

static int g_done;

static void after_sleep(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as, (void)data, (void)args;
    g_done = 1;
}

static void start(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_uv_sleep(as, 5);
    futoin_add(as, after_sleep, NULL, NULL);
}

int main(void)
{
    FutoInUv* uv = futoin_uv_new(NULL);
    FutoInAsyncSteps* root = futoin_asyncsteps_new(futoin_uv_loop(uv));
    futoin_add(root, start, NULL, NULL);
    futoin_execute(root, NULL, NULL);
    futoin_uv_run(uv);
    futoin_asyncsteps_free(root);
    futoin_uv_free(uv);
    printf("install check: uv sleep done=%d\n", g_done);
    return g_done ? 0 : 1;
}
CEOF
    # shellcheck disable=SC2046
    gcc "${CFLAGS_CHECK[@]}" -D_POSIX_C_SOURCE=200809L -o "$CHECK_DIR/check_uv" \
        "$CHECK_DIR/check_uv.c" $(pkg-config --cflags --libs futoin_asyncsteps_uv)
    printf "uv: "
    LD_LIBRARY_PATH="$LIBDIR" "$CHECK_DIR/check_uv"
fi
passed

# 7 -------------------------------------------------------------------------
# The step node layout that 32-bit targets get, run on this host: the engine
# keeps a step's kind in a byte of its own instead of a pointer's low bits.
stage "gcc 32-bit step layout"
configure_build "$BUILD_ROOT/gcc-kind-byte" -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DFUTOIN_WERROR=ON \
    -DCMAKE_C_FLAGS=-DFUTOIN_STEP_KIND_BYTE -DFUTOIN_WITH_UV=OFF \
    -DFUTOIN_BUILD_EXAMPLES=OFF -DFUTOIN_BUILD_BENCH=OFF
run_ctest "$BUILD_ROOT/gcc-kind-byte"
passed
CURRENT=""
