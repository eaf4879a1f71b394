# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by the scripts: futoin_need PKG... installs the Debian packages of
# the list that are not installed yet (dpkg -s), with apt-get update and
# apt-get install -y --no-install-recommends, as root or through sudo.
# Packages already installed are never named to apt-get, so nothing that
# works is upgraded. FUTOIN_SKIP_DEPS=1 skips all of it.
#
#   . "$(dirname "$0")/deps.sh"; futoin_need cmake pkg-config libuv1-dev
#
# futoin_need_arch ARCH adds a foreign Debian architecture (dpkg
# --add-architecture: arm64, s390x, armhf) when dpkg does not have it yet,
# so that futoin_need can install multiarch packages (libuv1-dev:arm64);
# the apt-get update of the next futoin_need then reads its lists.
#
# Another package manager at work (unattended-upgrades, a second build) is
# waited for, up to FUTOIN_APT_LOCK_TIMEOUT seconds (600): apt-get takes
# -o DPkg::Lock::Timeout for the dpkg lock of install, purge and the like
# (futoin_apt_options). That option does not cover the lists lock of
# apt-get update (apt 2.6 fails at once when it is held), so
# futoin_apt_update retries the update while the lock is taken.

FUTOIN_APT_LOCK_TIMEOUT=${FUTOIN_APT_LOCK_TIMEOUT:-600}

# futoin_apt_options: the options of every apt-get call of the scripts.
futoin_apt_options() {
    printf '%s\n' -o "DPkg::Lock::Timeout=$FUTOIN_APT_LOCK_TIMEOUT"
}

# futoin_apt_update [SUDO]: apt-get update; while another process holds
# the lists lock, tried again every 5 s until FUTOIN_APT_LOCK_TIMEOUT.
futoin_apt_update() {
    local deadline=$((SECONDS + FUTOIN_APT_LOCK_TIMEOUT)) log rc opts
    mapfile -t opts < <(futoin_apt_options)
    log=$(mktemp)
    while :; do
        rc=0
        # LC_ALL=C: the lock message is matched below.
        "$@" env LC_ALL=C DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" update \
            >"$log" 2>&1 || rc=$?
        cat "$log"
        if [ "$rc" -ne 0 ] && grep -q '^E: Could not get lock' "$log" \
                && [ "$SECONDS" -lt "$deadline" ]; then
            echo "==> apt-get update: the lists lock is held; trying again in 5 s"
            sleep 5
            continue
        fi
        rm -f "$log"
        return "$rc"
    done
}

futoin_need() {
    if [ "${FUTOIN_SKIP_DEPS:-0}" = 1 ]; then
        return 0
    fi
    local who=${FUTOIN_DEPS_WHO:-$(basename "$0")}
    if ! command -v dpkg >/dev/null || ! command -v apt-get >/dev/null; then
        echo "$who: not a Debian system: make sure these are installed: $*" >&2
        return 0
    fi
    local missing=() p
    for p in "$@"; do
        if ! dpkg -s "$p" >/dev/null 2>&1; then
            missing+=("$p")
        fi
    done
    if [ ${#missing[@]} -eq 0 ]; then
        return 0
    fi
    local sudo=()
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null; then
            sudo=(sudo)
        else
            echo "$who: not root and no sudo: install ${missing[*]} yourself" >&2
            return 0
        fi
    fi
    echo "==> $who: installing ${missing[*]} (apt-get)"
    local opts
    mapfile -t opts < <(futoin_apt_options)
    futoin_apt_update "${sudo[@]}" || return
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" install -y \
        --no-install-recommends "${missing[@]}"
}

futoin_need_arch() {
    if [ "${FUTOIN_SKIP_DEPS:-0}" = 1 ] || ! command -v dpkg >/dev/null; then
        return 0
    fi
    local arch=$1
    if [ "$arch" = "$(dpkg --print-architecture)" ] \
            || dpkg --print-foreign-architectures | grep -qx "$arch"; then
        return 0
    fi
    local who=${FUTOIN_DEPS_WHO:-$(basename "$0")} sudo=()
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null; then
            sudo=(sudo)
        else
            echo "$who: not root and no sudo: run dpkg --add-architecture $arch yourself" >&2
            return 0
        fi
    fi
    echo "==> $who: adding the architecture $arch (dpkg --add-architecture)"
    "${sudo[@]}" dpkg --add-architecture "$arch"
}
