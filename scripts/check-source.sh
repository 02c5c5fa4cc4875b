#!/bin/sh
# check-source.sh: fails if product code uses unbounded or unchecked libc
# calls (strcpy, strcat, sprintf, vsprintf, gets, strtok, atoi, atol).
# Tests and benchmarks are tools, not product, and are not checked.
set -eu
cd "$(dirname "$0")/.."
if grep -nE '\b(strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi|atol)[[:space:]]*\(' \
    include/abx/*.h lib/*.c lib/*.h runtime/*.c runtime/*.h mcp/*.c mcp/*.h src/*.c src/*.h 2>/dev/null | grep -v snprintf | grep -v vsnprintf; then
    echo "check-source: use the bounded or checked forms instead" >&2
    exit 1
fi
echo "check-source: ok"
