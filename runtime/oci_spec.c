/* oci_spec.c: reading an OCI bundle's config.json (oci_spec.h).
 *
 * Owns: the mapping of the config's names (namespaces, mount options,
 * capabilities, rlimits, signals) to the kernel's numbers, and the bounds
 * on every list. Pure logic over jansson's tree: nothing here touches the
 * system, so it is unit-tested and fuzzed as it is.
 */
#include "oci_spec.h"
#include "error_internal.h"

#include <ctype.h>
#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/resource.h>

#define FIELD_ERR(err, ...) abx__error_set(err, ABX_EINVAL, "config.json: " __VA_ARGS__)

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* A NULL-terminated copy of an array of strings (NULL for a missing one);
 * -1 when it is not an array of strings or is longer than the bound. */
static int string_list(const json_t *arr, const char *field, char ***out, abx_error **err)
{
    *out = NULL;
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > ABX_OCI_MAX_LIST)
        return FIELD_ERR(err, "%s must be an array of at most %d strings", field, ABX_OCI_MAX_LIST);
    size_t n = json_array_size(arr);
    char **list = calloc(n + 1, sizeof *list);
    if (!list)
        return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s || !(list[i] = strdup(s))) {
            for (size_t j = 0; j < i; j++)
                free(list[j]);
            free(list);
            return FIELD_ERR(err, "%s[%zu] must be a string", field, i);
        }
    }
    *out = list;
    return 0;
}

static void free_list(char **list)
{
    for (size_t i = 0; list && list[i]; i++)
        free(list[i]);
    free(list);
}

static const struct {
    const char *name;
    int number;
} cap_names[] = {
    {"CHOWN", 0},
    {"DAC_OVERRIDE", 1},
    {"DAC_READ_SEARCH", 2},
    {"FOWNER", 3},
    {"FSETID", 4},
    {"KILL", 5},
    {"SETGID", 6},
    {"SETUID", 7},
    {"SETPCAP", 8},
    {"LINUX_IMMUTABLE", 9},
    {"NET_BIND_SERVICE", 10},
    {"NET_BROADCAST", 11},
    {"NET_ADMIN", 12},
    {"NET_RAW", 13},
    {"IPC_LOCK", 14},
    {"IPC_OWNER", 15},
    {"SYS_MODULE", 16},
    {"SYS_RAWIO", 17},
    {"SYS_CHROOT", 18},
    {"SYS_PTRACE", 19},
    {"SYS_PACCT", 20},
    {"SYS_ADMIN", 21},
    {"SYS_BOOT", 22},
    {"SYS_NICE", 23},
    {"SYS_RESOURCE", 24},
    {"SYS_TIME", 25},
    {"SYS_TTY_CONFIG", 26},
    {"MKNOD", 27},
    {"LEASE", 28},
    {"AUDIT_WRITE", 29},
    {"AUDIT_CONTROL", 30},
    {"SETFCAP", 31},
    {"MAC_OVERRIDE", 32},
    {"MAC_ADMIN", 33},
    {"SYSLOG", 34},
    {"WAKE_ALARM", 35},
    {"BLOCK_SUSPEND", 36},
    {"AUDIT_READ", 37},
    {"PERFMON", 38},
    {"BPF", 39},
    {"CHECKPOINT_RESTORE", 40},
};

int abx__oci_cap_parse(const char *name)
{
    if (!name)
        return -1;
    if (strncasecmp(name, "CAP_", 4) == 0)
        name += 4;
    for (size_t i = 0; i < sizeof cap_names / sizeof cap_names[0]; i++)
        if (strcasecmp(name, cap_names[i].name) == 0)
            return cap_names[i].number;
    return -1;
}

static const struct {
    const char *name;
    int number;
} signal_names[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},       {"QUIT", SIGQUIT}, {"ILL", SIGILL},     {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT}, {"IOT", SIGIOT},       {"BUS", SIGBUS},   {"FPE", SIGFPE},     {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},     {"USR2", SIGUSR2}, {"PIPE", SIGPIPE},   {"ALRM", SIGALRM},
    {"TERM", SIGTERM}, {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD}, {"CONT", SIGCONT},   {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},     {"TTOU", SIGTTOU}, {"URG", SIGURG},     {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"POLL", SIGPOLL}, {"PWR", SIGPWR},       {"SYS", SIGSYS},
};

int abx__oci_signal_parse(const char *text)
{
    if (!text || !*text)
        return -1;
    char *end;
    long n = strtol(text, &end, 10);
    if (*end == '\0')
        return n > 0 && n <= 64 ? (int)n : -1;
    if (strncasecmp(text, "SIG", 3) == 0)
        text += 3;
    for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
        if (strcasecmp(text, signal_names[i].name) == 0)
            return signal_names[i].number;
    if (strncasecmp(text, "RTMIN", 5) == 0 || strncasecmp(text, "RTMAX", 5) == 0) {
        long off = text[5] ? strtol(text + 5, &end, 10) : 0;
        if (text[5] && *end)
            return -1;
        int sig = toupper((unsigned char)text[3]) == 'I' ? SIGRTMIN + (int)off : SIGRTMAX + (int)off;
        return sig >= SIGRTMIN && sig <= SIGRTMAX ? sig : -1;
    }
    return -1;
}

static int caps_parse(const json_t *caps, abx_oci_process *p, abx_error **err)
{
    static const char *const sets[5] = {"bounding", "effective", "inheritable", "permitted", "ambient"};
    if (!caps || json_is_null(caps))
        return 0;
    if (!json_is_object(caps))
        return FIELD_ERR(err, "process.capabilities must be an object");
    p->has_caps = true;
    for (int i = 0; i < 5; i++) {
        const json_t *arr = json_object_get(caps, sets[i]);
        if (!arr)
            continue;
        if (!json_is_array(arr) || json_array_size(arr) > 128)
            return FIELD_ERR(err, "process.capabilities.%s must be an array of capability names", sets[i]);
        size_t k;
        const json_t *v;
        json_array_foreach(arr, k, v)
        {
            int cap = abx__oci_cap_parse(json_string_value(v));
            if (cap < 0) /* runc ignores a capability this kernel does not know; so do we, named */
                continue;
            p->caps[i] |= 1ull << cap;
        }
    }
    return 0;
}

static const struct {
    const char *name;
    int resource;
} rlimit_names[] = {
    {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_CORE", RLIMIT_CORE},
    {"RLIMIT_CPU", RLIMIT_CPU},
    {"RLIMIT_DATA", RLIMIT_DATA},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"RLIMIT_LOCKS", RLIMIT_LOCKS},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
    {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_NPROC", RLIMIT_NPROC},
    {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
    {"RLIMIT_RTTIME", RLIMIT_RTTIME},
    {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_STACK", RLIMIT_STACK},
};

static int rlimits_parse(const json_t *arr, abx_oci_process *p, abx_error **err)
{
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > 64)
        return FIELD_ERR(err, "process.rlimits must be an array of at most 64 limits");
    p->rlimits = calloc(json_array_size(arr) + 1, sizeof *p->rlimits);
    if (!p->rlimits)
        return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *type = json_string_value(json_object_get(v, "type"));
        int resource = -1;
        for (size_t k = 0; type && k < sizeof rlimit_names / sizeof rlimit_names[0]; k++)
            if (strcmp(type, rlimit_names[k].name) == 0)
                resource = rlimit_names[k].resource;
        const json_t *soft = json_object_get(v, "soft"), *hard = json_object_get(v, "hard");
        if (resource < 0 || !json_is_integer(soft) || !json_is_integer(hard))
            return FIELD_ERR(err, "process.rlimits[%zu] needs a known type and integer soft and hard", i);
        p->rlimits[p->n_rlimits++] = (abx_oci_rlimit){resource, (uint64_t)json_integer_value(soft),
                                                      (uint64_t)json_integer_value(hard)};
    }
    return 0;
}

static bool is_uint32(const json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= UINT32_MAX;
}

int abx__oci_process_parse(const json_t *process, abx_oci_process *p, abx_error **err)
{
    memset(p, 0, sizeof *p);
    p->umask = -1;
    if (!json_is_object(process))
        return FIELD_ERR(err, "process must be an object");
    p->terminal = json_is_true(json_object_get(process, "terminal"));
    const json_t *size = json_object_get(process, "consoleSize");
    json_int_t rows = json_integer_value(json_object_get(size, "height")),
               cols = json_integer_value(json_object_get(size, "width"));
    if (rows > 0 && rows <= 65535 && cols > 0 && cols <= 65535) {
        p->console_rows = (unsigned short)rows;
        p->console_cols = (unsigned short)cols;
    }
    const json_t *user = json_object_get(process, "user");
    if (user && !json_is_object(user))
        return FIELD_ERR(err, "process.user must be an object");
    const json_t *uid = json_object_get(user, "uid"), *gid = json_object_get(user, "gid");
    if ((uid && !is_uint32(uid)) || (gid && !is_uint32(gid)))
        return FIELD_ERR(err, "process.user.uid and gid must be integers from 0 to 4294967295");
    p->uid = (uint32_t)json_integer_value(uid);
    p->gid = (uint32_t)json_integer_value(gid);
    const json_t *umask = json_object_get(user, "umask");
    if (umask) {
        if (!json_is_integer(umask) || json_integer_value(umask) < 0 || json_integer_value(umask) > 0777)
            return FIELD_ERR(err, "process.user.umask must be an integer from 0 to 0777");
        p->umask = (int)json_integer_value(umask);
    }
    const json_t *groups = json_object_get(user, "additionalGids");
    if (groups && !json_is_null(groups)) {
        if (!json_is_array(groups) || json_array_size(groups) > 65536)
            return FIELD_ERR(err, "process.user.additionalGids must be an array of at most 65536 ids");
        p->additional_gids = calloc(json_array_size(groups) + 1, sizeof *p->additional_gids);
        if (!p->additional_gids)
            return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
        size_t i;
        const json_t *v;
        json_array_foreach(groups, i, v)
        {
            if (!is_uint32(v))
                return FIELD_ERR(err, "process.user.additionalGids[%zu] must be an id", i);
            p->additional_gids[p->n_additional_gids++] = (gid_t)json_integer_value(v);
        }
    }
    int rc;
    if ((rc = string_list(json_object_get(process, "args"), "process.args", &p->args, err)) < 0 ||
        (rc = string_list(json_object_get(process, "env"), "process.env", &p->env, err)) < 0)
        return rc;
    if (!p->args || !p->args[0])
        return FIELD_ERR(err, "process.args must name the program to run");
    if (!p->env && !(p->env = calloc(1, sizeof *p->env)))
        return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
    const char *cwd = json_string_value(json_object_get(process, "cwd"));
    if (json_object_get(process, "cwd") && (!cwd || cwd[0] != '/'))
        return FIELD_ERR(err, "process.cwd must be an absolute path");
    p->cwd = strdup(cwd ? cwd : "/");
    if ((rc = caps_parse(json_object_get(process, "capabilities"), p, err)) < 0 ||
        (rc = rlimits_parse(json_object_get(process, "rlimits"), p, err)) < 0)
        return rc;
    p->no_new_privileges = json_is_true(json_object_get(process, "noNewPrivileges"));
    const json_t *oom = json_object_get(process, "oomScoreAdj");
    if (oom) {
        if (!json_is_integer(oom) || json_integer_value(oom) < -1000 || json_integer_value(oom) > 1000)
            return FIELD_ERR(err, "process.oomScoreAdj must be an integer from -1000 to 1000");
        p->has_oom_score_adj = true;
        p->oom_score_adj = (int)json_integer_value(oom);
    }
    const char *apparmor = json_string_value(json_object_get(process, "apparmorProfile"));
    p->apparmor_profile = apparmor && *apparmor ? strdup(apparmor) : NULL;
    return p->cwd ? 0 : abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
}

void abx__oci_process_free(abx_oci_process *p)
{
    free(p->additional_gids);
    free_list(p->args);
    free_list(p->env);
    free(p->cwd);
    free(p->rlimits);
    free(p->apparmor_profile);
    memset(p, 0, sizeof *p);
}

/* Mount options: flags they set or clear, propagation, and the rest as data. */
static const struct {
    const char *name;
    bool clear;
    unsigned long flag;
} mount_flags[] = {
    {"ro", false, MS_RDONLY},
    {"rw", true, MS_RDONLY},
    {"nosuid", false, MS_NOSUID},
    {"suid", true, MS_NOSUID},
    {"nodev", false, MS_NODEV},
    {"dev", true, MS_NODEV},
    {"noexec", false, MS_NOEXEC},
    {"exec", true, MS_NOEXEC},
    {"sync", false, MS_SYNCHRONOUS},
    {"async", true, MS_SYNCHRONOUS},
    {"dirsync", false, MS_DIRSYNC},
    {"remount", false, MS_REMOUNT},
    {"mand", false, MS_MANDLOCK},
    {"nomand", true, MS_MANDLOCK},
    {"atime", true, MS_NOATIME},
    {"noatime", false, MS_NOATIME},
    {"diratime", true, MS_NODIRATIME},
    {"nodiratime", false, MS_NODIRATIME},
    {"relatime", false, MS_RELATIME},
    {"norelatime", true, MS_RELATIME},
    {"strictatime", false, MS_STRICTATIME},
    {"nostrictatime", true, MS_STRICTATIME},
    {"bind", false, MS_BIND},
    {"rbind", false, MS_BIND | MS_REC},
};

static const struct {
    const char *name;
    unsigned long flag;
} propagation_flags[] = {
    {"private", MS_PRIVATE},       {"rprivate", MS_PRIVATE | MS_REC},
    {"shared", MS_SHARED},         {"rshared", MS_SHARED | MS_REC},
    {"slave", MS_SLAVE},           {"rslave", MS_SLAVE | MS_REC},
    {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
};

static unsigned long propagation_of(const char *name)
{
    for (size_t i = 0; i < sizeof propagation_flags / sizeof propagation_flags[0]; i++)
        if (strcmp(name, propagation_flags[i].name) == 0)
            return propagation_flags[i].flag;
    return 0;
}

/* Options engines pass that are not the kernel's: ignored, as runc does. */
static bool ignored_option(const char *name)
{
    return strcmp(name, "tmpcopyup") == 0 || strcmp(name, "notmpcopyup") == 0 ||
           strcmp(name, "copy-symlink") == 0 || strncmp(name, "idmap", 5) == 0 ||
           strncmp(name, "ridmap", 6) == 0 || strcmp(name, "z") == 0 || strcmp(name, "Z") == 0;
}

static int mount_parse(const json_t *m, size_t index, abx_oci_mount *out, abx_error **err)
{
    const char *dest = json_string_value(json_object_get(m, "destination"));
    if (!json_is_object(m) || !dest || dest[0] != '/')
        return FIELD_ERR(err, "mounts[%zu].destination must be an absolute path", index);
    const char *type = json_string_value(json_object_get(m, "type"));
    const char *source = json_string_value(json_object_get(m, "source"));
    out->destination = strdup(dest);
    out->type = strdup(type ? type : "");
    out->source = strdup(source ? source : "");
    const json_t *options = json_object_get(m, "options");
    if (options && !json_is_null(options) && (!json_is_array(options) || json_array_size(options) > 256))
        return FIELD_ERR(err, "mounts[%zu].options must be an array of strings", index);
    size_t cap = 1, i;
    const json_t *v;
    json_array_foreach(options, i, v) cap += strlen(json_string_value(v) ? json_string_value(v) : "") + 1;
    out->data = calloc(cap, 1);
    if (!out->destination || !out->type || !out->source || !out->data)
        return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
    json_array_foreach(options, i, v)
    {
        const char *opt = json_string_value(v);
        if (!opt)
            return FIELD_ERR(err, "mounts[%zu].options[%zu] must be a string", index, i);
        bool known = false;
        for (size_t k = 0; !known && k < sizeof mount_flags / sizeof mount_flags[0]; k++)
            if (strcmp(opt, mount_flags[k].name) == 0) {
                known = true;
                if (mount_flags[k].clear)
                    out->flags &= ~mount_flags[k].flag;
                else
                    out->flags |= mount_flags[k].flag;
            }
        unsigned long prop = known ? 0 : propagation_of(opt);
        if (prop)
            out->propagation = prop;
        else if (!known && !ignored_option(opt)) {
            size_t used = strlen(out->data);
            snprintf(out->data + used, cap - used, "%s%s", used ? "," : "", opt);
        }
    }
    out->bind = (out->flags & MS_BIND) || strcmp(out->type, "bind") == 0;
    if (out->bind)
        out->flags |= MS_BIND;
    out->readonly = (out->flags & MS_RDONLY) != 0;
    return 0;
}

static int mounts_parse(const json_t *arr, abx_oci_spec *spec, abx_error **err)
{
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > ABX_OCI_MAX_MOUNTS)
        return FIELD_ERR(err, "mounts must be an array of at most %d mounts", ABX_OCI_MAX_MOUNTS);
    spec->mounts = calloc(json_array_size(arr) + 1, sizeof *spec->mounts);
    if (!spec->mounts)
        return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
    size_t i;
    const json_t *m;
    json_array_foreach(arr, i, m)
    {
        int rc = mount_parse(m, i, &spec->mounts[spec->n_mounts++], err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int hooks_parse(const json_t *hooks, abx_oci_spec *spec, abx_error **err)
{
    static const char *const kinds[ABX_OCI_HOOK_KINDS] = {
        "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"};
    if (!hooks || json_is_null(hooks))
        return 0;
    if (!json_is_object(hooks))
        return FIELD_ERR(err, "hooks must be an object");
    for (int k = 0; k < ABX_OCI_HOOK_KINDS; k++) {
        const json_t *arr = json_object_get(hooks, kinds[k]);
        if (!arr || json_is_null(arr))
            continue;
        if (!json_is_array(arr) || json_array_size(arr) > 256)
            return FIELD_ERR(err, "hooks.%s must be an array of at most 256 hooks", kinds[k]);
        spec->hooks[k] = calloc(json_array_size(arr) + 1, sizeof *spec->hooks[k]);
        if (!spec->hooks[k])
            return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
        size_t i;
        const json_t *h;
        json_array_foreach(arr, i, h)
        {
            abx_oci_hook *hook = &spec->hooks[k][spec->n_hooks[k]++];
            const char *path = json_string_value(json_object_get(h, "path"));
            if (!path || path[0] != '/')
                return FIELD_ERR(err, "hooks.%s[%zu].path must be an absolute path", kinds[k], i);
            hook->path = strdup(path);
            int rc;
            if ((rc = string_list(json_object_get(h, "args"), "hooks[].args", &hook->args, err)) < 0 ||
                (rc = string_list(json_object_get(h, "env"), "hooks[].env", &hook->env, err)) < 0)
                return rc;
            const json_t *timeout = json_object_get(h, "timeout");
            if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) <= 0 ||
                            json_integer_value(timeout) > 86400))
                return FIELD_ERR(err, "hooks.%s[%zu].timeout must be a positive number of seconds", kinds[k],
                                 i);
            hook->timeout_s = (int)json_integer_value(timeout);
        }
    }
    return 0;
}

static const struct {
    const char *name;
    int flag;
} ns_names[ABX_OCI_NS_COUNT] = {
    {"pid", CLONE_NEWPID},       {"network", CLONE_NEWNET},
    {"mount", CLONE_NEWNS},      {"ipc", CLONE_NEWIPC},
    {"uts", CLONE_NEWUTS},       {"user", CLONE_NEWUSER},
    {"cgroup", CLONE_NEWCGROUP}, {"time", 0x80 /* CLONE_NEWTIME */},
};

static int namespaces_parse(const json_t *arr, abx_oci_spec *spec, abx_error **err)
{
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > ABX_OCI_NS_COUNT)
        return FIELD_ERR(err, "linux.namespaces must be an array of at most %d namespaces", ABX_OCI_NS_COUNT);
    size_t i;
    const json_t *ns;
    json_array_foreach(arr, i, ns)
    {
        const char *type = json_string_value(json_object_get(ns, "type"));
        int flag = 0;
        for (size_t k = 0; type && k < ABX_OCI_NS_COUNT; k++)
            if (strcmp(type, ns_names[k].name) == 0)
                flag = ns_names[k].flag;
        if (!flag)
            return FIELD_ERR(err, "linux.namespaces[%zu].type is not a namespace abx-oci knows", i);
        if (abx__oci_spec_namespace(spec, flag))
            return FIELD_ERR(err, "linux.namespaces names '%s' twice", type);
        const char *path = json_string_value(json_object_get(ns, "path"));
        spec->namespaces[spec->n_namespaces++] =
            (abx_oci_namespace){flag, path && *path ? strdup(path) : NULL};
    }
    return 0;
}

const abx_oci_namespace *abx__oci_spec_namespace(const abx_oci_spec *spec, int flag)
{
    for (size_t i = 0; i < spec->n_namespaces; i++)
        if (spec->namespaces[i].flag == flag)
            return &spec->namespaces[i];
    return NULL;
}

static int idmaps_parse(const json_t *arr, const char *field, abx_oci_idmap **out, size_t *n, abx_error **err)
{
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > ABX_OCI_MAX_IDMAPS)
        return FIELD_ERR(err, "%s must be an array of at most %d mappings", field, ABX_OCI_MAX_IDMAPS);
    *out = calloc(json_array_size(arr) + 1, sizeof **out);
    if (!*out)
        return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
    size_t i;
    const json_t *m;
    json_array_foreach(arr, i, m)
    {
        const json_t *c = json_object_get(m, "containerID"), *h = json_object_get(m, "hostID"),
                     *s = json_object_get(m, "size");
        if (!is_uint32(c) || !is_uint32(h) || !is_uint32(s) || json_integer_value(s) == 0)
            return FIELD_ERR(err, "%s[%zu] needs containerID, hostID and a size above 0", field, i);
        (*out)[(*n)++] = (abx_oci_idmap){(uint32_t)json_integer_value(c), (uint32_t)json_integer_value(h),
                                         (uint32_t)json_integer_value(s)};
    }
    return 0;
}

static int devices_parse(const json_t *arr, abx_oci_spec *spec, abx_error **err)
{
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > ABX_OCI_MAX_LIST)
        return FIELD_ERR(err, "linux.devices must be an array");
    spec->devices = calloc(json_array_size(arr) + 1, sizeof *spec->devices);
    if (!spec->devices)
        return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
    size_t i;
    const json_t *d;
    json_array_foreach(arr, i, d)
    {
        const char *path = json_string_value(json_object_get(d, "path"));
        const char *type = json_string_value(json_object_get(d, "type"));
        if (!path || path[0] != '/' || !type || strlen(type) != 1 || !strchr("cbup", type[0]))
            return FIELD_ERR(err, "linux.devices[%zu] needs an absolute path and a type of c, b, u or p", i);
        abx_oci_device *dev = &spec->devices[spec->n_devices++];
        dev->path = strdup(path);
        dev->type = type[0];
        dev->major = json_integer_value(json_object_get(d, "major"));
        dev->minor = json_integer_value(json_object_get(d, "minor"));
        const json_t *mode = json_object_get(d, "fileMode");
        dev->mode = mode ? (unsigned)json_integer_value(mode) & 07777 : 0666;
        dev->uid = (uint32_t)json_integer_value(json_object_get(d, "uid"));
        dev->gid = (uint32_t)json_integer_value(json_object_get(d, "gid"));
        if (!dev->path)
            return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
    }
    return 0;
}

static int sysctl_parse(const json_t *obj, abx_oci_spec *spec, abx_error **err)
{
    if (!obj || json_is_null(obj))
        return 0;
    if (!json_is_object(obj) || json_object_size(obj) > ABX_OCI_MAX_LIST)
        return FIELD_ERR(err, "linux.sysctl must be an object of strings");
    size_t n = json_object_size(obj);
    spec->sysctl_keys = calloc(n + 1, sizeof(char *));
    spec->sysctl_values = calloc(n + 1, sizeof(char *));
    if (!spec->sysctl_keys || !spec->sysctl_values)
        return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (!json_is_string(v) || strstr(key, "..") || strchr(key, '/') != NULL)
            return FIELD_ERR(err, "linux.sysctl.%s must be a string value of a dotted name", key);
        spec->sysctl_keys[spec->n_sysctls] = strdup(key);
        spec->sysctl_values[spec->n_sysctls++] = strdup(json_string_value(v));
    }
    return 0;
}

static int64_t int_or_unset(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : ABX_CGROUP_UNSET;
}

int abx__oci_resources_parse(const json_t *r, abx_cgroup_resources *out, abx_error **err)
{
    abx__cgroup_resources_init(out);
    if (!r || json_is_null(r))
        return 0;
    if (!json_is_object(r))
        return FIELD_ERR(err, "linux.resources must be an object");
    const json_t *mem = json_object_get(r, "memory"), *cpu = json_object_get(r, "cpu"),
                 *pids = json_object_get(r, "pids");
    out->memory_limit = int_or_unset(mem, "limit");
    out->memory_swap = int_or_unset(mem, "swap");
    out->memory_reservation = int_or_unset(mem, "reservation");
    out->cpu_shares = int_or_unset(cpu, "shares");
    out->cpu_quota = int_or_unset(cpu, "quota");
    out->cpu_period = int_or_unset(cpu, "period");
    out->pids_limit = int_or_unset(pids, "limit");
    const char *cpus = json_string_value(json_object_get(cpu, "cpus"));
    const char *mems = json_string_value(json_object_get(cpu, "mems"));
    if ((cpus && strlen(cpus) >= sizeof out->cpuset_cpus) ||
        (mems && strlen(mems) >= sizeof out->cpuset_mems))
        return FIELD_ERR(err, "linux.resources.cpu.cpus and mems must be shorter than 128 characters");
    snprintf(out->cpuset_cpus, sizeof out->cpuset_cpus, "%s", cpus ? cpus : "");
    snprintf(out->cpuset_mems, sizeof out->cpuset_mems, "%s", mems ? mems : "");
    const json_t *devices = json_object_get(r, "devices");
    if (devices && !json_is_null(devices)) {
        if (!json_is_array(devices) || json_array_size(devices) > ABX_CGROUP_MAX_DEVICE_RULES)
            return FIELD_ERR(err, "linux.resources.devices must be an array of at most %d rules",
                             ABX_CGROUP_MAX_DEVICE_RULES);
        size_t i;
        const json_t *d;
        json_array_foreach(devices, i, d)
        {
            abx_cgroup_device_rule *rule = &out->devices[out->n_devices++];
            const char *type = json_string_value(json_object_get(d, "type"));
            const char *access = json_string_value(json_object_get(d, "access"));
            rule->allow = json_is_true(json_object_get(d, "allow"));
            rule->type = type && strlen(type) == 1 && strchr("acb", type[0]) ? type[0] : 'a';
            const json_t *major = json_object_get(d, "major"), *minor = json_object_get(d, "minor");
            rule->major = json_is_integer(major) ? json_integer_value(major) : -1;
            rule->minor = json_is_integer(minor) ? json_integer_value(minor) : -1;
            if (access && (strlen(access) > 3 || strspn(access, "rwm") != strlen(access)))
                return FIELD_ERR(err, "linux.resources.devices[%zu].access must be of r, w and m", i);
            snprintf(rule->access, sizeof rule->access, "%s", access ? access : "rwm");
        }
    }
    return 0;
}

static char *bundle_path(const char *bundle, const char *path)
{
    char *out = NULL;
    if (path[0] == '/')
        return strdup(path);
    return asprintf(&out, "%s/%s", bundle, path) < 0 ? NULL : out;
}

static int linux_parse(const json_t *lx, abx_oci_spec *spec, abx_error **err)
{
    if (!lx || json_is_null(lx))
        return 0;
    if (!json_is_object(lx))
        return FIELD_ERR(err, "linux must be an object");
    int rc;
    if ((rc = namespaces_parse(json_object_get(lx, "namespaces"), spec, err)) < 0 ||
        (rc = idmaps_parse(json_object_get(lx, "uidMappings"), "linux.uidMappings", &spec->uid_maps,
                           &spec->n_uid_maps, err)) < 0 ||
        (rc = idmaps_parse(json_object_get(lx, "gidMappings"), "linux.gidMappings", &spec->gid_maps,
                           &spec->n_gid_maps, err)) < 0 ||
        (rc = devices_parse(json_object_get(lx, "devices"), spec, err)) < 0 ||
        (rc = sysctl_parse(json_object_get(lx, "sysctl"), spec, err)) < 0 ||
        (rc = string_list(json_object_get(lx, "maskedPaths"), "linux.maskedPaths", &spec->masked_paths,
                          err)) < 0 ||
        (rc = string_list(json_object_get(lx, "readonlyPaths"), "linux.readonlyPaths", &spec->readonly_paths,
                          err)) < 0 ||
        (rc = abx__oci_resources_parse(json_object_get(lx, "resources"), &spec->resources, err)) < 0)
        return rc;
    const char *cgroups = json_string_value(json_object_get(lx, "cgroupsPath"));
    spec->cgroups_path = dup_or_null(cgroups && *cgroups ? cgroups : NULL);
    const char *prop = json_string_value(json_object_get(lx, "rootfsPropagation"));
    if (prop && *prop && !(spec->rootfs_propagation = propagation_of(prop)))
        return FIELD_ERR(err, "linux.rootfsPropagation is not a propagation mode");
    const json_t *seccomp = json_object_get(lx, "seccomp");
    if (seccomp && !json_is_null(seccomp)) {
        if (!json_is_object(seccomp))
            return FIELD_ERR(err, "linux.seccomp must be an object");
        spec->seccomp = json_deep_copy(seccomp);
    }
    if (abx__oci_spec_namespace(spec, CLONE_NEWUSER) && !abx__oci_spec_namespace(spec, CLONE_NEWUSER)->path &&
        (spec->n_uid_maps == 0 || spec->n_gid_maps == 0))
        return FIELD_ERR(err, "a new user namespace needs linux.uidMappings and linux.gidMappings");
    return 0;
}

int abx__oci_spec_parse(const json_t *config, const char *bundle, abx_oci_spec *spec, abx_error **err)
{
    memset(spec, 0, sizeof *spec);
    if (!json_is_object(config))
        return FIELD_ERR(err, "the top level must be an object");
    const char *version = json_string_value(json_object_get(config, "ociVersion"));
    if (!version || strncmp(version, "1.", 2) != 0)
        return FIELD_ERR(err, "ociVersion must be a 1.x version");
    spec->oci_version = strdup(version);
    const json_t *root = json_object_get(config, "root");
    const char *root_path = json_string_value(json_object_get(root, "path"));
    if (!root_path || !*root_path)
        return FIELD_ERR(err, "root.path must name the container's root filesystem");
    spec->root_path = bundle_path(bundle, root_path);
    spec->root_readonly = json_is_true(json_object_get(root, "readonly"));
    const char *hostname = json_string_value(json_object_get(config, "hostname"));
    const char *domainname = json_string_value(json_object_get(config, "domainname"));
    if ((hostname && strlen(hostname) > 64) || (domainname && strlen(domainname) > 64))
        return FIELD_ERR(err, "hostname and domainname must be at most 64 characters");
    spec->hostname = dup_or_null(hostname && *hostname ? hostname : NULL);
    spec->domainname = dup_or_null(domainname && *domainname ? domainname : NULL);
    const json_t *annotations = json_object_get(config, "annotations");
    if (annotations && !json_is_null(annotations) && !json_is_object(annotations))
        return FIELD_ERR(err, "annotations must be an object of strings");
    spec->annotations =
        annotations && json_is_object(annotations) ? json_deep_copy(annotations) : json_object();
    int rc;
    if ((rc = abx__oci_process_parse(json_object_get(config, "process"), &spec->process, err)) < 0 ||
        (rc = mounts_parse(json_object_get(config, "mounts"), spec, err)) < 0 ||
        (rc = hooks_parse(json_object_get(config, "hooks"), spec, err)) < 0 ||
        (rc = linux_parse(json_object_get(config, "linux"), spec, err)) < 0)
        return rc;
    if (!spec->root_path || !spec->annotations)
        return abx__error_set(err, ABX_ENOMEM, "config.json: out of memory");
    return 0;
}

void abx__oci_spec_free(abx_oci_spec *spec)
{
    free(spec->oci_version);
    free(spec->root_path);
    abx__oci_process_free(&spec->process);
    free(spec->hostname);
    free(spec->domainname);
    for (size_t i = 0; i < spec->n_mounts; i++) {
        free(spec->mounts[i].destination);
        free(spec->mounts[i].type);
        free(spec->mounts[i].source);
        free(spec->mounts[i].data);
    }
    free(spec->mounts);
    for (int k = 0; k < ABX_OCI_HOOK_KINDS; k++) {
        for (size_t i = 0; i < spec->n_hooks[k]; i++) {
            free(spec->hooks[k][i].path);
            free_list(spec->hooks[k][i].args);
            free_list(spec->hooks[k][i].env);
        }
        free(spec->hooks[k]);
    }
    for (size_t i = 0; i < spec->n_namespaces; i++)
        free(spec->namespaces[i].path);
    free(spec->uid_maps);
    free(spec->gid_maps);
    for (size_t i = 0; i < spec->n_devices; i++)
        free(spec->devices[i].path);
    free(spec->devices);
    for (size_t i = 0; i < spec->n_sysctls; i++) {
        free(spec->sysctl_keys[i]);
        free(spec->sysctl_values[i]);
    }
    free(spec->sysctl_keys);
    free(spec->sysctl_values);
    free_list(spec->masked_paths);
    free_list(spec->readonly_paths);
    free(spec->cgroups_path);
    json_decref(spec->seccomp);
    json_decref(spec->annotations);
    memset(spec, 0, sizeof *spec);
}
