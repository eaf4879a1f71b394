# SPDX-License-Identifier: MIT
# A cross build with Debian's cross compilers and multiarch libraries,
# included by cmake/toolchain-*.cmake after they set FUTOIN_CROSS_TRIPLET
# (the GNU triplet: aarch64-linux-gnu) and FUTOIN_CROSS_QEMU (the
# qemu-user program that runs its binaries: qemu-aarch64). What it needs
# (Debian 12; scripts/cross-test.sh installs it):
#   dpkg --add-architecture ARCH && apt-get update
#   apt-get install gcc-TRIPLET g++-TRIPLET libc6-dev-ARCH-cross \
#       libcmocka-dev:ARCH libuv1-dev:ARCH qemu-user
# The tests then run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR, which
# cmake/FutoinTest.cmake puts before every test program).
set(CMAKE_SYSTEM_NAME Linux)

set(CMAKE_C_COMPILER ${FUTOIN_CROSS_TRIPLET}-gcc)
# C++ only for the tests that compile the public headers as C++ and throw
# through C frames; without the cross g++ they are not built.
find_program(FUTOIN_CROSS_CXX ${FUTOIN_CROSS_TRIPLET}-g++)
if(FUTOIN_CROSS_CXX)
    set(CMAKE_CXX_COMPILER ${FUTOIN_CROSS_CXX})
else()
    set(FUTOIN_BUILD_CXX_TEST OFF CACHE STRING "no ${FUTOIN_CROSS_TRIPLET}-g++")
endif()

# Headers and libraries of the target only: the cross toolchain's own tree
# and the multiarch directories; programs (pkg-config, bash) of this machine.
set(CMAKE_FIND_ROOT_PATH /usr/${FUTOIN_CROSS_TRIPLET})
set(CMAKE_LIBRARY_ARCHITECTURE ${FUTOIN_CROSS_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config (cmocka, libuv) reads the .pc files of the target's multiarch
# directory, never those of this machine.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${FUTOIN_CROSS_TRIPLET}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# qemu-user with the root as its prefix: the dynamic loader and the
# libraries of the multiarch packages (libc6:ARCH, libcmocka0:ARCH,
# libuv1:ARCH). Not -L /usr/TRIPLET: the cross toolchain's libc there may
# be of another version than the multiarch one, and qemu then hangs in
# pthread_create().
find_program(FUTOIN_CROSS_QEMU_EXE ${FUTOIN_CROSS_QEMU})
if(FUTOIN_CROSS_QEMU_EXE)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${FUTOIN_CROSS_QEMU_EXE} -L /)
endif()
