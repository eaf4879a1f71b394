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
#
# What it catches: byte order (s390x), the signedness of char (plain char
# is unsigned on both), the atomic instructions and their alignment, the
# libc and the dynamic loader of another target. What it cannot: weak
# memory ordering (qemu-user runs the guest's threads with this machine's
# ordering), timing, and misaligned plain accesses, which both targets
# allow (UBSan's alignment check finds those on x86-64).
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

USAGE="usage: $0 aarch64|s390x"
case "${1:-}" in
    aarch64)
        DEB_ARCH=arm64
        TRIPLET=aarch64-linux-gnu
        ;;
    s390x)
        DEB_ARCH=s390x
        TRIPLET=s390x-linux-gnu
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
futoin_need_arch "$DEB_ARCH"
# curl and wrk: the HTTP server's tests (this machine's programs).
futoin_need cmake make pkg-config qemu-user curl wrk \
    "gcc-$TRIPLET" "g++-$TRIPLET" "libc6-dev-$DEB_ARCH-cross" \
    "libcmocka-dev:$DEB_ARCH" "libuv1-dev:$DEB_ARCH" "libstdc++6:$DEB_ARCH"

start=$SECONDS
rm -rf "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-$ARCH.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DFUTOIN_WERROR=ON -DFUTOIN_WITH_UV=ON \
    -DFUTOIN_BUILD_BENCH=OFF
cmake --build "$BUILD" -j"$JOBS"
built=$SECONDS
(cd "$BUILD" && ctest --output-on-failure -j"${CTEST_JOBS:-$JOBS}")
echo "cross-test $ARCH: built in $((built - start)) s, tests ran in $((SECONDS - built)) s"
