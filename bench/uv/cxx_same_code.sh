#!/bin/sh
# SPDX-License-Identifier: MIT
# Whether the step functions of futoin/uv.hpp compile to the C calls they
# wrap: two functions, one adding steps through the C++ wrappers, one
# through the C functions, compiled with -O2, and their instructions
# compared (labels aside). Prints "same" or the difference, per compiler.
#
#   bash bench/uv/cxx_same_code.sh [BUILD_DIR]   (default: build-bench)
# BUILD_DIR is a configured build tree (for futoin/version.h).
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-bench}
[ -f "$build/include/futoin/version.h" ] || {
    echo "no $build/include/futoin/version.h: configure a build there first" >&2
    exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/same.cpp" <<'EOF'
#include <futoin/uv.hpp>
namespace uv = futoin::uv;
extern "C" void with_cxx(FutoInAsyncSteps* raw, FutoInUvFile* f, FutoInUvUdp* u,
        FutoInUvProcess* p)
{
    futoin::Steps as(raw);
    uv::file_pread(as, f, 6, 5);
    uv::file_pwrite(as, f, -1, "text");
    uv::stat(as, "/x");
    uv::udp_send(as, u, "127.0.0.1", 53, "abc");
    uv::udp_recv(as, u);
    uv::process_wait(as, p);
}
extern "C" void with_c(FutoInAsyncSteps* as, FutoInUvFile* f, FutoInUvUdp* u,
        FutoInUvProcess* p)
{
    futoin_uv_file_pread(as, f, 6, 5);
    futoin_uv_file_pwrite(as, f, -1, "text", 4);
    futoin_uv_stat(as, "/x");
    futoin_uv_udp_send(as, u, "127.0.0.1", 53, "abc", 3);
    futoin_uv_udp_recv(as, u, 0);
    futoin_uv_process_wait(as, p);
}
EOF
for cxx in g++ clang++; do
    command -v "$cxx" >/dev/null || continue
    # g++ would fold the two identical functions into one (-fipa-icf).
    fold=""
    [ "$cxx" = g++ ] && fold=-fno-ipa-icf
    "$cxx" -std=c++17 -O2 $fold -S -o "$tmp/same.s" -I"$root/include" -I"$build/include" \
        "$tmp/same.cpp"
    # body NAME: the function's instructions, without labels and directives
    body() {
        awk -v f="$1:" '$1 == f { on = 1; next } on && /\.cfi_endproc|^\t\.size/ { exit }
            on && $0 ~ /^\t[a-z]/ && $0 !~ /^\t\./ { print }' "$tmp/same.s" |
            sed 's/\.L[A-Za-z0-9_]*//g'
    }
    body with_cxx >"$tmp/cxx.txt"
    body with_c >"$tmp/c.txt"
    n=$(wc -l <"$tmp/c.txt")
    if cmp -s "$tmp/cxx.txt" "$tmp/c.txt"; then
        echo "$cxx -O2: same ($n instructions each)"
    else
        echo "$cxx -O2: different"
        diff "$tmp/c.txt" "$tmp/cxx.txt" || true
    fi
done
