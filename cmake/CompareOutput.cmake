# SPDX-License-Identifier: MIT
# Runs PROGRAM (optionally under WRAPPER) and fails unless its stdout equals
# the file EXPECTED byte for byte.
execute_process(COMMAND ${WRAPPER} ${PROGRAM}
    OUTPUT_VARIABLE actual
    RESULT_VARIABLE rc)
file(READ ${EXPECTED} expected)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} exited with ${rc}\n--- output ---\n${actual}")
endif()
if(NOT actual STREQUAL expected)
    message(FATAL_ERROR "output differs\n--- expected ---\n${expected}--- actual ---\n${actual}")
endif()
message(STATUS "output matches ${EXPECTED}")
