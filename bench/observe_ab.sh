#!/bin/sh
# bench/observe_ab.sh BEFORE_ABX AFTER_ABX [RUNS]: issue 30's check that
# metrics, the event log and the console cost the hot path nothing: the
# same `abx create` + `abx kill` and `abx exec ID true` with two builds
# (before the change and after it), interleaved by bench-exec, each build
# in an ABX_HOME of its own. The first row is the reference (ratio 1.00).
# Run by hand: build the older commit elsewhere (git worktree, meson setup).
set -eu
cd "$(dirname "$0")/.."
before=$1 after=$2 runs=${3:-40}
B=build/bench-exec
home_a=$(mktemp -d) home_b=$(mktemp -d)
trap 'ABX_HOME=$home_a "$before" kill "$id_a" >/dev/null 2>&1; ABX_HOME=$home_b "$after" kill "$id_b" >/dev/null 2>&1; rm -rf "$home_a" "$home_b"' EXIT
id_a=$(ABX_HOME=$home_a "$before" create --timeout 3600)
id_b=$(ABX_HOME=$home_b "$after" create --timeout 3600)
echo "## exec and create+kill, before and after ($runs runs each, interleaved)"
echo
$B "$runs" 5 \
    "exec (before)" -- env ABX_HOME="$home_a" "$before" exec "$id_a" true \
    ::: "exec (after)" -- env ABX_HOME="$home_b" "$after" exec "$id_b" true
echo
$B "$runs" 3 \
    "create+kill (before)" -- env ABX_HOME="$home_a" sh -c 'id=$("$0" create --timeout 60) && "$0" kill "$id"' "$before" \
    ::: "create+kill (after)" -- env ABX_HOME="$home_b" sh -c 'id=$("$0" create --timeout 60) && "$0" kill "$id"' "$after"
