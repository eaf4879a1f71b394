#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every C/C++ source and header of src/, include/, tests/, bench/ and
# examples/ is formatted as .clang-format says (clang-format 14; other
# versions may format some constructs differently).
#
#   bash scripts/check-format.sh         exit 1 and the list of files that
#                                        are not formatted
#   bash scripts/check-format.sh --fix   reformat them in place
#
# Environment:
#   CLANG_FORMAT=path           the clang-format to use (default: clang-format)
#   FUTOIN_FORMAT_OPTIONAL=1    skip the check, with a note, when clang-format
#                               is not installed (otherwise that is an error)
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
case "${1:-}" in
    "") ;;
    --fix) fix=1 ;;
    -h|--help)
        sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "check-format: unknown argument: $1 (--fix or nothing)" >&2
        exit 2
        ;;
esac

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null; then
    if [ "${FUTOIN_FORMAT_OPTIONAL:-0}" = 1 ]; then
        echo "check-format: $CLANG_FORMAT not found: skipped (FUTOIN_FORMAT_OPTIONAL=1)"
        exit 0
    fi
    echo "check-format: $CLANG_FORMAT not found: install clang-format (Debian: apt-get" \
        "install clang-format; scripts/test.sh does), or set FUTOIN_FORMAT_OPTIONAL=1" \
        "to skip the check" >&2
    exit 1
fi
version=$("$CLANG_FORMAT" --version | sed -n 's/.*clang-format version \([0-9]*\).*/\1/p')
if [ "$version" != 14 ]; then
    echo "check-format: note: $CLANG_FORMAT is version ${version:-unknown}; the tree is" \
        "formatted with version 14, so some lines may differ" >&2
fi

# The tracked files (a git checkout), else the files on disk; third-party
# code and generated files live elsewhere (the build directories).
dirs=(src include tests bench examples)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files -- "${dirs[@]}" | grep -E '\.(c|h|cc|cpp|hpp)$' |
        while read -r f; do [ -f "$f" ] && echo "$f"; done)
else
    mapfile -t files < <(find "${dirs[@]}" -type f \
        \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' -o -name '*.hpp' \) |
        LC_ALL=C sort)
fi
if [ ${#files[@]} -eq 0 ]; then
    echo "check-format: no source files found" >&2
    exit 1
fi

if [ "$fix" = 1 ]; then
    printf '%s\0' "${files[@]}" | xargs -0 "$CLANG_FORMAT" -i --style=file
    echo "check-format: ${#files[@]} files formatted in place"
    exit 0
fi

bad=()
for f in "${files[@]}"; do
    if ! "$CLANG_FORMAT" --dry-run --Werror --style=file "$f" >/dev/null 2>&1; then
        bad+=("$f")
    fi
done
if [ ${#bad[@]} -gt 0 ]; then
    echo "check-format: ${#bad[@]} of ${#files[@]} files are not formatted:" >&2
    printf '  %s\n' "${bad[@]}" >&2
    echo "check-format: see what would change with: clang-format FILE | diff FILE -" >&2
    echo "check-format: reformat one with: clang-format -i FILE" \
        "(all of them: bash scripts/check-format.sh --fix)" >&2
    exit 1
fi
echo "check-format: ${#files[@]} files formatted"
