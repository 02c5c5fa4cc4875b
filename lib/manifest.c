/* manifest.c: a provider plugin's abx-provider.toml (issue 10).
 *
 * Owns: reading it with the same fuzzed TOML parser as config.toml
 * (config.c's abx__toml_parse_json) and checking it, key by key:
 *   [provider] id ([a-z0-9][a-z0-9-]{0,62}), name, version, kind (exec |
 *              rest), description, license
 *   [runtime]  command (argv, an array of strings; exec), env (names of
 *              host variables passed through)
 *   [rest]     base_url (http or https; rest), domain
 *   [config.K] secret (bool), description, for each configuration key K
 * An unknown table or key is an error naming it; so is a missing required
 * one. Nothing here runs or installs anything.
 */
#include "manifest.h"
#include "config.h"
#include "error_internal.h"
#include "parse.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool abx__provider_id_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > 63 || !(islower((unsigned char)id[0]) || isdigit((unsigned char)id[0])))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)id[i]) || isdigit((unsigned char)id[i]) || id[i] == '-'))
            return false;
    return true;
}

void abx__manifest_clear(abx_manifest *m)
{
    json_decref(m->command);
    json_decref(m->env);
    json_decref(m->config);
    memset(m, 0, sizeof *m);
}

static int bad(abx_error **err, const char *what, const char *key)
{
    return abx__error_set(err, ABX_ECONFIG, "abx-provider.toml: %s '%.100s'", what, key);
}

/* Every key of table is one of allowed (NULL-terminated); section NULL:
 * the top level, whose keys are tables. */
static int only_keys(json_t *table, const char *section, const char *const *allowed, abx_error **err)
{
    const char *k;
    json_t *v;
    json_object_foreach(table, k, v)
    {
        bool known = false;
        for (size_t i = 0; allowed[i] && !known; i++)
            known = strcmp(k, allowed[i]) == 0;
        if (!known) {
            char full[200];
            snprintf(full, sizeof full, "%s%s%s", section ? section : "", section ? "." : "", k);
            return bad(err, section ? "unknown key" : "unknown table", full);
        }
    }
    return 0;
}

/* An optional string key copied into out (bounded); a non-string is an error. */
static int take_string(json_t *table, const char *section, const char *key, bool required, char *out,
                       size_t len, abx_error **err)
{
    json_t *v = json_object_get(table, key);
    char full[200];
    snprintf(full, sizeof full, "%s.%s", section, key);
    if (!v)
        return required ? bad(err, "missing key", full) : 0;
    if (!json_is_string(v) || json_string_length(v) >= len)
        return bad(err, "expected a string (shorter) for", full);
    snprintf(out, len, "%s", json_string_value(v));
    return 0;
}

static int check_provider(json_t *t, abx_manifest *m, abx_error **err)
{
    static const char *const keys[] = {"id", "name", "version", "kind", "description", "license", NULL};
    int rc;
    if (!json_is_object(t))
        return bad(err, "missing table", "provider");
    if ((rc = only_keys(t, "provider", keys, err)) < 0 ||
        (rc = take_string(t, "provider", "id", true, m->id, sizeof m->id, err)) < 0 ||
        (rc = take_string(t, "provider", "name", false, m->name, sizeof m->name, err)) < 0 ||
        (rc = take_string(t, "provider", "version", false, m->version, sizeof m->version, err)) < 0 ||
        (rc = take_string(t, "provider", "kind", true, m->kind, sizeof m->kind, err)) < 0 ||
        (rc = take_string(t, "provider", "description", false, m->description, sizeof m->description, err)) <
            0 ||
        (rc = take_string(t, "provider", "license", false, m->license, sizeof m->license, err)) < 0)
        return rc;
    if (!abx__provider_id_valid(m->id))
        return bad(err, "provider.id must match [a-z0-9][a-z0-9-]{0,62}, not", m->id);
    if (strcmp(m->kind, "exec") != 0 && strcmp(m->kind, "rest") != 0)
        return bad(err, "provider.kind must be exec or rest, not", m->kind);
    return 0;
}

static bool strings_only(json_t *arr)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (!json_is_string(v)) return false;
    return true;
}

static int check_runtime(json_t *t, abx_manifest *m, abx_error **err)
{
    static const char *const keys[] = {"command", "env", NULL};
    if (!t)
        return strcmp(m->kind, "exec") == 0 ? bad(err, "missing table", "runtime") : 0;
    int rc = json_is_object(t) ? only_keys(t, "runtime", keys, err) : bad(err, "expected a table", "runtime");
    if (rc < 0)
        return rc;
    json_t *cmd = json_object_get(t, "command"), *env = json_object_get(t, "env");
    if (strcmp(m->kind, "exec") == 0 &&
        (!json_is_array(cmd) || json_array_size(cmd) == 0 || !strings_only(cmd)))
        return bad(err, "expected a non-empty array of strings for", "runtime.command");
    if (env && (!json_is_array(env) || !strings_only(env)))
        return bad(err, "expected an array of strings for", "runtime.env");
    size_t i;
    json_t *v;
    json_array_foreach(env, i, v)
    {
        const char *name = json_string_value(v);
        if (!abx__env_name_valid(name, strlen(name)))
            return bad(err, "runtime.env: not an environment variable name:", name);
    }
    m->command = cmd ? json_incref(cmd) : NULL;
    m->env = env ? json_incref(env) : json_array();
    return 0;
}

static int check_rest(json_t *t, abx_manifest *m, abx_error **err)
{
    static const char *const keys[] = {"base_url", "domain", NULL};
    if (!t)
        return strcmp(m->kind, "rest") == 0 ? bad(err, "missing table", "rest") : 0;
    int rc = json_is_object(t) ? only_keys(t, "rest", keys, err) : bad(err, "expected a table", "rest");
    if (rc < 0 ||
        (rc = take_string(t, "rest", "base_url", strcmp(m->kind, "rest") == 0, m->base_url,
                          sizeof m->base_url, err)) < 0 ||
        (rc = take_string(t, "rest", "domain", false, m->domain, sizeof m->domain, err)) < 0)
        return rc;
    if (m->base_url[0] && strncmp(m->base_url, "http://", 7) != 0 && strncmp(m->base_url, "https://", 8) != 0)
        return bad(err, "rest.base_url must be an http(s) URL, not", m->base_url);
    return 0;
}

static int check_config(json_t *t, abx_manifest *m, abx_error **err)
{
    static const char *const keys[] = {"secret", "description", NULL};
    m->config = json_object();
    if (!t)
        return 0;
    if (!json_is_object(t))
        return bad(err, "expected a table", "config");
    const char *k;
    json_t *v;
    json_object_foreach(t, k, v)
    {
        char section[160];
        snprintf(section, sizeof section, "config.%s", k);
        if (!json_is_object(v))
            return bad(err, "expected a table [config.KEY] for", section);
        int rc = only_keys(v, section, keys, err);
        if (rc < 0)
            return rc;
        json_t *secret = json_object_get(v, "secret"), *desc = json_object_get(v, "description");
        if ((secret && !json_is_boolean(secret)) || (desc && !json_is_string(desc)))
            return bad(err, "secret must be true or false and description a string in", section);
        json_object_set_new(m->config, k,
                            json_pack("{s:b, s:s}", "secret", json_is_true(secret), "description",
                                      desc ? json_string_value(desc) : ""));
    }
    return 0;
}

int abx__manifest_parse(const char *text, abx_manifest *m, abx_error **err)
{
    memset(m, 0, sizeof *m);
    json_t *doc = NULL;
    int line = 0;
    if (abx__toml_parse_json(text, &doc, &line) < 0)
        return abx__error_set(err, ABX_ECONFIG,
                              "abx-provider.toml: line %d is not in the TOML subset abx reads", line);
    static const char *const tables[] = {"provider", "runtime", "rest", "config", NULL};
    int rc = only_keys(doc, NULL, tables, err);
    if (rc == 0)
        rc = check_provider(json_object_get(doc, "provider"), m, err);
    if (rc == 0)
        rc = check_runtime(json_object_get(doc, "runtime"), m, err);
    if (rc == 0)
        rc = check_rest(json_object_get(doc, "rest"), m, err);
    if (rc == 0)
        rc = check_config(json_object_get(doc, "config"), m, err);
    json_decref(doc);
    if (rc < 0)
        abx__manifest_clear(m);
    return rc;
}
