#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole CTest suite of another architecture, on this machine: built
# with Debian's cross compiler and run under qemu-user, through the
# toolchain file cmake/toolchain-ARCH.cmake (CMAKE_CROSSCOMPILING_EMULATOR).
# The core, sync, threads, the libuv backend, the examples and their tests;
# the benchmarks are not built.
#
#   bash scripts/cross-test.sh aarch64   64-bit ARM, little-endian
#   bash scripts/cross-test.sh s390x     IBM Z, 64-bit big-endian
#   bash scripts/cross-test.sh mingw64   64-bit Windows, under wine64
#
# mingw64: Debian's mingw-w64 compilers (the "posix" flavour, over
# winpthreads), programs linked statically and run by wine64 in a
# temporary wine prefix. Debian has no cmocka for mingw: it is built here
# from the upstream tarball of Debian's cmocka source package, which
# apt-get source fetches with a private copy of apt's state (deb-src
# entries made from the system's deb entries; the system's configuration
# is not changed), into cmocka-mingw64/ beside the build directory (kept
# for the next run). No libuv backend (Debian has no libuv for mingw either), and the
# tests that need POSIX (fork, an allocator interposer, poll on the
# wake-up fd, dladdr names) are not built there: docs/PORTING.md.
#
# What it catches: byte order (s390x), the signedness of char (plain char
# is unsigned on both), the atomic instructions and their alignment, the
# libc and the dynamic loader of another target. What it cannot: weak
# memory ordering (qemu-user runs the guest's threads with this machine's
# ordering), timing, and misaligned plain accesses, which both targets
# allow (UBSan's alignment check finds those on x86-64).
#
# Left out of every target's run: the checks of the source tree
# (internal_decls, layers, source_lists), which read the sources and give
# the same answer as natively (scripts/test.sh runs them in its stage 1).
# Left out under qemu: the out-of-memory sweeps test_oom and test_uv_oom
# (a forked run for each allocation of the suites: a third of the test
# time there), whose failure paths are the same C code on every target;
# they run natively and under ASan+UBSan.
#
# On Debian it adds the architecture (dpkg --add-architecture) and
# installs what it needs (scripts/deps.sh): the cross gcc and g++, the
# multiarch cmocka, libuv and libstdc++, qemu-user.
#
# Environment:
#   CROSS_BUILD_DIR=dir  build directory (default: build-cross/ARCH)
#   JOBS=n               parallel build jobs (default: 2)
#   CTEST_JOBS=n         tests run at once (default: JOBS)
#   FUTOIN_SKIP_DEPS=1   do not install missing packages
set -euo pipefail

USAGE="usage: $0 aarch64|s390x|mingw64"
# The checks of the source tree, left out (above).
TREE_CHECKS='^(internal_decls|layers|source_lists)$'

case "${1:-}" in
    aarch64)
        DEB_ARCH=arm64
        TRIPLET=aarch64-linux-gnu
        ;;
    s390x)
        DEB_ARCH=s390x
        TRIPLET=s390x-linux-gnu
        ;;
    mingw64)
        DEB_ARCH=""
        TRIPLET=x86_64-w64-mingw32
        ;;
    -h | --help)
        sed -n '3,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "$USAGE" >&2
        exit 2
        ;;
esac
ARCH=$1

cd "$(dirname "$0")/.."
BUILD=${CROSS_BUILD_DIR:-build-cross/$ARCH}
JOBS=${JOBS:-2}

. scripts/deps.sh

if [ "$ARCH" = mingw64 ]; then
    futoin_need cmake make pkg-config xz-utils \
        gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix wine64
    start=$SECONDS
    # cmocka for mingw, once: a static libcmocka.a and a cmocka.pc.
    mkdir -p "$(dirname "$BUILD")"
    CMOCKA=$(cd "$(dirname "$BUILD")" && pwd)/cmocka-mingw64
    if [ ! -f "$CMOCKA/lib/pkgconfig/cmocka.pc" ]; then
        apt_tmp=$(mktemp -d)
        trap 'rm -rf "$apt_tmp"' EXIT
        mkdir -p "$apt_tmp/parts" "$apt_tmp/lists/partial" "$apt_tmp/cache/archives/partial" \
            "$apt_tmp/src"
        # The system's deb entries as deb-src ones (deb822 .sources files
        # and one-line .list files).
        for f in /etc/apt/sources.list.d/*.sources; do
            if [ -e "$f" ]; then
                sed 's/^Types:.*/Types: deb-src/' "$f" >"$apt_tmp/parts/$(basename "$f")"
            fi
        done
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
            if [ -e "$f" ]; then
                sed -n 's/^deb \(.*\)/deb-src \1/p' "$f" >"$apt_tmp/parts/$(basename "$f").list"
            fi
        done
        apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt_tmp/parts"
            -o "Dir::State::Lists=$apt_tmp/lists" -o "Dir::Cache=$apt_tmp/cache"
            -o Debug::NoLocking=1 -q)
        apt-get "${apt_opts[@]}" update >/dev/null
        (cd "$apt_tmp/src" && apt-get "${apt_opts[@]}" source --download-only cmocka)
        for f in "$apt_tmp"/src/cmocka_*.orig.tar.*; do
            case "$f" in
            *.asc) ;;
            *) tar -xf "$f" -C "$apt_tmp/src" ;;
            esac
        done
        src=$(echo "$apt_tmp"/src/cmocka-*/)
        version=$(basename "$src")
        version=${version#cmocka-}
        rm -rf "$CMOCKA"
        mkdir -p "$CMOCKA/lib/pkgconfig" "$CMOCKA/include"
        # cmocka's CMake checks, answered for mingw-w64.
        "$TRIPLET-gcc-posix" -std=gnu99 -O2 -D__USE_MINGW_ANSI_STDIO=1 \
            -DHAVE_MALLOC_H -DHAVE_INTTYPES_H -DHAVE_SIGNAL_H -DHAVE_STRINGS_H \
            -DHAVE_GCC_THREAD_LOCAL_STORAGE -DHAVE_STRUCT_TIMESPEC -DHAVE_CLOCK_GETTIME \
            -DHAVE_CLOCK_REALTIME -DHAVE_SNPRINTF -DHAVE_VSNPRINTF \
            -I"$src/include" -c "$src/src/cmocka.c" -o "$CMOCKA/cmocka.o"
        "$TRIPLET-ar" rcs "$CMOCKA/lib/libcmocka.a" "$CMOCKA/cmocka.o"
        cp "$src/include/cmocka.h" "$CMOCKA/include/"
        printf '%s\n' "prefix=$CMOCKA" "Name: cmocka" "Description: cmocka for mingw-w64" \
            "Version: $version" 'Libs: -L${prefix}/lib -lcmocka' 'Cflags: -I${prefix}/include' \
            >"$CMOCKA/lib/pkgconfig/cmocka.pc"
        rm -rf "$apt_tmp"
        trap - EXIT
    fi
    cmocka_built=$SECONDS

    rm -rf "$BUILD"
    PKG_CONFIG_PATH=$CMOCKA/lib/pkgconfig cmake -S . -B "$BUILD" \
        -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-mingw64.cmake" \
        -DCMAKE_BUILD_TYPE=Release -DFUTOIN_WERROR=ON -DFUTOIN_WITH_UV=OFF \
        -DFUTOIN_BUILD_BENCH=OFF -DFUTOIN_BUILD_SHARED=OFF -DFUTOIN_BUILD_TESTS=ON \
        -DFUTOIN_CXX_TEST_CXX20=OFF
    cmake --build "$BUILD" -j"$JOBS"
    built=$SECONDS

    # A wine prefix of our own, made before the tests run in parallel;
    # its wineserver is stopped at the end.
    WINEPREFIX=$(mktemp -d)
    export WINEPREFIX WINEDEBUG=-all
    trap 'WINEPREFIX=$WINEPREFIX /usr/lib/wine/wineserver -k 2>/dev/null || true; rm -rf "$WINEPREFIX"' EXIT
    /usr/lib/wine/wine64 wineboot --init >/dev/null 2>&1
    prefixed=$SECONDS
    (cd "$BUILD" && ctest --output-on-failure -j"${CTEST_JOBS:-$JOBS}" -E "$TREE_CHECKS")
    echo "cross-test mingw64: cmocka in $((cmocka_built - start)) s, built in" \
        "$((built - cmocka_built)) s, wine prefix in $((prefixed - built)) s," \
        "tests ran in $((SECONDS - prefixed)) s"
    exit 0
fi

futoin_need_arch "$DEB_ARCH"
# curl and wrk: the HTTP server's tests (this machine's programs).
futoin_need cmake make pkg-config qemu-user curl wrk \
    "gcc-$TRIPLET" "g++-$TRIPLET" "libc6-dev-$DEB_ARCH-cross" \
    "libcmocka-dev:$DEB_ARCH" "libuv1-dev:$DEB_ARCH" "libstdc++6:$DEB_ARCH"

start=$SECONDS
rm -rf "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-$ARCH.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DFUTOIN_WERROR=ON -DFUTOIN_WITH_UV=ON \
    -DFUTOIN_BUILD_BENCH=OFF -DFUTOIN_CXX_TEST_CXX20=OFF
cmake --build "$BUILD" -j"$JOBS"
built=$SECONDS
(cd "$BUILD" && ctest --output-on-failure -j"${CTEST_JOBS:-$JOBS}" \
    -E "$TREE_CHECKS|^(test_oom|test_uv_oom)\$")
echo "cross-test $ARCH: built in $((built - start)) s, tests ran in $((SECONDS - built)) s"
