#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The build lists its sources instead of globbing them (CONTRIBUTING.md), so
# a file added to the tree but not to a list would silently not be built or
# run. Every library source, test and example must be named in the
# CMakeLists.txt of its folder (or, for the core, the top-level one).
#
#   bash scripts/check-source-lists.sh [SOURCE_DIR]   (CTest: source_lists)
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

bad=0
# listed FILE CMAKELISTS NAME: NAME (a path or a stem) appears in CMAKELISTS
# as a word of its own.
listed() {
    grep -qE "(^|[[:space:]/(])$2([[:space:])]|$)" "$1"
}
check() {
    local cml=$1 name=$2 file=$3
    if ! listed "$cml" "$name"; then
        echo "check-source-lists: $file is not listed in $cml" >&2
        bad=1
    fi
}

for f in src/*/*.c; do
    case "$f" in
    src/uv/*) check src/uv/CMakeLists.txt "$(basename "$f")" "$f" ;;
    *) check CMakeLists.txt "${f#src/}" "$f" ;;
    esac
done
for f in tests/test_*.c; do
    check tests/CMakeLists.txt "$(basename "$f" .c)" "$f"
done
for f in tests/uv/test_*.c; do
    check tests/uv/CMakeLists.txt "$(basename "$f" .c)" "$f"
done
for f in examples/*.c; do
    check examples/CMakeLists.txt "$(basename "$f" .c)" "$f"
done
for f in examples/uv/*.c bench/*.c; do
    check "$(dirname "$f")/CMakeLists.txt" "$(basename "$f")" "$f"
done
for f in tests/uv/test_*.cpp; do
    check tests/uv/CMakeLists.txt "$(basename "$f")" "$f"
done
for f in examples/uv/cxx/*.cpp; do
    check examples/uv/CMakeLists.txt "cxx/$(basename "$f")" "$f"
done
for f in include/futoin/*.h; do
    check CMakeLists.txt "$(basename "$f")" "$f"
done

if [ $bad -eq 0 ]; then
    echo "check-source-lists: every source, test and example is in a CMake list"
fi
exit $bad
