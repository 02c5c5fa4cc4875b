/* host_checks.c: what this host and this user can run (abx_host_checks),
 * for `abx doctor` and for `abx mcp install|status|start`, which say it
 * before an IDE finds out by failing. The library's own knowledge of what
 * its runtime needs. Reads only; changes nothing. Each check is {check,
 * status: ok|warn|fail, detail (with what to do)}. */
#include "abx/abx.h"
#include "cgroup.h"
#include "error_internal.h"
#include "config.h"
#include "evp_api.h"
#include "ldns_api.h"
#include "netlibs.h"
#include "service_client.h"

#include <errno.h>
#include <jansson.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

typedef struct check_list {
    json_t *checks;
    bool failed;
} check_list;

static void add(check_list *l, const char *name, const char *status, const char *detail)
{
    json_array_append_new(l->checks,
                          json_pack("{s:s, s:s, s:s}", "check", name, "status", status, "detail", detail));
    if (strcmp(status, "fail") == 0)
        l->failed = true;
}

static long read_long(const char *path, long fallback)
{
    FILE *f = fopen(path, "re");
    long v = fallback;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = fallback;
        fclose(f);
    }
    return v;
}

static void check_namespaces(check_list *l)
{
    static const char *const ns[] = {"user", "pid", "mnt", "net", "uts", "ipc", "cgroup"};
    char missing[128] = "";
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/ns/%s", ns[i]);
        if (access(path, F_OK) < 0)
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s", ns[i]);
    }
    if (missing[0]) {
        char d[256];
        snprintf(d, sizeof d, "the kernel lacks:%s namespaces (E8006)", missing);
        add(l, "namespaces", "fail", d);
    } else {
        add(l, "namespaces", "ok", "user, pid, mount, network, UTS, IPC and cgroup namespaces");
    }
    long max = read_long("/proc/sys/user/max_user_namespaces", -1);
    long unpriv = read_long("/proc/sys/kernel/unprivileged_userns_clone", 1);
    if (max == 0)
        add(l, "user namespaces", "fail",
            "user.max_user_namespaces is 0: sysctl -w user.max_user_namespaces=15000");
    else if (geteuid() != 0 && unpriv == 0)
        add(l, "user namespaces", "fail",
            "kernel.unprivileged_userns_clone is 0: run abx as root, or sysctl -w "
            "kernel.unprivileged_userns_clone=1");
    else
        add(l, "user namespaces", "ok", geteuid() == 0 ? "as root" : "allowed for unprivileged users");
}

static void check_seccomp(check_list *l)
{
    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL)
        add(l, "seccomp", "fail", "the kernel has no seccomp (E8006)");
    else
        add(l, "seccomp", "ok", "seccomp filters");
}

static void check_cgroups(check_list *l)
{
    struct statfs sf;
    const char *parent = getenv("ABX_CGROUP_PARENT");
    if (statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == 0x63677270) { /* cgroup2 */
        char delegated[200] = "", self[2048] = "";
        FILE *f = fopen("/proc/self/cgroup", "re");
        size_t n = f ? fread(self, 1, sizeof self - 1, f) : 0;
        if (f)
            fclose(f);
        self[n] = '\0';
        bool user_subtree =
            geteuid() != 0 && !(parent && *parent) &&
            abx__cgroup_user_parent(self, (unsigned)geteuid(), delegated, sizeof delegated) == 0;
        if (user_subtree)
            *strrchr(delegated, '/') =
                '\0'; /* abx.slice is made there: the service's directory must be ours */
        const char *dir = parent && *parent ? parent : user_subtree ? delegated : "/sys/fs/cgroup";
        char detail[320];
        snprintf(detail, sizeof detail, "v2, %s",
                 parent && *parent ? "the delegated subtree in ABX_CGROUP_PARENT"
                 : user_subtree    ? "the subtree systemd delegates to you (abx.slice)"
                                   : "as root");
        if (access(dir, W_OK) == 0)
            add(l, "cgroups", "ok", detail);
        else
            add(l, "cgroups", "fail",
                "v2 without a subtree this user may write: run abx from a systemd user session (its "
                "user@UID.service "
                "is delegated), set ABX_CGROUP_PARENT to a delegated cgroup (e.g. systemd-run --user --scope "
                "-p "
                "Delegate=yes), or run abx as root (E8007)");
        return;
    }
    bool v1 = access("/sys/fs/cgroup/memory", F_OK) == 0 && access("/sys/fs/cgroup/pids", F_OK) == 0 &&
              access("/sys/fs/cgroup/cpu", F_OK) == 0;
    if (!v1)
        add(l, "cgroups", "fail",
            "neither cgroup v2 nor the v1 memory, pids and cpu controllers are mounted (E8007)");
    else if (access("/sys/fs/cgroup/memory", W_OK) < 0)
        add(l, "cgroups", "fail", "v1 controllers this user may not write: run abx as root (E8007)");
    else
        add(l, "cgroups", "ok",
            access("/sys/fs/cgroup/freezer", F_OK) == 0 ? "v1 memory, pids, cpu and freezer"
                                                        : "v1 memory, pids, cpu");
}

/* What would make starts faster here (status ok: advice, not a fault).
 * Writing a pid into a cgroup takes the kernel's threadgroup lock for
 * writing, which without favordynmods waits for an RCU grace period now
 * and then (one start in ten waited 11 ms on a 2-cpu VM; bench/RESULTS.md,
 * issue 29). Read from /proc/self/mountinfo: the option of any cgroup2
 * mount (it is one switch for the whole kernel). */
static void check_start_speed(check_list *l)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[1024], where[256] = "";
    bool favor = false, any = false;
    while (f && fgets(line, sizeof line, f)) {
        const char *sep = strstr(line, " - cgroup2 ");
        if (!sep)
            continue;
        char mnt[256];
        if (sscanf(line, "%*s %*s %*s %*s %255s", mnt) == 1 && !any)
            snprintf(where, sizeof where, "%s", mnt);
        any = true;
        favor = favor || strstr(sep, "favordynmods") != NULL;
    }
    if (f)
        fclose(f);
    char detail[512];
    if (favor)
        snprintf(detail, sizeof detail,
                 "cgroup favordynmods is on: attaching a sandbox to its cgroup never waits");
    else if (any)
        snprintf(detail, sizeof detail,
                 "faster with cgroup favordynmods: 'mount -o remount,favordynmods %s' (or boot with "
                 "cgroup_favordynmods=true); without it, attaching a sandbox to its cgroup waits now and "
                 "then for an RCU grace period (some 10 ms)",
                 where);
    else
        snprintf(
            detail, sizeof detail,
            "faster with cgroup favordynmods (boot with cgroup_favordynmods=true): without it, attaching "
            "a sandbox to its cgroup waits now and then for an RCU grace period (some 10 ms)");
    add(l, "start speed", "ok", detail);
}

static void check_ids(check_list *l)
{
    if (geteuid() == 0)
        add(l, "host ids", "ok",
            "each sandbox gets 65536 host uids of its own (pool from ABX_UID_POOL_BASE, 1000000000 by "
            "default)");
    else
        add(l, "host ids", "warn",
            "not root: only your own uid is mapped, so commands run as root inside (--user root); `user` "
            "needs root");
}

static void check_home(check_list *l)
{
    char home[512];
    abx_error *err = NULL;
    if (abx__home(home, sizeof home) < 0) {
        add(l, "state directory", "fail", "neither ABX_HOME nor HOME is set");
        return;
    }
    if (abx__home_check(home, &err) < 0) {
        char d[700];
        snprintf(d, sizeof d, "%s (E8025)", abx_error_message(err));
        add(l, "state directory", "fail", d);
    } else {
        add(l, "state directory", "ok", home);
    }
    abx_error_free(err);
}

/* The libraries abx loads on first use (base/netlibs.c), loaded here. */
static void check_libraries(check_list *l)
{
    bool curl = abx__curl() != NULL, mhd = abx__mhd() != NULL, ldns = abx__ldns() != NULL;
    add(l, "libcurl", curl ? "ok" : "warn",
        curl ? "remote providers and clouds over TCP"
             : "not found: remote providers and clouds over TCP fail with E8006 (apt-get install libcurl4)");
    add(l, "libmicrohttpd", mhd ? "ok" : "fail",
        mhd ? "abx-shim and mcp serve" : "not found: apt-get install libmicrohttpd12 (E8006)");
    bool evp = abx__evp_loaded();
    add(l, "libcrypto", evp ? "ok" : "warn",
        evp ? "SHA-256: template builds, API keys' tenants, signed URLs"
            : "not found: template builds, abx serve and mcp serve fail without it (apt-get install "
              "libssl3)");
    add(l, "libldns", ldns ? "ok" : "warn",
        ldns ? "a networked sandbox's resolver"
             : "not found: sandboxes with a network fail with E8006 (apt-get install libldns3)");
}

/* Sandbox networking (docs/network.md): root and libnftables; without
 * them sandboxes still work, with loopback only. */
static void check_network(check_list *l)
{
    void *nft = dlopen("libnftables.so.1", RTLD_NOW | RTLD_LOCAL);
    if (geteuid() != 0)
        add(l, "sandbox networking", "warn",
            "needs root: --network internet and --allow-out are refused (E8010)");
    else if (!nft)
        add(l, "sandbox networking", "warn", "libnftables not found: apt-get install libnftables1");
    else
        add(l, "sandbox networking", "ok", "veth + nftables + a resolver per sandbox, on request");
    if (nft)
        dlclose(nft);
}

/* Templates (docs/templates.md): root for id-mapped mounts, a kernel whose
 * overlayfs takes id-mapped layers, and mmdebstrap for FROM debian. */
static void check_templates(check_list *l)
{
    struct utsname u;
    int major = 0, minor = 0;
    if (uname(&u) == 0)
        sscanf(u.release, "%d.%d", &major, &minor);
    bool idmap = major > 5 || (major == 5 && minor >= 19);
    bool debian = access("/usr/bin/mmdebstrap", X_OK) == 0 || access("/usr/sbin/debootstrap", X_OK) == 0;
    char detail[200];
    if (geteuid() != 0)
        add(l, "templates", "warn",
            "need root (id-mapped mounts): abx template build and --template are refused (E8010)");
    else if (!idmap) {
        snprintf(detail, sizeof detail,
                 "kernel %.60s: sandboxes from templates need 5.19+ (E8008); base works", u.release);
        add(l, "templates", "warn", detail);
    } else if (!debian)
        add(l, "templates", "warn",
            "FROM debian needs mmdebstrap: apt-get install mmdebstrap (imports work)");
    else
        add(l, "templates", "ok", "id-mapped template trees; FROM debian with mmdebstrap");
}

/* The abx service: the way in for a user without root. */
static bool check_service(check_list *l)
{
    char sock[108], detail[400];
    bool through = abx_service_socket(sock, sizeof sock), up = abx_service_reachable(sock);
    if (through && up)
        snprintf(detail, sizeof detail,
                 "sandboxes are made through the abx service at %s: this user's own, with the machine's "
                 "isolation",
                 sock);
    else if (through)
        snprintf(detail, sizeof detail,
                 "the abx service at %s is not reachable: ask root to start it ('abx service start', or "
                 "'abx service install' where systemd runs)",
                 sock);
    else if (geteuid() == 0)
        snprintf(detail, sizeof detail,
                 up ? "running at %s: the users of this machine make sandboxes through it (root goes direct)"
                    : "not running (%s): root goes direct; users without root need it ('abx service "
                      "install', or 'abx service start' without systemd)",
                 sock);
    else
        snprintf(detail, sizeof detail,
                 "no abx service here (%s): a user without root makes sandboxes through it; ask root for "
                 "'abx service install'",
                 sock);
    add(l, "abx service",
        through          ? (up ? "ok" : "fail")
        : geteuid() == 0 ? "ok" /* root goes direct: the service is the other users' way in */
                         : "warn",
        detail);
    return through;
}

int abx_host_checks(char **json, bool *works, abx_error **err)
{
    *json = NULL;
    check_list l = {json_array(), false};
    if (check_service(&l)) { /* the service's host does the rest */
        check_libraries(&l);
        if (works)
            *works = !l.failed;
        *json = json_dumps(l.checks, JSON_COMPACT);
        json_decref(l.checks);
        return *json ? 0 : abx__error_set(err, ABX_ENOMEM, "host checks");
    }
    check_namespaces(&l);
    check_seccomp(&l);
    check_cgroups(&l);
    check_ids(&l);
    check_home(&l);
    check_libraries(&l);
    check_network(&l);
    check_templates(&l);
    check_start_speed(&l);
    if (works)
        *works = !l.failed;
    *json = json_dumps(l.checks, JSON_COMPACT);
    json_decref(l.checks);
    return *json ? 0 : abx__error_set(err, ABX_ENOMEM, "host checks");
}
