# SPDX-License-Identifier: MIT
# Helpers of the top-level CMakeLists.txt for its options: features that
# are built when what they need is there, or that the user asked for, and
# the summary printed at the end of configure.

# futoin_feature(NAME DOC): an option with three values, for a feature that
# needs something the machine may lack:
#   AUTO (the default)  built when what it needs is found, else skipped
#                       with a note in the summary;
#   ON                  asked for: configure stops when it cannot be built;
#   OFF                 not built.
# A value the parent project sets before add_subdirectory() (a normal or a
# cache variable) counts like one given on the command line. Sets
# NAME_MODE to AUTO, ON or OFF in the caller's scope.
function(futoin_feature name doc)
    if(NOT DEFINED ${name})
        set(${name} AUTO CACHE STRING "${doc}")
    endif()
    if(DEFINED CACHE{${name}})
        set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
        set_property(CACHE ${name} PROPERTY HELPSTRING "${doc}")
    endif()
    string(TOUPPER "${${name}}" value)
    if(value STREQUAL "" OR value STREQUAL "AUTO")
        set(mode AUTO)
    elseif(value MATCHES "^(ON|YES|TRUE|Y|1)$")
        set(mode ON)
    elseif(value MATCHES "^(OFF|NO|FALSE|N|0)$")
        set(mode OFF)
    else()
        message(FATAL_ERROR "${name}=${${name}}: the value must be AUTO, ON or OFF")
    endif()
    set(${name}_MODE ${mode} PARENT_SCOPE)
endfunction()

# futoin_cannot_build(OPTION WHAT HOW): stops configure because OPTION was
# asked for and cannot be built: WHAT is missing, HOW gets it.
function(futoin_cannot_build option what how)
    message(FATAL_ERROR
        "${option} is ON, but ${what}.\n"
        "${how}\n"
        "Or configure without it: -D${option}=OFF")
endfunction()

# futoin_summary_line(LABEL TEXT): one line of the summary.
function(futoin_summary_line label text)
    string(LENGTH "${label}" len)
    math(EXPR pad "16 - ${len}")
    if(pad LESS 1)
        set(pad 1)
    endif()
    string(REPEAT " " ${pad} spaces)
    message(STATUS "  ${label}${spaces}${text}")
endfunction()

# futoin_on_off(OUT VAR): "on" or "off" as VAR is true or not.
function(futoin_on_off out var)
    if(${var})
        set(${out} on PARENT_SCOPE)
    else()
        set(${out} off PARENT_SCOPE)
    endif()
endfunction()
