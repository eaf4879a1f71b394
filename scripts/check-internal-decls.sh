#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every library-internal function (futoin__*) declared in a header under
# src/ must be defined and used: a declaration nobody defines is a link
# error waiting for its first caller, and one nobody calls is dead code.
#
#   bash scripts/check-internal-decls.sh [SOURCE_DIR]   (CTest: internal_decls)
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

# Names declared in headers: "futoin__name(" on a line that ends a
# prototype (a ";" at the end of the line or of a following one).
mapfile -t names < <(grep -rhoE '\bfutoin__[A-Za-z0-9_]+\(' --include='*.h' src |
    tr -d '(' | sort -u)
bad=0
for n in "${names[@]}"; do
    # Definitions: the name at the start of a line's function head (return
    # type before it) followed by a body, in a .c file or a static inline.
    defs=$( { grep -rEc "^[A-Za-z_].*\b$n\([^;]*\)?[^;]*$" --include='*.c' --include='*.h' src ||
        true; } | awk -F: '{s += $2} END {print s + 0}')
    # Uses in the library or its tests (a test hook counts as used).
    uses=$( { grep -rwo "$n" --include='*.c' --include='*.h' src tests || true; } | wc -l)
    # A declaration, a definition and a use; a static inline function of a
    # header is its own declaration.
    need=3
    if grep -rqE "static inline.*\b$n\(" --include='*.h' src; then
        need=2
    fi
    if [ "$defs" -eq 0 ]; then
        echo "check-internal-decls: $n is declared but never defined" >&2
        bad=1
    elif [ "$uses" -lt "$need" ]; then
        echo "check-internal-decls: $n is declared and defined but never used" >&2
        bad=1
    fi
done
echo "check-internal-decls: ${#names[@]} internal functions declared in src/ headers"
exit $bad
