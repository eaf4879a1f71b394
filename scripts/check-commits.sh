#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The commit rule of CONTRIBUTING.md: a subject "area: what changed" of at
# most 72 characters, details in the body. Checked for every commit (merges
# aside) made since the rule was adopted, so that it holds from then on.
#
#   bash scripts/check-commits.sh [SINCE]
#
# SINCE defaults to the commit the rule starts after. Outside a git clone,
# or in a shallow one without that commit, there is nothing to check.
set -euo pipefail
cd "$(dirname "$0")/.."

since=${1:-dcb1dae}
if ! git rev-parse --git-dir >/dev/null 2>&1; then
    echo "check-commits: not a git clone, nothing to check"
    exit 0
fi
if ! git cat-file -e "$since^{commit}" 2>/dev/null; then
    echo "check-commits: $since is not in this clone (shallow?), nothing to check"
    exit 0
fi

bad=0
n=0
while IFS= read -r line; do
    hash=${line%% *}
    subject=${line#* }
    n=$((n + 1))
    if [ ${#subject} -gt 72 ]; then
        echo "check-commits: $hash: subject of ${#subject} characters (at most 72): $subject" >&2
        bad=1
    fi
    if ! [[ "$subject" =~ ^[A-Za-z0-9_./,\ +-]+:\ [^\ ] ]]; then
        echo "check-commits: $hash: subject is not \"area: what changed\": $subject" >&2
        bad=1
    fi
done < <(git log --no-merges --format='%h %s' "$since..HEAD")

if [ $bad -eq 0 ]; then
    echo "check-commits: $n commits since $since follow \"area: what changed\" within 72 characters"
fi
exit $bad
