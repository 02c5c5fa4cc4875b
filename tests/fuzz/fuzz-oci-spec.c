/* fuzz-oci-spec.c: OCI bundle configs (config.json) read by
 * runtime/oci_spec.c, and their seccomp profiles built by
 * runtime/oci_seccomp.c, from any bytes. Properties:
 *   - a parse either fails with a message, or gives a spec whose lists are
 *     within their bounds (ABX_OCI_MAX_*), an absolute root path under the
 *     bundle, process args with a program and an absolute cwd;
 *   - every mount has an absolute destination; every namespace is one
 *     abx-oci knows, at most once;
 *   - a seccomp profile is built (and released) or refused, never loaded.
 * Nothing is leaked on either path (LeakSanitizer in the ASan build).
 */
#include "oci_container.h"
#include "oci_spec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz-oci-spec: property broken: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *config = json_loadb((const char *)data, size, 0, NULL);
    if (!config)
        return 0;
    abx_oci_spec spec;
    abx_error *err = NULL;
    int rc = abx__oci_spec_parse(config, "/bundle", &spec, &err);
    if (rc < 0) {
        check(err && abx_error_message(err)[0], "a refusal says why");
    } else {
        check(spec.root_path && spec.root_path[0] == '/', "the root is absolute");
        check(spec.process.args && spec.process.args[0], "the process names a program");
        check(spec.process.cwd && spec.process.cwd[0] == '/', "the cwd is absolute");
        check(spec.n_mounts <= ABX_OCI_MAX_MOUNTS, "mounts within their bound");
        for (size_t i = 0; i < spec.n_mounts; i++)
            check(spec.mounts[i].destination[0] == '/', "mount destinations are absolute");
        check(spec.n_namespaces <= ABX_OCI_NS_COUNT, "namespaces within their bound");
        for (size_t i = 0; i < spec.n_namespaces; i++)
            for (size_t j = i + 1; j < spec.n_namespaces; j++)
                check(spec.namespaces[i].flag != spec.namespaces[j].flag, "each namespace once");
        check(spec.n_uid_maps <= ABX_OCI_MAX_IDMAPS && spec.n_gid_maps <= ABX_OCI_MAX_IDMAPS,
              "id maps bounded");
        check(spec.resources.n_devices <= ABX_CGROUP_MAX_DEVICE_RULES, "device rules bounded");
        if (spec.seccomp) {
            abx_error *serr = NULL;
            scmp_filter_ctx filter = abx__oci_seccomp_build(spec.seccomp, &serr);
            check(filter || serr, "a profile is built or refused with a reason");
            if (filter)
                seccomp_release(filter);
            abx_error_free(serr);
        }
    }
    abx_error_free(err);
    abx__oci_spec_free(&spec);
    json_decref(config);
    return 0;
}
