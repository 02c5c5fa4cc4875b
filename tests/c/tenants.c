/* tenants.c: the tenant matrix through libabx directly, with real
 * sandboxes of the local provider (run by tests/integration/
 * library.test.mjs as root, in a private ABX_HOME). Two tenants' clients
 * of one root client, a client of both, and the administrator's: every
 * call a tenant makes on the other's sandbox fails exactly as on an id
 * that does not exist (the same code, the same message), and touches
 * nothing. Built on abx.h alone, as any C user of the library.
 *
 * Prints one line per check ("ok ..." or "FAIL ...") and exits 1 when a
 * check failed.
 */
#include <abx/abx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "ok" : "FAIL", what);
    failures += !ok;
}

/* The code and message an error leaves (its message copied into msg). */
static int outcome(int rc, abx_error *err, char *msg, size_t len)
{
    snprintf(msg, len, "%s", err ? abx_error_message(err) : "");
    abx_error_free(err);
    return rc;
}

/* Whether op on id answers exactly as on the unknown id. */
typedef int (*op_fn)(abx_client *c, const char *id, abx_error **err);

static int op_info(abx_client *c, const char *id, abx_error **err)
{
    abx_sandbox_info info;
    int rc = abx_get_info_by_id(c, id, &info, err);
    if (rc == 0)
        abx_sandbox_info_clear(&info);
    return rc;
}
static int op_timeout(abx_client *c, const char *id, abx_error **err)
{
    return abx_set_timeout_by_id(c, id, 86400, err);
}
static int op_kill(abx_client *c, const char *id, abx_error **err)
{
    return abx_kill_by_id(c, id, err);
}
static int op_connect(abx_client *c, const char *id, abx_error **err)
{
    abx_sandbox *s = NULL;
    int rc = abx_sandbox_connect(c, id, &s, err);
    abx_sandbox_free(s);
    return rc;
}

static void same_as_unknown(abx_client *c, const char *id, op_fn op, const char *name)
{
    char a[600], b[600], what[900];
    abx_error *ea = NULL, *eb = NULL;
    int ra = op(c, id, &ea), ca = abx_error_code(ea);
    ra = outcome(ra, ea, a, sizeof a);
    int rb = op(c, "local:i00000000000000000000", &eb), cb = abx_error_code(eb);
    rb = outcome(rb, eb, b, sizeof b);
    snprintf(what, sizeof what, "%s on another tenant's sandbox answers as an unknown id (%d/%d '%s')", name,
             ca, cb, a);
    check(ra < 0 && ra == rb && ca == ABX_ENOTFOUND && ca == cb && strcmp(a, b) == 0, what);
}

/* How many of the listed sandboxes have id. */
static int listed(abx_client *c, const char *id)
{
    abx_sandbox_info *items = NULL;
    size_t n = 0;
    int found = 0;
    if (abx_list(c, NULL, 100, 0, &items, &n, NULL) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        found += strcmp(items[i].sandbox_id, id) == 0;
    abx_sandbox_info_list_free(items, n);
    return found;
}

int main(void)
{
    abx_client *root = NULL, *a = NULL, *b = NULL, *both = NULL;
    abx_error *err = NULL;
    char ta[34], tb[34];
    abx_tenant_from_secret("tenant-a-secret", ta);
    abx_tenant_from_secret("tenant-b-secret", tb);
    const char *pair[] = {ta, tb, NULL};
    if (abx_client_new(NULL, &root, &err) < 0 || abx_client_for_tenant(root, ta, &a, &err) < 0 ||
        abx_client_for_tenant(root, tb, &b, &err) < 0 ||
        abx_client_for_tenants(root, pair, &both, &err) < 0) {
        fprintf(stderr, "clients: %s\n", abx_error_message(err));
        return 2;
    }
    check(abx_client_tenant(a) && strcmp(abx_client_tenant(a), ta) == 0 && !abx_client_tenant(root),
          "a tenant's client says whose it is; the root says none");
    check(!abx_tenant_valid("") && !abx_tenant_valid("a b") && abx_tenant_valid("uid:1000"),
          "tenant strings");
    abx_sandbox *sa = NULL;
    abx_create_options o = {.timeout_s = 120, .notes_json = "{\"front\":\"test\"}"};
    if (abx_sandbox_create(a, &o, &sa, &err) < 0) {
        fprintf(stderr, "create: %s\n", abx_error_message(err));
        return 2;
    }
    const char *id = abx_sandbox_id(sa);
    check(abx_sandbox_tenant(sa) && strcmp(abx_sandbox_tenant(sa), ta) == 0,
          "the sandbox is recorded for its tenant");
    char *notes = NULL;
    check(abx_sandbox_notes(sa, &notes, NULL) == 0 && notes && strstr(notes, "\"front\""),
          "the notes come back");
    abx_free(notes);

    same_as_unknown(b, id, op_connect, "connect");
    same_as_unknown(b, id, op_info, "info");
    same_as_unknown(b, id, op_timeout, "set_timeout");
    same_as_unknown(b, id, op_kill, "kill");
    check(listed(b, id) == 0, "the other tenant does not list it");
    check(listed(a, id) == 1, "its tenant lists it");
    check(listed(root, id) == 1, "the administrator lists it");
    check(listed(both, id) == 1, "a client of both tenants lists it");
    abx_sandbox *s2 = NULL;
    check(abx_sandbox_create(both, NULL, &s2, NULL) == -ABX_EINVAL,
          "a client of several tenants creates nothing");

    /* the tenant's handle still works, and nothing of the above touched it */
    abx_exec_options eo = {.keep_output = true};
    abx_exec_result r;
    int rc = abx_sandbox_exec(sa, "echo still here", &eo, &r, &err);
    check(rc == 0 && r.stdout_data && strcmp(r.stdout_data, "still here\n") == 0,
          "the sandbox was not touched");
    if (rc == 0)
        abx_exec_result_clear(&r);
    abx_sandbox_info info;
    rc = abx_sandbox_get_info(sa, &info, NULL);
    check(rc == 0 && info.end_at - info.started_at <= 121, "its lifetime was not extended");
    check(rc == 0 && info.metadata_json && !strstr(info.metadata_json, "tenant"),
          "its metadata shows no tenant");
    if (rc == 0)
        abx_sandbox_info_clear(&info);

    /* the data plane's endpoint: for its tenant; none for the other */
    abx_sandbox *sb = NULL;
    abx_endpoint ep;
    check(abx_sandbox_endpoint(sa, ABX_PORT_ENVD, &ep, NULL) == 0 && ep.unix_socket[0] && ep.token[0] &&
              !strstr(ep.unix_socket, id + 6),
          "the envd endpoint is a socket whose name says nothing of the id");
    check(abx_sandbox_connect(b, id, &sb, NULL) == -ABX_ENOTFOUND && !sb, "the other tenant gets no handle");

    rc = abx_sandbox_kill(sa, &err);
    check(rc == 0, "its tenant kills it");
    abx_sandbox_free(sa);
    check(listed(root, id) == 0, "it is gone");
    abx_client_free(a);
    abx_client_free(b);
    abx_client_free(both);
    abx_client_free(root);
    return failures ? 1 : 0;
}
