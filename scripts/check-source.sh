#!/bin/sh
# check-source.sh: the source checks the README's test command runs.
#   1. product code uses no unbounded or unchecked libc call (strcpy, strcat,
#      sprintf, vsprintf, gets, strtok, atoi, atol), in every C folder;
#   2. the walls between the layers hold (scripts/check-layers.py);
#   3. every C file is formatted as .clang-format says (clang-format);
#   4. every repository path a document or a comment names exists
#      (scripts/check-paths.py).
# Tests and benchmarks are tools, not product: only 2-4 look at them.
set -eu
cd "$(dirname "$0")/.."
C_FOLDERS="include/abx base runtime lib lib/local mcp serve src oci"
files=""
for d in $C_FOLDERS; do
    for f in "$d"/*.c "$d"/*.h; do
        [ -f "$f" ] && files="$files $f"
    done
done
# shellcheck disable=SC2086
if grep -nE '\b(strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi|atol)[[:space:]]*\(' $files | grep -v snprintf | grep -v vsnprintf; then
    echo "check-source: use the bounded or checked forms instead" >&2
    exit 1
fi
python3 scripts/check-layers.py
if command -v clang-format >/dev/null 2>&1; then
    all="$files $(ls tests/unit/*.c tests/fuzz/*.c tests/security/*.c tests/conformance/*.c bench/*.c 2>/dev/null | tr '\n' ' ')"
    bad=""
    for f in $all; do
        clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
    done
    if [ -n "$bad" ]; then
        echo "check-source: not formatted as .clang-format says (run: clang-format -i FILE):$bad" >&2
        exit 1
    fi
else
    echo "check-source: clang-format is not installed (apt-get install clang-format)" >&2
    exit 1
fi
python3 scripts/check-paths.py
echo "check-source: ok"
