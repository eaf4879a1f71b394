#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The exported symbols of the shared libraries against the committed lists
# (docs/ABI-POLICY.md):
#
#   bash scripts/check-abi.sh BUILD_DIR            check (CTest test abi_symbols)
#   bash scripts/check-abi.sh --update BUILD_DIR   rewrite the lists from the build
#
# For libfutoin_asyncsteps.so and, when it was built,
# libfutoin_asyncsteps_uv.so (found in BUILD_DIR, BUILD_DIR/src/uv or below),
# the sorted names of `nm -D --defined-only` must equal
# abi/futoin_asyncsteps.symbols and abi/futoin_asyncsteps_uv.symbols. On a
# difference it prints a diff ("+" exported but not listed, "-" listed but
# no longer exported) and fails. An exported futoin__* name (the prefix of
# internal functions) or a name outside the futoin_ prefix fails even with
# --update.
#
# The Debian symbols files are kept in step (see debian_sync below).
#
# Environment: NM=nm (CTest passes CMake's).
set -euo pipefail

UPDATE=0
if [ "${1:-}" = --update ]; then
    UPDATE=1
    shift
fi
if [ $# -ne 1 ]; then
    echo "usage: $0 [--update] BUILD_DIR" >&2
    exit 2
fi
BUILD=$1
ABI_DIR="$(cd "$(dirname "$0")/.." && pwd -P)/abi"
NM=${NM:-nm}
status=0

# find_lib NAME: the library file in the build tree, empty if not built.
find_lib() {
    local f
    for f in "$BUILD/lib$1.so" "$BUILD/src/uv/lib$1.so"; do
        if [ -e "$f" ]; then
            echo "$f"
            return
        fi
    done
    find "$BUILD" -maxdepth 4 -name "lib$1.so" -print -quit 2>/dev/null || true
}

check() {
    local name=$1 required=$2 lib list actual
    lib=$(find_lib "$name")
    list="$ABI_DIR/$name.symbols"
    if [ -z "$lib" ]; then
        if [ "$required" = 1 ]; then
            echo "check-abi: lib$name.so not found in $BUILD" >&2
            status=1
        else
            echo "check-abi: lib$name.so not built: skipped"
        fi
        return
    fi
    actual=$("$NM" -D --defined-only "$lib" | awk '{ print $NF }' | LC_ALL=C sort -u)
    local bad
    bad=$(grep -Ev '^futoin_[^_]' <<<"$actual" || true)
    if [ -n "$bad" ]; then
        echo "check-abi: $lib exports internal or unprefixed symbols (hide them:" \
            "internal headers are under #pragma GCC visibility push(hidden)):" >&2
        sed 's/^/    /' <<<"$bad" >&2
        status=1
        return
    fi
    if [ $UPDATE = 1 ]; then
        mkdir -p "$ABI_DIR"
        printf '%s\n' "$actual" > "$list"
        echo "check-abi: wrote $list ($(wc -l <"$list") symbols)"
        return
    fi
    if [ ! -e "$list" ]; then
        echo "check-abi: no list $list (scripts/check-abi.sh --update $BUILD writes it)" >&2
        status=1
        return
    fi
    local diff_out
    if diff_out=$(diff -u --label "$list (committed)" --label "$lib (built)" "$list" - <<<"$actual"); then
        echo "check-abi: lib$name.so: $(wc -l <<<"$actual") exported symbols, as listed in abi/$name.symbols"
    else
        {
            echo "check-abi: lib$name.so exports a different set of symbols than abi/$name.symbols:"
            echo "$diff_out"
            echo "'+': exported but not listed: an addition (list it with --update, a minor"
            echo "     version) or a symbol that should be hidden; '-': no longer exported: an"
            echo "     ABI break (a major version and a new SONAME). See docs/ABI-POLICY.md."
        } >&2
        status=1
    fi
}

# The Debian symbols files (debian/*.symbols) list the same names with the
# version that added each: --update adds new names with the project's
# version and drops removed ones; the check fails when they disagree.
ROOT_DIR=$(dirname "$ABI_DIR")
VERSION=$(sed -n 's/^project([^)]*VERSION \([0-9.]*\).*/\1/p' "$ROOT_DIR/CMakeLists.txt" | head -n 1)

debian_sync() {
    local name=$1 deb=$2 list="$ABI_DIR/$1.symbols"
    [ -e "$deb" ] && [ -e "$list" ] || return 0
    local listed
    listed=$(sed -n 's/^ \([^@ ]*\)@Base .*/\1/p' "$deb" | LC_ALL=C sort -u)
    if [ "$listed" = "$(cat "$list")" ]; then
        return 0
    fi
    if [ $UPDATE = 1 ]; then
        local tmp
        tmp=$(mktemp)
        grep -v '^ [^ ]*@Base ' "$deb" >"$tmp"
        while read -r sym; do
            local ver
            ver=$(sed -n "s/^ $sym@Base \(.*\)/\1/p" "$deb")
            echo " $sym@Base ${ver:-$VERSION}"
        done <"$list" >>"$tmp"
        mv "$tmp" "$deb"
        echo "check-abi: wrote ${deb#"$ROOT_DIR"/}"
        return 0
    fi
    echo "check-abi: ${deb#"$ROOT_DIR"/} does not list the names of abi/$name.symbols" \
        "(scripts/check-abi.sh --update BUILD_DIR rewrites it):" >&2
    diff <(echo "$listed") "$list" >&2 || true
    status=1
}

check futoin_asyncsteps 1
check futoin_asyncsteps_uv 0
debian_sync futoin_asyncsteps "$ROOT_DIR/debian/libfutoin-asyncsteps0.symbols"
debian_sync futoin_asyncsteps_uv "$ROOT_DIR/debian/libfutoin-asyncsteps-uv0.symbols"
exit $status
