# SPDX-License-Identifier: MIT
# 64-bit Windows with Debian's mingw-w64 cross compiler, the programs run
# under wine64: bash scripts/cross-test.sh mingw64, or
#   cmake -S . -B /tmp/win -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-mingw64.cmake
# What it needs (Debian 12; scripts/cross-test.sh installs it):
#   apt-get install gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix wine64
# The "posix" flavour of the compilers: their C++ library has std::thread
# (over winpthreads, which the C library uses for pthreads too).
# Programs are linked statically (-static): no DLL of the compiler's
# runtime (libwinpthread-1.dll, libgcc_s, libstdc++) needs to be found at
# run time. Wine wants a prefix of its own: WINEPREFIX, which
# scripts/cross-test.sh points to a temporary directory; WINEDEBUG=-all
# keeps wine's messages out of the programs' stderr.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(FUTOIN_CROSS_TRIPLET x86_64-w64-mingw32)

set(CMAKE_C_COMPILER ${FUTOIN_CROSS_TRIPLET}-gcc-posix)
find_program(FUTOIN_CROSS_CXX ${FUTOIN_CROSS_TRIPLET}-g++-posix)
if(FUTOIN_CROSS_CXX)
    set(CMAKE_CXX_COMPILER ${FUTOIN_CROSS_CXX})
else()
    set(FUTOIN_BUILD_CXX_TEST OFF CACHE STRING "no ${FUTOIN_CROSS_TRIPLET}-g++-posix")
endif()
set(CMAKE_RC_COMPILER ${FUTOIN_CROSS_TRIPLET}-windres)

# Headers and libraries of the mingw tree, and those that pkg-config names
# (BOTH: a cmocka built for mingw elsewhere, whose cmocka.pc
# PKG_CONFIG_PATH points to; scripts/cross-test.sh builds one); programs
# of this machine.
set(CMAKE_FIND_ROOT_PATH /usr/${FUTOIN_CROSS_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config reads the .pc files of the mingw tree and of PKG_CONFIG_PATH,
# never those of this machine (libuv1-dev's would be found otherwise).
set(ENV{PKG_CONFIG_LIBDIR} /usr/${FUTOIN_CROSS_TRIPLET}/lib/pkgconfig)

set(CMAKE_EXE_LINKER_FLAGS_INIT -static)

find_program(FUTOIN_CROSS_WINE_EXE wine64 PATHS /usr/lib/wine)
if(FUTOIN_CROSS_WINE_EXE)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${FUTOIN_CROSS_WINE_EXE})
endif()
