# SPDX-License-Identifier: MIT
# futoin_add_test(NAME SOURCES...): a cmocka test executable registered with
# CTest; wrapped in valgrind memcheck when FUTOIN_VALGRIND is on.
find_program(VALGRIND_EXE valgrind)
function(futoin_wrap_command out)
    if(FUTOIN_VALGRIND)
        set(${out} ${VALGRIND_EXE} --error-exitcode=99 --leak-check=full
            --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible
            --track-origins=yes --quiet PARENT_SCOPE)
    else()
        set(${out} "" PARENT_SCOPE)
    endif()
endfunction()
