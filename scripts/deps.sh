# SPDX-License-Identifier: MIT
# Sourced by the scripts: futoin_need PKG... installs the Debian packages of
# the list that are not installed yet (dpkg -s), with apt-get update and
# apt-get install -y --no-install-recommends, as root or through sudo.
# Packages already installed are never named to apt-get, so nothing that
# works is upgraded. FUTOIN_SKIP_DEPS=1 skips all of it.
#
#   . "$(dirname "$0")/deps.sh"; futoin_need cmake pkg-config libuv1-dev

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
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}
