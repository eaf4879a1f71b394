# SPDX-License-Identifier: MIT
# IBM Z (Debian s390x), 64-bit big-endian, LP64: a cross build run under
# qemu-s390x. bash scripts/cross-test.sh s390x, or
#   cmake -S . -B /tmp/cross-s390x -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-s390x.cmake
set(CMAKE_SYSTEM_PROCESSOR s390x)
set(FUTOIN_CROSS_TRIPLET s390x-linux-gnu)
set(FUTOIN_CROSS_QEMU qemu-s390x)
include(${CMAKE_CURRENT_LIST_DIR}/CrossDebian.cmake)
