#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Checks an installed futoin_asyncsteps the way an outside project uses it:
#
#   bash scripts/check-consumer.sh PREFIX
#
#   1. the installed files: every public header (futoin/uv.h exactly when the
#      libuv backend is installed), futoin/version.h, shared and static
#      libraries with their SONAME links, the .pc files, the CMake package,
#      LICENSE and CHANGELOG.md; the SONAMEs; the exported symbols against
#      abi/*.symbols (scripts/check-abi.sh);
#   2. pkg-config: tests/consumer/core_app.c and uv_app.c (the latter on both
#      libraries) compiled with -std=c11 -Werror and linked to the shared
#      libraries, then with `pkg-config --static` to the static ones, then
#      fully static (cc -static with `pkg-config --static --libs`, libc and
#      libuv included: on Debian, libuv's archive is libuv_a.a) where the C
#      library has a static variant; run;
#   3. find_package: tests/consumer/ configured with CMAKE_PREFIX_PATH=PREFIX
#      (and a request for major version 1, which must be refused);
#   4. add_subdirectory: tests/consumer/ configured with the source tree
#      (FUTOIN_SOURCE_DIR), as FetchContent users get it: by default only the
#      static libraries are built, with BUILD_SHARED_LIBS=ON only the shared
#      ones, and no install rules come with them.
# Every program linked to the shared libraries is checked with nm: it holds
# no copy of a symbol that libfutoin_asyncsteps.so or
# libfutoin_asyncsteps_uv.so exports, and it loads one core library (the uv
# backend's own dependency). The static programs must need no futoin
# shared library.
#
# Environment:
#   CHECK_DIR=dir           work directory (default: a temporary one, removed)
#   FUTOIN_SOURCE_DIR=dir   source tree for step 4 (default: this script's tree)
#   CC=compiler             for step 2 (default: cc)
#   JOBS=n                  parallel build jobs of steps 3 and 4 (default: 2)
#   FUTOIN_DOCDIR=dir       where LICENSE and CHANGELOG.md are expected
#                           (default: PREFIX/share/doc/futoin_asyncsteps);
#   CHECK_DOCS=0            does not look for them (distribution packages
#                           install them elsewhere)
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 PREFIX" >&2
    exit 2
fi
PREFIX=$(cd "$1" && pwd -P)
SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd -P)
SRC_DIR=${FUTOIN_SOURCE_DIR:-$(cd "$SCRIPT_DIR/.." && pwd -P)}
CONSUMER_DIR="$SRC_DIR/tests/consumer"
CC=${CC:-cc}
if [ -n "${CHECK_DIR:-}" ]; then
    rm -rf "$CHECK_DIR"
    mkdir -p "$CHECK_DIR"
    CHECK_DIR=$(cd "$CHECK_DIR" && pwd -P)
else
    CHECK_DIR=$(mktemp -d)
    trap 'rm -rf "$CHECK_DIR"' EXIT
fi

fail() {
    echo "check-consumer: FAILED: $*" >&2
    exit 1
}

step() {
    echo
    echo "== check-consumer: $*"
}

# ---- where the package is ------------------------------------------------

PC=""
for d in "$PREFIX"/lib/pkgconfig "$PREFIX"/lib64/pkgconfig "$PREFIX"/lib/*/pkgconfig \
        "$PREFIX"/share/pkgconfig; do
    if [ -e "$d/futoin_asyncsteps.pc" ]; then
        PC="$d/futoin_asyncsteps.pc"
        break
    fi
done
[ -n "$PC" ] || fail "no futoin_asyncsteps.pc under $PREFIX"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$PC")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
LIBDIR=$(cd "$(pkg-config --variable=libdir futoin_asyncsteps)" && pwd -P)
INCDIR=$(cd "$(pkg-config --variable=includedir futoin_asyncsteps)" && pwd -P)
case "$LIBDIR/" in
    "$PREFIX"/*) ;;
    *) fail "the .pc file points outside the prefix: libdir $LIBDIR" ;;
esac
HAVE_UV=0
if [ -e "$(dirname "$PC")/futoin_asyncsteps_uv.pc" ]; then
    HAVE_UV=1
fi
VERSION=$(sed -n 's/^#define FUTOIN_VERSION_STRING "\(.*\)"$/\1/p' "$INCDIR/futoin/version.h")
MAJOR=${VERSION%%.*}
echo "check-consumer: prefix $PREFIX: version $VERSION, libdir $LIBDIR, libuv backend: $HAVE_UV"
[ "$(pkg-config --modversion futoin_asyncsteps)" = "$VERSION" ] \
    || fail "futoin_asyncsteps.pc says $(pkg-config --modversion futoin_asyncsteps), version.h $VERSION"

# ---- 1. installed files ---------------------------------------------------

step "installed files"
CMAKE_DIR="$LIBDIR/cmake/futoin_asyncsteps"
expected=("$INCDIR/futoin/version.h")
for h in "$SRC_DIR"/include/futoin/*.h "$SRC_DIR"/include/futoin/*.hpp; do
    name=$(basename "$h")
    if { [ "$name" = uv.h ] || [ "$name" = uv.hpp ]; } && [ $HAVE_UV = 0 ]; then
        [ ! -e "$INCDIR/futoin/$name" ] || fail "futoin/$name is installed without the libuv backend"
        continue
    fi
    expected+=("$INCDIR/futoin/$name")
done
libs=(futoin_asyncsteps)
[ $HAVE_UV = 1 ] && libs+=(futoin_asyncsteps_uv)
for lib in "${libs[@]}"; do
    expected+=("$LIBDIR/lib$lib.a" "$LIBDIR/lib$lib.so" "$LIBDIR/lib$lib.so.$MAJOR"
        "$LIBDIR/lib$lib.so.$VERSION" "$LIBDIR/pkgconfig/$lib.pc")
done
expected+=("$CMAKE_DIR/futoin_asyncstepsConfig.cmake" "$CMAKE_DIR/futoin_asyncstepsConfigVersion.cmake"
    "$CMAKE_DIR/futoin_asyncsteps_targets.cmake")
[ $HAVE_UV = 1 ] && expected+=("$CMAKE_DIR/futoin_asyncsteps_uv_targets.cmake")
if [ "${CHECK_DOCS:-1}" = 1 ]; then
    DOCDIR=${FUTOIN_DOCDIR:-$PREFIX/share/doc/futoin_asyncsteps}
    expected+=("$DOCDIR/LICENSE" "$DOCDIR/CHANGELOG.md")
fi
for f in "${expected[@]}"; do
    [ -e "$f" ] || fail "missing after install: $f"
    echo "installed: ${f#"$PREFIX"/}"
done
for lib in "${libs[@]}"; do
    soname=$(readelf -d "$LIBDIR/lib$lib.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    [ "$soname" = "lib$lib.so.$MAJOR" ] || fail "lib$lib.so has SONAME '$soname', not lib$lib.so.$MAJOR"
    echo "SONAME: $soname"
done
# The exported symbols against abi/*.symbols of the source tree.
NM=${NM:-nm} bash "$SRC_DIR/scripts/check-abi.sh" "$LIBDIR"
if [ $HAVE_UV = 1 ]; then
    # The backend's shared library links the shared core: one core per process.
    needed=$(readelf -d "$LIBDIR/libfutoin_asyncsteps_uv.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    grep -qx "libfutoin_asyncsteps.so.$MAJOR" <<<"$needed" \
        || fail "libfutoin_asyncsteps_uv.so does not need libfutoin_asyncsteps.so.$MAJOR: $needed"
fi

# ---- helpers ---------------------------------------------------------------

exports_of() {
    nm -D --defined-only "$1" | awk '{ print $NF }' | sort -u
}
CORE_EXPORTS="$CHECK_DIR/core.exports"
exports_of "$LIBDIR/libfutoin_asyncsteps.so" > "$CORE_EXPORTS"
[ -s "$CORE_EXPORTS" ] || fail "libfutoin_asyncsteps.so exports nothing"
UV_EXPORTS="$CHECK_DIR/uv.exports"
: > "$UV_EXPORTS"
if [ $HAVE_UV = 1 ]; then
    exports_of "$LIBDIR/libfutoin_asyncsteps_uv.so" > "$UV_EXPORTS"
fi

# copies EXE EXPORTS: the symbols of EXPORTS that EXE defines itself.
copies() {
    comm -12 <(nm --defined-only "$1" | awk '{ print $NF }' | sort -u) "$2"
}

# check_shared EXE [uv]: linked to the shared libraries (the uv backend's
# too with "uv"), with no copy of them.
check_shared() {
    local exe=$1 kind=${2:-} dup
    dup=$(copies "$exe" "$CORE_EXPORTS"; copies "$exe" "$UV_EXPORTS")
    if [ -n "$dup" ]; then
        fail "$exe holds its own copy of $(wc -l <<<"$dup") library symbols, e.g. $(head -n3 <<<"$dup" | tr '\n' ' ')"
    fi
    local needed
    needed=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    grep -qx "libfutoin_asyncsteps.so.$MAJOR" <<<"$needed" \
        || fail "$exe does not need libfutoin_asyncsteps.so.$MAJOR"
    if [ "$kind" = uv ]; then
        grep -qx "libfutoin_asyncsteps_uv.so.$MAJOR" <<<"$needed" \
            || fail "$exe does not need libfutoin_asyncsteps_uv.so.$MAJOR"
    fi
    # ldd's output is captured first: with pipefail, grep -q closing the
    # pipe early would make the pipeline fail even on a match.
    local ldd_out n
    ldd_out=$(LD_LIBRARY_PATH="$RUN_LIBPATH" ldd "$exe")
    n=$(grep -c 'libfutoin_asyncsteps\.so' <<<"$ldd_out" || true)
    [ "$n" = 1 ] || fail "$exe loads $n core libraries: $ldd_out"
    echo "nm: $(basename "$exe"): no copy of the libraries' $(wc -l <"$CORE_EXPORTS") + $(wc -l <"$UV_EXPORTS") exported symbols; one core library at run time"
}

# check_static EXE: the libraries are inside, no futoin shared library.
check_static() {
    local exe=$1 needed
    needed=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    if grep -q 'libfutoin' <<<"$needed"; then
        fail "$exe (static) needs a futoin shared library: $needed"
    fi
    # The nm check above can see copies: here there must be some.
    [ -n "$(copies "$exe" "$CORE_EXPORTS")" ] || fail "$exe (static) holds no core symbol"
}

# Programs built by hand find the libraries through LD_LIBRARY_PATH, the
# CMake-built ones through their RUNPATH (the prefix, or the build tree).
RUN_LIBPATH=$LIBDIR
run() {
    printf '%-17s' "$(basename "$1"):"
    LD_LIBRARY_PATH="$RUN_LIBPATH" "$1" || fail "$1 exited with $?"
}

# ---- 2. pkg-config ---------------------------------------------------------

step "pkg-config (shared and --static)"
CFLAGS_CHECK=(-std=c11 -Wall -Wextra -Wpedantic -Werror)
PC_DIR="$CHECK_DIR/pkg-config"
mkdir -p "$PC_DIR"
# The static libraries by file name: -lNAME would pick the .so next to them.
static_libs() {
    sed -e 's/-lfutoin_asyncsteps_uv\b/-l:libfutoin_asyncsteps_uv.a/g' \
        -e 's/-lfutoin_asyncsteps\b/-l:libfutoin_asyncsteps.a/g' <<<"$1"
}
# shellcheck disable=SC2046
"$CC" "${CFLAGS_CHECK[@]}" -o "$PC_DIR/core_app" "$CONSUMER_DIR/core_app.c" \
    $(pkg-config --cflags --libs futoin_asyncsteps)
# shellcheck disable=SC2046
"$CC" "${CFLAGS_CHECK[@]}" -o "$PC_DIR/core_app_static" "$CONSUMER_DIR/core_app.c" \
    $(pkg-config --cflags futoin_asyncsteps) \
    $(static_libs "$(pkg-config --static --libs futoin_asyncsteps)")
run "$PC_DIR/core_app"
run "$PC_DIR/core_app_static"
# The C++17 layer is header-only: the same module, and -std=c++17.
if command -v "${CXX:-c++}" >/dev/null; then
    # shellcheck disable=SC2046
    "${CXX:-c++}" -std=c++17 -Wall -Wextra -Wpedantic -Werror -pthread -o "$PC_DIR/cxx_app" \
        "$CONSUMER_DIR/cxx_app.cpp" $(pkg-config --cflags --libs futoin_asyncsteps)
    run "$PC_DIR/cxx_app"
    check_shared "$PC_DIR/cxx_app"
fi
check_shared "$PC_DIR/core_app"
check_static "$PC_DIR/core_app_static"
if [ $HAVE_UV = 1 ]; then
    # uv_app starts a thread itself: -pthread is its own business. Its
    # POSIX define comes from the .pc file (futoin/uv.h stops without one).
    # shellcheck disable=SC2046
    "$CC" "${CFLAGS_CHECK[@]}" -pthread -o "$PC_DIR/uv_app" "$CONSUMER_DIR/uv_app.c" \
        $(pkg-config --cflags --libs futoin_asyncsteps_uv)
    # shellcheck disable=SC2046
    "$CC" "${CFLAGS_CHECK[@]}" -pthread -o "$PC_DIR/uv_app_static" "$CONSUMER_DIR/uv_app.c" \
        $(pkg-config --cflags futoin_asyncsteps_uv) \
        $(static_libs "$(pkg-config --static --libs futoin_asyncsteps_uv)")
    run "$PC_DIR/uv_app"
    run "$PC_DIR/uv_app_static"
    check_shared "$PC_DIR/uv_app" uv
    check_static "$PC_DIR/uv_app_static"
fi

# check_fully_static EXE: no program interpreter, no shared library at all.
check_fully_static() {
    local exe=$1
    if readelf -l "$exe" | grep -q 'Requesting program interpreter'; then
        fail "$exe (cc -static) has a program interpreter"
    fi
    if readelf -d "$exe" 2>/dev/null | grep -q '(NEEDED)'; then
        fail "$exe (cc -static) needs shared libraries: $(readelf -d "$exe" | grep '(NEEDED)')"
    fi
    echo "fully static: $(basename "$exe"): no interpreter, no shared library"
}

# link_fully_static EXE SOURCE MODULE [FLAGS...]: cc -static with the
# module's `pkg-config --static --libs`, as given (no file names swapped
# in): -static alone makes the linker take every archive. The C library's
# warnings about getaddrinfo() and friends in static programs are kept in
# a log shown on failure.
link_fully_static() {
    local exe=$1 src=$2 module=$3
    shift 3
    # shellcheck disable=SC2046
    "$CC" "${CFLAGS_CHECK[@]}" "$@" -static -o "$exe" "$src" \
        $(pkg-config --cflags "$module") $(pkg-config --static --libs "$module") \
        >"$exe.log" 2>&1 || { cat "$exe.log"; fail "cc -static with pkg-config --static --libs $module"; }
}

step "pkg-config --static, fully static (cc -static)"
echo 'int main(void) { return 0; }' >"$PC_DIR/probe.c"
if "$CC" -static -o "$PC_DIR/probe" "$PC_DIR/probe.c" >/dev/null 2>&1; then
    echo "pkg-config --static --libs futoin_asyncsteps: $(pkg-config --static --libs futoin_asyncsteps)"
    link_fully_static "$PC_DIR/core_app_full_static" "$CONSUMER_DIR/core_app.c" futoin_asyncsteps
    run "$PC_DIR/core_app_full_static"
    check_fully_static "$PC_DIR/core_app_full_static"
    if [ $HAVE_UV = 1 ]; then
        echo "pkg-config --static --libs futoin_asyncsteps_uv: $(pkg-config --static --libs futoin_asyncsteps_uv)"
        link_fully_static "$PC_DIR/uv_app_full_static" "$CONSUMER_DIR/uv_app.c" \
            futoin_asyncsteps_uv -pthread
        run "$PC_DIR/uv_app_full_static"
        check_fully_static "$PC_DIR/uv_app_full_static"
    fi
else
    echo "skipped: $CC cannot link a static program here (no static C library)"
fi

# ---- 3. find_package -------------------------------------------------------

# cmake_consumer DIR KINDS ARGS...: configure and build tests/consumer in
# DIR, run its programs and check them. KINDS: the variants it must have
# built, "shared static", "shared" or "static"; the others must be absent.
cmake_consumer() {
    local dir=$1 kinds=$2
    shift 2
    cmake -S "$CONSUMER_DIR" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.log" 2>&1 \
        || { cat "$dir.log"; fail "configuring tests/consumer $*"; }
    grep -E 'futoin_asyncsteps .* found' "$dir.log" || true
    cmake --build "$dir" -j"${JOBS:-2}" >>"$dir.log" 2>&1 \
        || { cat "$dir.log"; fail "building tests/consumer $*"; }
    local apps=(core_app)
    [ $HAVE_UV = 1 ] && apps+=(uv_app)
    # cxx_app (futoin::asyncsteps_cxx) is built when a C++ compiler is found.
    [ ! -e "$dir/cxx_app" ] || run "$dir/cxx_app"
    local app
    for app in "${apps[@]}"; do
        if [[ " $kinds " == *" shared "* ]]; then
            run "$dir/$app"
            check_shared "$dir/$app" "${app%_app}"
        else
            [ ! -e "$dir/$app" ] || fail "$dir/$app was built: its shared library should not exist"
        fi
        if [[ " $kinds " == *" static "* ]]; then
            run "$dir/${app}_static"
            check_static "$dir/${app}_static"
        else
            [ ! -e "$dir/${app}_static" ] || fail "$dir/${app}_static was built: its static library should not exist"
        fi
    done
}

step "CMake find_package(futoin_asyncsteps)"
RUN_LIBPATH=""
cmake_consumer "$CHECK_DIR/find-package" "shared static" -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DFUTOIN_CONSUMER_REQUIRE_UV=$([ $HAVE_UV = 1 ] && echo ON || echo OFF)
# SameMajorVersion: a request for the next major version is refused.
if cmake -S "$CONSUMER_DIR" -B "$CHECK_DIR/find-next-major" -DCMAKE_PREFIX_PATH="$PREFIX" \
        -DFUTOIN_CONSUMER_VERSION=$((MAJOR + 1)).0 >"$CHECK_DIR/find-next-major.log" 2>&1; then
    fail "find_package(futoin_asyncsteps $((MAJOR + 1)).0) accepted version $VERSION"
fi
echo "find_package(futoin_asyncsteps $((MAJOR + 1)).0): refused, as it should be"

# ---- 4. add_subdirectory ---------------------------------------------------

# subproject_variant DIR KIND ARGS...: tests/consumer on the source tree;
# only the KIND libraries of futoin_asyncsteps are built, and its install
# rules are off.
subproject_variant() {
    local dir=$1 kind=$2 other
    shift 2
    cmake_consumer "$dir" "$kind" -DFUTOIN_SOURCE_DIR="$SRC_DIR" \
        -DFUTOIN_CONSUMER_REQUIRE_UV=$([ $HAVE_UV = 1 ] && echo ON || echo OFF) "$@"
    if [ "$kind" = static ]; then other='*.so*'; else other='*.a'; fi
    local built
    built=$(find "$dir/futoin_asyncsteps" -name "libfutoin_asyncsteps$other" -print)
    [ -z "$built" ] || fail "the subproject built the other variant too: $built"
    cmake --install "$dir" --prefix "$dir-prefix" >>"$dir.log" 2>&1 \
        || { cat "$dir.log"; fail "cmake --install of the subproject build"; }
    if [ -d "$dir-prefix" ] && [ -n "$(find "$dir-prefix" -type f -print -quit)" ]; then
        fail "the subproject installed files: $(find "$dir-prefix" -type f | head -n3 | tr '\n' ' ')"
    fi
    echo "add_subdirectory: $kind libraries only, nothing installed"
}

step "CMake add_subdirectory(source tree)"
subproject_variant "$CHECK_DIR/add-subdirectory" static
step "CMake add_subdirectory(source tree), BUILD_SHARED_LIBS=ON"
subproject_variant "$CHECK_DIR/add-subdirectory-shared" shared -DBUILD_SHARED_LIBS=ON

echo
echo "check-consumer: all checks passed"
