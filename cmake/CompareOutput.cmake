# SPDX-License-Identifier: MIT
# Runs PROGRAM (optionally under WRAPPER) and fails unless its stdout equals
# the file EXPECTED byte for byte, and, when EXPECTED_STDERR names a file,
# its stderr equals that one too. execute_process() turns the CRLF line
# ends of a Windows program's text-mode stdio into LF (it normalises
# newlines on every platform), so the expected files, with LF, serve for
# Windows too: every other byte is compared.
execute_process(COMMAND ${WRAPPER} ${PROGRAM}
    OUTPUT_VARIABLE actual
    ERROR_VARIABLE actual_err
    RESULT_VARIABLE rc)
file(READ ${EXPECTED} expected)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} exited with ${rc}\n--- output ---\n${actual}--- stderr ---\n${actual_err}")
endif()
if(NOT actual STREQUAL expected)
    message(FATAL_ERROR "output differs\n--- expected ---\n${expected}--- actual ---\n${actual}")
endif()
if(EXPECTED_STDERR)
    file(READ ${EXPECTED_STDERR} expected_err)
    if(NOT actual_err STREQUAL expected_err)
        message(FATAL_ERROR "stderr differs\n--- expected ---\n${expected_err}--- actual ---\n${actual_err}")
    endif()
elseif(NOT actual_err STREQUAL "")
    # Not compared: shown, as it was before ERROR_VARIABLE captured it.
    message("${actual_err}")
endif()
message(STATUS "output matches ${EXPECTED}")
