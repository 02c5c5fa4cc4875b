/* oci_seccomp.c: an OCI config's seccomp profile as a libseccomp filter.
 *
 * Owns the translation of linux.seccomp (defaultAction, architectures,
 * syscalls with their actions, errno values and argument comparisons) to
 * a filter that is built here, before any container process exists, and
 * loaded by the container's init last. abx's own deny list
 * (seccomp_policy.c) is a second filter loaded beside it under the sandbox
 * profile: the kernel applies both, the stricter answer wins.
 */
#include "oci_container.h"
#include "error_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int action_parse(const char *name, const json_t *errno_ret, uint32_t *out)
{
    int e = json_is_integer(errno_ret) ? (int)json_integer_value(errno_ret) : EPERM;
    if (!name)
        return -1;
    if (strcmp(name, "SCMP_ACT_ALLOW") == 0)
        *out = SCMP_ACT_ALLOW;
    else if (strcmp(name, "SCMP_ACT_ERRNO") == 0)
        *out = SCMP_ACT_ERRNO((uint16_t)e);
    else if (strcmp(name, "SCMP_ACT_KILL") == 0 || strcmp(name, "SCMP_ACT_KILL_THREAD") == 0)
        *out = SCMP_ACT_KILL;
    else if (strcmp(name, "SCMP_ACT_KILL_PROCESS") == 0)
        *out = SCMP_ACT_KILL_PROCESS;
    else if (strcmp(name, "SCMP_ACT_TRAP") == 0)
        *out = SCMP_ACT_TRAP;
    else if (strcmp(name, "SCMP_ACT_TRACE") == 0)
        *out = SCMP_ACT_TRACE((uint16_t)e);
    else if (strcmp(name, "SCMP_ACT_LOG") == 0)
        *out = SCMP_ACT_LOG;
    else
        return -1;
    return 0;
}

static const struct {
    const char *name;
    enum scmp_compare op;
} operators[] = {
    {"SCMP_CMP_NE", SCMP_CMP_NE},
    {"SCMP_CMP_LT", SCMP_CMP_LT},
    {"SCMP_CMP_LE", SCMP_CMP_LE},
    {"SCMP_CMP_EQ", SCMP_CMP_EQ},
    {"SCMP_CMP_GE", SCMP_CMP_GE},
    {"SCMP_CMP_GT", SCMP_CMP_GT},
    {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
};

static int args_parse(const json_t *args, struct scmp_arg_cmp *out, unsigned *n, bool *repeated,
                      abx_error **err)
{
    *n = 0;
    *repeated = false;
    unsigned seen = 0;
    size_t i;
    const json_t *a;
    if (json_array_size(args) > 6)
        return abx__error_set(err, ABX_EINVAL,
                              "config.json: linux.seccomp: a rule compares at most 6 arguments");
    json_array_foreach(args, i, a)
    {
        const json_t *index = json_object_get(a, "index");
        const char *op = json_string_value(json_object_get(a, "op"));
        int found = -1;
        for (size_t k = 0; op && k < sizeof operators / sizeof operators[0]; k++)
            if (strcmp(op, operators[k].name) == 0)
                found = (int)k;
        if (!json_is_integer(index) || json_integer_value(index) < 0 || json_integer_value(index) > 5 ||
            found < 0)
            return abx__error_set(
                err, ABX_EINVAL, "config.json: linux.seccomp: an argument needs an index 0-5 and a known op");
        unsigned idx = (unsigned)json_integer_value(index);
        *repeated |= (seen & (1u << idx)) != 0;
        seen |= 1u << idx;
        out[(*n)++] = (struct scmp_arg_cmp){idx, operators[found].op,
                                            (scmp_datum_t)json_integer_value(json_object_get(a, "value")),
                                            (scmp_datum_t)json_integer_value(json_object_get(a, "valueTwo"))};
    }
    return 0;
}

static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, const struct scmp_arg_cmp *args, unsigned n,
                    bool repeated)
{
    if (!repeated)
        return seccomp_rule_add_array(ctx, action, nr, n, args);
    /* libseccomp refuses two comparisons of one argument in a rule: one rule each (runc does the same) */
    for (unsigned i = 0; i < n; i++) {
        int rc = seccomp_rule_add_array(ctx, action, nr, 1, &args[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int arches_add(scmp_filter_ctx ctx, const json_t *arches, abx_error **err)
{
    size_t i;
    const json_t *a;
    json_array_foreach(arches, i, a)
    {
        const char *name = json_string_value(a);
        if (!name || strncmp(name, "SCMP_ARCH_", 10) != 0)
            return abx__error_set(err, ABX_EINVAL,
                                  "config.json: linux.seccomp.architectures[%zu] is not an arch", i);
        char lower[32];
        size_t k = 0;
        for (const char *p = name + 10; *p && k + 1 < sizeof lower; p++)
            lower[k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        lower[k] = '\0';
        uint32_t arch = seccomp_arch_resolve_name(lower);
        if (arch == 0)
            continue; /* an arch this libseccomp does not know cannot run here either */
        int rc = seccomp_arch_add(ctx, arch);
        if (rc < 0 && rc != -EEXIST)
            return abx__error_set(err, ABX_EINVAL, "config.json: linux.seccomp: arch %s: %s", name,
                                  strerror(-rc));
    }
    return 0;
}

scmp_filter_ctx abx__oci_seccomp_build(const json_t *profile, abx_error **err)
{
    uint32_t def;
    if (action_parse(json_string_value(json_object_get(profile, "defaultAction")),
                     json_object_get(profile, "defaultErrnoRet"), &def) < 0) {
        abx__error_set(err, ABX_EINVAL,
                       "config.json: linux.seccomp.defaultAction is not an action abx-oci knows");
        return NULL;
    }
    scmp_filter_ctx ctx = seccomp_init(def);
    if (!ctx) {
        abx__error_set(err, ABX_EHOSTSUPPORT, "seccomp: cannot make a filter");
        return NULL;
    }
    /* no_new_privs is the config's to set (noNewPrivileges), not libseccomp's */
    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
    if (arches_add(ctx, json_object_get(profile, "architectures"), err) < 0)
        goto fail;
    const json_t *syscalls = json_object_get(profile, "syscalls");
    if (json_array_size(syscalls) > ABX_OCI_MAX_LIST) {
        abx__error_set(err, ABX_EINVAL, "config.json: linux.seccomp.syscalls has more than %d rules",
                       ABX_OCI_MAX_LIST);
        goto fail;
    }
    size_t i;
    const json_t *rule;
    json_array_foreach(syscalls, i, rule)
    {
        uint32_t action;
        if (action_parse(json_string_value(json_object_get(rule, "action")),
                         json_object_get(rule, "errnoRet"), &action) < 0) {
            abx__error_set(err, ABX_EINVAL, "config.json: linux.seccomp.syscalls[%zu].action is not known",
                           i);
            goto fail;
        }
        struct scmp_arg_cmp args[6];
        unsigned n;
        bool repeated;
        if (args_parse(json_object_get(rule, "args"), args, &n, &repeated, err) < 0)
            goto fail;
        if (action == def)
            continue;
        size_t k;
        const json_t *name;
        json_array_foreach(json_object_get(rule, "names"), k, name)
        {
            int nr = json_string_value(name) ? seccomp_syscall_resolve_name(json_string_value(name))
                                             : __NR_SCMP_ERROR;
            if (nr == __NR_SCMP_ERROR)
                continue; /* a call this kernel's table does not have */
            int rc = add_rule(ctx, action, nr, args, n, repeated);
            if (rc < 0 && rc != -EEXIST) {
                abx__error_set(err, ABX_EINVAL, "config.json: linux.seccomp: rule for %s: %s",
                               json_string_value(name), strerror(-rc));
                goto fail;
            }
        }
    }
    return ctx;
fail:
    seccomp_release(ctx);
    return NULL;
}
