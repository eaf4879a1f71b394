# SPDX-License-Identifier: MIT
# 64-bit ARM (Debian arm64), little-endian, LP64: a cross build run under
# qemu-aarch64. bash scripts/cross-test.sh aarch64, or
#   cmake -S . -B /tmp/cross-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(FUTOIN_CROSS_TRIPLET aarch64-linux-gnu)
set(FUTOIN_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/CrossDebian.cmake)
