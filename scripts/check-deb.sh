#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Builds the Debian packages of debian/ and checks them the way a user of
# the packages sees them (Debian, as root or with sudo):
#
#   bash scripts/check-deb.sh
#
#   1. installs the build tools that are missing (scripts/deps.sh: only
#      packages that are not installed are named to apt-get);
#   2. copies the working tree (tracked and new files, uncommitted changes
#      included, no build directories) to a temporary directory and runs
#      dpkg-buildpackage -us -uc -b there (DEB_BUILD_OPTIONS=nocheck: the
#      tests run in the other stages of scripts/test.sh): the packages
#      libfutoin-asyncsteps0, libfutoin-asyncsteps-dev (with the API
#      reference), libfutoin-asyncsteps-uv0 and libfutoin-asyncsteps-uv-dev;
#   3. lintian on the .changes: fails on any error (warnings are shown);
#   4. installs the four packages (apt-get install ./*.deb) and runs
#      scripts/check-consumer.sh on prefix /usr: the installed files and
#      SONAMEs, programs built with pkg-config, find_package and
#      add_subdirectory, and nm for one copy of the core;
#   5. purges the packages again, also when a step fails, so the machine is
#      left as it was.
#
# Environment:
#   CHECK_DEB_DIR=dir    work directory, kept afterwards (default: a temporary
#                        one, removed)
#   DEB_BUILD_OPTIONS    default "nocheck parallel=$JOBS"
#   JOBS=n               parallel build jobs (default: 2)
#   FUTOIN_SKIP_DEPS=1   do not install missing tools
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd -P)
ROOT_DIR=$(cd "$SCRIPT_DIR/.." && pwd -P)
JOBS=${JOBS:-2}
PACKAGES=(libfutoin-asyncsteps0 libfutoin-asyncsteps-dev
    libfutoin-asyncsteps-uv0 libfutoin-asyncsteps-uv-dev)
START=$(date +%s)

fail() {
    echo "check-deb: FAILED: $*" >&2
    exit 1
}

step() {
    echo
    echo "== check-deb: $* ($(( $(date +%s) - START )) s)"
}

SUDO=()
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || fail "installing packages needs root or sudo"
    SUDO=(sudo)
fi
# Waits for another package manager's dpkg lock (futoin_apt_options of
# deps.sh, sourced below, before the first call).
apt_get() {
    local opts
    mapfile -t opts < <(futoin_apt_options)
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" "$@"
}

installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

# ---- 1. tools -------------------------------------------------------------

step "build tools"
# shellcheck source=scripts/deps.sh
. "$SCRIPT_DIR/deps.sh"
# The Build-Depends of debian/control, dpkg-buildpackage with a compiler,
# lintian, and what check-consumer.sh uses (binutils: nm, readelf).
futoin_need build-essential dpkg-dev debhelper cmake pkg-config libuv1-dev libssl-dev doxygen \
    lintian binutils

# ---- 2. build -------------------------------------------------------------

if [ -n "${CHECK_DEB_DIR:-}" ]; then
    rm -rf "$CHECK_DEB_DIR"
    mkdir -p "$CHECK_DEB_DIR"
    WORK=$(cd "$CHECK_DEB_DIR" && pwd -P)
else
    WORK=$(mktemp -d /tmp/futoin-deb.XXXXXX)
fi
WE_INSTALLED=0
cleanup() {
    local rc=$?
    if [ $WE_INSTALLED = 1 ]; then
        echo
        echo "== check-deb: purging ${PACKAGES[*]}"
        apt_get purge -y "${PACKAGES[@]}" >"$WORK/purge.log" 2>&1 \
            || { cat "$WORK/purge.log"; rc=1; }
    fi
    if [ -z "${CHECK_DEB_DIR:-}" ]; then
        rm -rf "$WORK"
    fi
    exit $rc
}
trap cleanup EXIT

step "copy of the working tree"
VERSION=$(cd "$ROOT_DIR" && dpkg-parsechangelog -S Version)
SRC="$WORK/futoin-asyncsteps-$VERSION"
mkdir -p "$SRC"
# Tracked and new (not ignored) files as they are in the working tree; the
# build directories are ignored (.gitignore), files deleted but not yet
# committed are left out.
(cd "$ROOT_DIR" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do
        if [ -f "$f" ] || [ -L "$f" ]; then
            printf '%s\0' "$f"
        fi
    done | tar -cf - --null -T -) | tar -xf - -C "$SRC"
echo "check-deb: $(find "$SRC" -type f | wc -l) files in $SRC"

step "dpkg-buildpackage -us -uc -b"
(cd "$SRC" && DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS-"nocheck parallel=$JOBS"} \
    dpkg-buildpackage -us -uc -b) >"$WORK/build.log" 2>&1 \
    || { tail -n 80 "$WORK/build.log"; fail "dpkg-buildpackage (log: $WORK/build.log)"; }
# The symbols files' comparison, if dpkg-gensymbols found a difference.
grep -A20 '^dpkg-gensymbols: warning' "$WORK/build.log" || true
CHANGES=$(ls "$WORK"/futoin-asyncsteps_"$VERSION"_*.changes)
DEBS=()
for p in "${PACKAGES[@]}"; do
    deb=$(ls "$WORK/${p}_${VERSION}"_*.deb 2>/dev/null || true)
    [ -n "$deb" ] || fail "no package $p was built"
    DEBS+=("$deb")
done
for deb in "${DEBS[@]}"; do
    echo "$(basename "$deb"): $(dpkg-deb -c "$deb" | grep -vc '/$') files"
    dpkg-deb -c "$deb" | awk '$NF !~ /\/$/ { print "    " $6 ($7 == "->" ? " -> " $8 : "") }' |
        grep -v '/html/.*\.\(html\|png\|css\|js\|svg\)$' || true
done
echo "    (and the HTML files of the API reference, usr/share/doc/libfutoin-asyncsteps-dev/html/)"

# ---- 3. lintian -----------------------------------------------------------

step "lintian"
lintian_rc=0
lintian --fail-on error --display-info "$CHANGES" >"$WORK/lintian.log" 2>&1 || lintian_rc=$?
cat "$WORK/lintian.log"
echo "check-deb: lintian: $(grep -c '^E:' "$WORK/lintian.log" || true) errors," \
    "$(grep -c '^W:' "$WORK/lintian.log" || true) warnings," \
    "$(grep -c '^I:' "$WORK/lintian.log" || true) info"
[ $lintian_rc = 0 ] || fail "lintian reports errors"

# ---- 4. install and consume -----------------------------------------------

step "apt-get install ./*.deb"
for p in "${PACKAGES[@]}"; do
    if installed "$p"; then
        echo "check-deb: $p is already installed: it is replaced now and purged at the end"
    fi
done
WE_INSTALLED=1
apt_get install -y --no-install-recommends "${DEBS[@]}" >"$WORK/install.log" 2>&1 \
    || { cat "$WORK/install.log"; fail "apt-get install of the packages"; }
for p in "${PACKAGES[@]}"; do
    installed "$p" || fail "$p is not installed"
    echo "installed: $p $(dpkg-query -W -f='${Version}' "$p")"
done
DOCDIR=/usr/share/doc/libfutoin-asyncsteps-dev
[ -f "$DOCDIR/html/index.html" ] || fail "no API reference in $DOCDIR/html"
echo "API reference: $DOCDIR/html/index.html ($(find "$DOCDIR/html" -type f | wc -l) files)"

step "scripts/check-consumer.sh /usr"
CHECK_DIR="$WORK/consumer" FUTOIN_DOCDIR="$DOCDIR" JOBS=$JOBS \
    bash "$SRC/scripts/check-consumer.sh" /usr

# ---- 5. purge (cleanup) ---------------------------------------------------

step "done"
echo "check-deb: all checks passed"
