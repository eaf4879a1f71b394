#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The library's folders are layers that point one way (docs/INTERNALS.md):
#
#   common < loop < engine < sync, threads < observe < uv
#
# A file may include the headers of its own folder and of the folders below
# it, never of one above or beside it. Header names say who may include
# them: NAME_internal.h is offered to the folders above, NAME_impl.h is for
# its own folder only (common/ offers all of its headers and has neither
# suffix). A .c file must not declare a library function (futoin__*) for
# itself with "extern": that is an include by the back door.
#
#   bash scripts/check-layers.sh [SOURCE_DIR]   (CTest: layers)
set -euo pipefail
cd "${1:-$(dirname "$0")/..}/src"

# What each folder may include, besides itself.
declare -A below=(
    [common]=""
    [loop]="common"
    [engine]="common loop"
    [sync]="common loop engine"
    [threads]="common loop engine"
    [observe]="common loop engine sync threads"
    [uv]="common loop engine sync threads observe"
)

bad=0
fail() {
    echo "check-layers: $*" >&2
    bad=1
}

for dir in */; do
    dir=${dir%/}
    [ -n "${below[$dir]+set}" ] || fail "src/$dir/ is in no layer (add it to scripts/check-layers.sh)"
done

for dir in "${!below[@]}"; do
    [ -d "$dir" ] || continue
    for f in "$dir"/*.c "$dir"/*.h; do
        [ -e "$f" ] || continue
        case "$f" in
        common/*) ;;
        *_internal.h | *_impl.h | *.c) ;;
        *) fail "$f: a header of src/$dir/ ends in _internal.h (offered) or _impl.h (this folder)" ;;
        esac
        while IFS= read -r inc; do
            case "$inc" in
            */*)
                to=${inc%%/*}
                ;;
            *)
                to=$dir
                inc="$dir/$inc"
                ;;
            esac
            [ -e "$inc" ] || continue # a system or public header
            if [ "$to" = "$dir" ]; then
                continue
            fi
            case " ${below[$dir]} " in
            *" $to "*) ;;
            *) fail "$f includes $inc: src/$to/ is not below src/$dir/" ;;
            esac
            case "$inc" in
            *_impl.h) fail "$f includes $inc, which is for src/$to/ only" ;;
            esac
        done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
        if [ "${f%.c}" != "$f" ] && grep -nE '^[[:space:]]*extern[^;]*\bfutoin__' "$f" >&2; then
            fail "$f declares a library function or object itself; include its header"
        fi
    done
done

if [ $bad -eq 0 ]; then
    echo "check-layers: every include of src/ points down or stays in its folder"
fi
exit $bad
