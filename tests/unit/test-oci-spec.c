/* test-oci-spec.c: OCI bundle configs as data (runtime/oci_spec.c): a
 * runc-made config read whole, mount options to flags and data, names of
 * signals and capabilities, the cgroup resources, and what is refused
 * (naming the field), including the bounds on every list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "abx/abx.h"
#include "oci_container.h"
#include "oci_spec.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        fail_msg("bad test JSON: %s", e.text);
    return j;
}

static json_t *corpus(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus-oci-spec/%s", ABX_SOURCE_ROOT, name);
    json_t *j = json_load_file(path, 0, NULL);
    assert_non_null(j);
    return j;
}

static void test_runc_spec(void **state)
{
    (void)state;
    json_t *config = corpus("runc-spec.json");
    abx_oci_spec spec;
    assert_int_equal(abx__oci_spec_parse(config, "/b", &spec, NULL), 0);
    assert_non_null(spec.process.args);
    assert_true(abx__oci_spec_namespace(&spec, CLONE_NEWPID) != NULL);
    assert_true(abx__oci_spec_namespace(&spec, CLONE_NEWNS) != NULL);
    assert_null(abx__oci_spec_namespace(&spec, CLONE_NEWUSER));
    assert_true(spec.process.no_new_privileges);
    assert_true(spec.process.caps[ABX_OCI_CAP_BOUNDING] & (1ull << 5)); /* CAP_KILL */
    assert_int_equal(spec.process.n_rlimits, 1);
    assert_int_equal(spec.process.rlimits[0].resource, RLIMIT_NOFILE);
    assert_string_equal(spec.hostname, "runc");
    assert_true(spec.n_mounts >= 6);
    assert_non_null(spec.masked_paths);
    assert_int_equal(spec.resources.n_devices, 1);
    assert_false(spec.resources.devices[0].allow);
    abx__oci_spec_free(&spec);
    json_decref(config);
}

static void test_podman_config(void **state)
{
    (void)state;
    json_t *config = corpus("podman.json");
    abx_oci_spec spec;
    abx_error *err = NULL;
    assert_int_equal(abx__oci_spec_parse(config, "/b", &spec, &err), 0);
    assert_non_null(spec.seccomp);
    scmp_filter_ctx filter = abx__oci_seccomp_build(spec.seccomp, &err);
    assert_non_null(filter); /* podman's whole default profile builds */
    seccomp_release(filter);
    assert_true(spec.resources.memory_limit == 64ll << 20);
    assert_true(spec.resources.pids_limit == 20);
    assert_string_equal(json_string_value(json_object_get(spec.annotations, "run.abx.profile")), "sandbox");
    abx__oci_spec_free(&spec);
    json_decref(config);
}

static void test_mount_options(void **state)
{
    (void)state;
    json_t *config =
        load("{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"]},"
             "\"mounts\":[{\"destination\":\"/v\",\"type\":\"bind\",\"source\":\"data\","
             "\"options\":[\"rbind\",\"ro\",\"nosuid\",\"rprivate\",\"tmpcopyup\"]},"
             "{\"destination\":\"/t\",\"type\":\"tmpfs\",\"source\":\"tmpfs\","
             "\"options\":[\"nodev\",\"mode=1777\",\"size=65536k\",\"rw\"]}]}");
    abx_oci_spec spec;
    assert_int_equal(abx__oci_spec_parse(config, "/b", &spec, NULL), 0);
    assert_string_equal(spec.root_path, "/b/rootfs");
    assert_string_equal(spec.process.cwd, "/");
    const abx_oci_mount *v = &spec.mounts[0], *t = &spec.mounts[1];
    assert_true(v->bind);
    assert_true(v->readonly);
    assert_int_equal(v->flags & (MS_BIND | MS_REC | MS_RDONLY | MS_NOSUID),
                     MS_BIND | MS_REC | MS_RDONLY | MS_NOSUID);
    assert_int_equal(v->propagation, MS_PRIVATE | MS_REC);
    assert_string_equal(v->data, ""); /* tmpcopyup is the engine's, not the kernel's */
    assert_false(t->bind);
    assert_int_equal(t->flags & MS_RDONLY, 0);
    assert_int_equal(t->flags & MS_NODEV, MS_NODEV);
    assert_string_equal(t->data, "mode=1777,size=65536k");
    abx__oci_spec_free(&spec);
    json_decref(config);
}

static void test_names(void **state)
{
    (void)state;
    assert_int_equal(abx__oci_signal_parse("SIGKILL"), SIGKILL);
    assert_int_equal(abx__oci_signal_parse("term"), SIGTERM);
    assert_int_equal(abx__oci_signal_parse("9"), 9);
    assert_int_equal(abx__oci_signal_parse("SIGRTMIN+2"), SIGRTMIN + 2);
    assert_int_equal(abx__oci_signal_parse("0"), -1);
    assert_int_equal(abx__oci_signal_parse("65"), -1);
    assert_int_equal(abx__oci_signal_parse("SIGNOPE"), -1);
    assert_int_equal(abx__oci_signal_parse(""), -1);
    assert_int_equal(abx__oci_cap_parse("CAP_SYS_ADMIN"), 21);
    assert_int_equal(abx__oci_cap_parse("net_raw"), 13);
    assert_int_equal(abx__oci_cap_parse("CAP_NOPE"), -1);
}

static void test_resources(void **state)
{
    (void)state;
    json_t *r =
        load("{\"memory\":{\"limit\":1048576,\"swap\":-1},\"cpu\":{\"shares\":512,\"quota\":50000,"
             "\"period\":100000,\"cpus\":\"0\"},\"pids\":{\"limit\":64},"
             "\"devices\":[{\"allow\":false,\"access\":\"rwm\"},{\"allow\":true,\"type\":\"c\",\"major\":1,"
             "\"minor\":3,\"access\":\"rw\"}]}");
    abx_cgroup_resources res;
    assert_int_equal(abx__oci_resources_parse(r, &res, NULL), 0);
    assert_true(res.memory_limit == 1048576);
    assert_true(res.memory_swap == -1);
    assert_true(res.memory_reservation == ABX_CGROUP_UNSET);
    assert_true(res.cpu_shares == 512 && res.cpu_quota == 50000 && res.cpu_period == 100000);
    assert_string_equal(res.cpuset_cpus, "0");
    assert_true(res.pids_limit == 64);
    assert_int_equal(res.n_devices, 2);
    assert_int_equal(res.devices[0].type, 'a');
    assert_true(res.devices[1].allow && res.devices[1].major == 1 && res.devices[1].minor == 3);
    assert_string_equal(res.devices[1].access, "rw");
    json_decref(r);
}

/* Each config is refused, and the message names the field. */
static void test_refusals(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"[]", "top level"},
        {"{\"ociVersion\":\"2.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"]}}", "ociVersion"},
        {"{\"ociVersion\":\"1.0\",\"process\":{\"args\":[\"x\"]}}", "root.path"},
        {"{\"ociVersion\":\"1.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[]}}", "process.args"},
        {"{\"ociVersion\":\"1.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"rel\"}}",
         "process.cwd"},
        {"{\"ociVersion\":\"1.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"user\":{\"uid\":-"
         "1}}}",
         "process.user"},
        {"{\"ociVersion\":\"1.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"]},\"mounts\":[{"
         "\"destination\":"
         "\"rel\"}]}",
         "mounts[0].destination"},
        {"{\"ociVersion\":\"1.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"]},\"linux\":{"
         "\"namespaces\":["
         "{\"type\":\"pid\"},{\"type\":\"pid\"}]}}",
         "twice"},
        {"{\"ociVersion\":\"1.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"]},\"linux\":{"
         "\"namespaces\":["
         "{\"type\":\"user\"}]}}",
         "uidMappings"},
        {"{\"ociVersion\":\"1.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"]},\"linux\":{"
         "\"sysctl\":{\"../"
         "x\":\"1\"}}}",
         "linux.sysctl"},
        {"{\"ociVersion\":\"1.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"]},\"hooks\":{"
         "\"prestart\":[{"
         "\"path\":\"rel\"}]}}",
         "hooks.prestart[0].path"},
        {"{\"ociVersion\":\"1.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"rlimits\":[{"
         "\"type\":"
         "\"RLIMIT_NOPE\",\"soft\":1,\"hard\":1}]}}",
         "process.rlimits[0]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *config = load(cases[i][0]);
        abx_oci_spec spec;
        abx_error *err = NULL;
        assert_int_equal(abx__oci_spec_parse(config, "/b", &spec, &err), -ABX_EINVAL);
        assert_non_null(strstr(abx_error_message(err), cases[i][1]));
        abx_error_free(err);
        abx__oci_spec_free(&spec);
        json_decref(config);
    }
}

/* A list past its bound is refused, not cut. */
static void test_bounds(void **state)
{
    (void)state;
    json_t *config =
        load("{\"ociVersion\":\"1.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"]}}");
    json_t *mounts = json_array();
    for (int i = 0; i <= ABX_OCI_MAX_MOUNTS; i++)
        json_array_append_new(mounts, json_pack("{s:s}", "destination", "/m"));
    json_object_set_new(config, "mounts", mounts);
    abx_oci_spec spec;
    abx_error *err = NULL;
    assert_int_equal(abx__oci_spec_parse(config, "/b", &spec, &err), -ABX_EINVAL);
    assert_non_null(strstr(abx_error_message(err), "at most"));
    abx_error_free(err);
    abx__oci_spec_free(&spec);
    json_decref(config);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runc_spec),     cmocka_unit_test(test_podman_config),
        cmocka_unit_test(test_mount_options), cmocka_unit_test(test_names),
        cmocka_unit_test(test_resources),     cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
