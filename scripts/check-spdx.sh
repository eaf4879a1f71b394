#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every tracked source, header, script, build file and document names its
# licence with an SPDX-License-Identifier line. Data files are exempt: the
# licence text itself, the exported-symbol lists, the examples' expected
# outputs and the fuzz corpus (compared or fed byte for byte).
#
#   bash scripts/check-spdx.sh     exit 1 and the list of files without one
set -euo pipefail
cd "$(dirname "$0")/.."
missing=$(git ls-files | grep -Ev '^(LICENSE|abi/|examples/expected/|tests/fuzz/corpus/)' |
    while read -r f; do
        [ -f "$f" ] && ! grep -q 'SPDX-License-Identifier' "$f" && echo "$f"
    done || true)
if [ -n "$missing" ]; then
    echo "check-spdx: files without an SPDX-License-Identifier line:" >&2
    echo "$missing" >&2
    exit 1
fi
echo "check-spdx: every file carries an SPDX-License-Identifier line"
