# SPDX-License-Identifier: MIT
# How the tests run: each test program through futoin_wrap_command()'s
# prefix, which is valgrind memcheck when FUTOIN_VALGRIND is on. Included
# by tests/, tests/uv/ and examples/, which register their tests with
# add_test() themselves; this file defines only the two functions below.
# (The top-level CMakeLists.txt has checked that valgrind is there.)
find_program(VALGRIND_EXE valgrind)

# futoin_test_environment(OUT): the environment of the tests of this build.
# FUTOIN_TEST_VALGRIND=1 in a valgrind build: the tests multiply their
# real-time limits by valgrind's slowdown (tests/time_scale.h, .sh).
function(futoin_test_environment out)
    if(FUTOIN_VALGRIND)
        set(${out} FUTOIN_TEST_VALGRIND=1 PARENT_SCOPE)
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
        set(${out} "" PARENT_SCOPE)
    endif()
endfunction()
