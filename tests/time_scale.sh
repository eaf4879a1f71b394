# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by the shell tests: real-time limits scaled for slow machines, as
# tests/time_scale.h does for the C tests (see there for what is scaled).
#
#   FUTOIN_TEST_TIME_SCALE   a positive number (default 1)
#   FUTOIN_TEST_VALGRIND=1   set by CMake for the tests of a valgrind build:
#                            a further factor of 10
#
#   . "$(dirname "$0")/../time_scale.sh"
#   client -t "$(futoin_scale_ms 300)" ...     # 300 ms, scaled (an integer)
#   sleep "$(futoin_scale_s 0.5)"               # 0.5 s, scaled
#   FUTOIN_TEST_VALGRIND=1 futoin_scale_s 20    # for a program this script
#                                               # itself runs under valgrind

FUTOIN_TEST_VALGRIND_FACTOR=10

# Prints the factor; exits 2 on a FUTOIN_TEST_TIME_SCALE that is not a
# positive number (a silently ignored setting would keep the short limits).
futoin_time_scale() {
    local s=${FUTOIN_TEST_TIME_SCALE:-1}
    if ! [[ $s =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]] \
            || ! awk -v s="$s" 'BEGIN { exit !(s + 0 > 0) }'; then
        echo "FUTOIN_TEST_TIME_SCALE=$s: not a positive number" >&2
        exit 2
    fi
    local vg=1
    [ "${FUTOIN_TEST_VALGRIND:-}" = 1 ] && vg=$FUTOIN_TEST_VALGRIND_FACTOR
    awk -v s="$s" -v v="$vg" 'BEGIN { printf "%.6g\n", s * v }'
}

# futoin_scale_ms MS: MS times the factor, rounded up to an integer.
futoin_scale_ms() {
    local f
    f=$(futoin_time_scale) || exit 2
    awk -v ms="$1" -v f="$f" 'BEGIN { v = ms * f; r = int(v); if (r < v) r++; printf "%d\n", r }'
}

# futoin_scale_s SECONDS: for sleep and timeout(1), to the millisecond.
futoin_scale_s() {
    local f
    f=$(futoin_time_scale) || exit 2
    awk -v s="$1" -v f="$f" 'BEGIN { printf "%.3f\n", s * f }'
}

# A bad setting stops the sourcing script here, not in a $(...) subshell.
futoin_time_scale >/dev/null
