# SPDX-License-Identifier: MIT
# How the tests run: each test program through futoin_wrap_command()'s
# prefix, which is valgrind memcheck when FUTOIN_VALGRIND is on, and the
# emulator of a cross build (CMAKE_CROSSCOMPILING_EMULATOR, e.g. qemu-user:
# cmake/toolchain-*.cmake, scripts/cross-test.sh). Included by tests/,
# tests/uv/ and examples/, which register their tests with add_test()
# themselves; this file defines only the functions below. (The top-level
# CMakeLists.txt has checked that valgrind is there, and that it is not
# asked for in a cross build.)
find_program(VALGRIND_EXE valgrind)

# futoin_test_environment(OUT): the environment of the tests of this build.
# FUTOIN_TEST_VALGRIND=1 in a valgrind build: the tests multiply their
# real-time limits by valgrind's slowdown (tests/time_scale.h, .sh).
# FUTOIN_TEST_EMULATOR in a cross build: the emulator and its options,
# separated by blanks, for a script that starts a helper program of the
# build (a test server) itself.
function(futoin_test_environment out)
    set(env "")
    if(FUTOIN_VALGRIND)
        list(APPEND env FUTOIN_TEST_VALGRIND=1)
    endif()
    futoin_emulator_command(emulator)
    if(emulator)
        list(JOIN emulator " " emulator)
        list(APPEND env "FUTOIN_TEST_EMULATOR=${emulator}")
    endif()
    set(${out} ${env} PARENT_SCOPE)
endfunction()

# futoin_emulator_command(OUT): what runs a program of this build on this
# machine: CMAKE_CROSSCOMPILING_EMULATOR in a cross build, else nothing.
# CMake adds the emulator itself only to an add_test() COMMAND that names
# a target; ours name $<TARGET_FILE:...> or a script, so the prefix is
# ours to add. The shell tests that run a program without the valgrind
# wrapper take this prefix instead.
function(futoin_emulator_command out)
    if(CMAKE_CROSSCOMPILING AND CMAKE_CROSSCOMPILING_EMULATOR)
        set(${out} ${CMAKE_CROSSCOMPILING_EMULATOR} PARENT_SCOPE)
    else()
        set(${out} "" PARENT_SCOPE)
    endif()
endfunction()

# futoin_wrap_command(OUT): the command prefix of a test program. Under
# valgrind it sets the environment above itself, so that every program run
# through it knows, also one that a test script starts. env(1), not
# "cmake -E env": env execs the program, so a signal that a script sends
# to the process it started (SIGINT to stop a server) reaches valgrind.
find_program(ENV_EXE env)
function(futoin_wrap_command out)
    if(FUTOIN_VALGRIND)
        futoin_test_environment(env)
        set(${out} ${ENV_EXE} ${env}
            ${VALGRIND_EXE} --error-exitcode=99 --leak-check=full
            --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible
            --track-origins=yes --quiet PARENT_SCOPE)
    else()
        futoin_emulator_command(emulator)
        set(${out} ${emulator} PARENT_SCOPE)
    endif()
endfunction()
