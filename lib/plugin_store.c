/* plugin_store.c: installed provider plugins (issue 10) under $ABX_HOME.
 *
 * Owns: where they live ($ABX_HOME/providers/<id>/: a copy, or a symlink
 * for --link), their data directories ($ABX_HOME/provider-data/<id>/,
 * which survive reinstalls), the index ($ABX_HOME/provider-index.json,
 * 0600, outside every plugin's directory: id -> kind, version, source,
 * linked, digest), and the digest: SHA-256 (OpenSSL) over the sorted
 * relative paths of everything in the plugin's directory, each with its
 * mode and its contents (a symlink's target). Checked before every start:
 * a changed, added or removed file, or a changed mode, is E8011. An exec
 * plugin runs from a private copy ($ABX_HOME/plugin-runs/<id>.<pid>.X,
 * 0700) made in the pass that computes the digest: what runs is what was
 * verified, whatever changes in the installed directory meanwhile.
 */
#include "plugin_store.h"
#include "config.h"
#include "digest.h"
#include "manifest.h"
#include "error_internal.h"
#include "sysutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILES 10000
#define MAX_DEPTH 32

int abx__plugin_path(const char *what, const char *id, char *out, size_t len, abx_error **err)
{
    char home[512];
    if (abx__home(home, sizeof home) < 0)
        return abx__error_set(err, ABX_ECONFIG, "neither ABX_HOME nor HOME is set");
    int n = id ? snprintf(out, len, "%s/%s/%s", home, what, id) : snprintf(out, len, "%s/%s", home, what);
    return n > 0 && (size_t)n < len ? 0 : abx__error_set(err, ABX_ECONFIG, "$ABX_HOME is too long");
}

/* ---- the digest ------------------------------------------------------------- */

int abx__plugin_digest(const char *dir, char hex[65], abx_error **err)
{
    const abx_tree_digest_rules rules = {.max_entries = MAX_FILES, .max_depth = MAX_DEPTH, .owners = false};
    return abx__digest_tree(dir, &rules, hex) < 0
               ? abx__error_set(
                     err, ABX_EIO,
                     "the plugin directory cannot be read whole (more than %d files, a device node, "
                     "or an unreadable file)",
                     MAX_FILES)
               : 0;
}

/* ---- the index ---------------------------------------------------------------- */

int abx__plugin_index_load(json_t **index, abx_error **err)
{
    char path[640];
    int rc = abx__plugin_path("provider-index.json", NULL, path, sizeof path, err);
    if (rc < 0)
        return rc;
    json_error_t je;
    *index = json_load_file(path, 0, &je);
    if (!*index && access(path, F_OK) == 0)
        return abx__error_set(err, ABX_ECONFIG, "%s is not valid JSON (line %d)", path, je.line);
    if (!*index)
        *index = json_object();
    if (!json_is_object(*index)) {
        json_decref(*index);
        *index = NULL;
        return abx__error_set(err, ABX_ECONFIG, "%s is not a JSON object", path);
    }
    return 0;
}

int abx__plugin_index_save(json_t *index, abx_error **err)
{
    char path[640], tmp[700], home[512];
    int rc = abx__plugin_path("provider-index.json", NULL, path, sizeof path, err);
    if (rc < 0)
        return rc;
    if (abx__home(home, sizeof home) < 0 || abx__mkdir_exist_ok(home, 0700) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "creating $ABX_HOME");
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    char *text = json_dumps(index, JSON_INDENT(2) | JSON_SORT_KEYS);
    int fd = text ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
    bool ok = fd >= 0 && abx__write_all(fd, text, strlen(text)) == 0 && abx__write_all(fd, "\n", 1) == 0 &&
              fsync(fd) == 0;
    if (fd >= 0 && close(fd) < 0)
        ok = false;
    free(text);
    if (!ok || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return abx__error_errno(err, ABX_EIO, e, "writing the provider index");
    }
    return 0;
}

int abx__plugin_check(const char *id, json_t *entry, char *state, size_t len, abx_error **err)
{
    char dir[640];
    int rc = abx__plugin_path("providers", id, dir, sizeof dir, err);
    if (rc < 0)
        return rc;
    if (json_is_true(json_object_get(entry, "linked"))) {
        snprintf(state, len, "linked");
        return 0;
    }
    char hex[65] = "";
    const char *want = json_string_value(json_object_get(entry, "digest"));
    abx_error *ignored = NULL;
    bool same = want && abx__plugin_digest(dir, hex, &ignored) == 0 && strcmp(hex, want) == 0;
    abx_error_free(ignored);
    snprintf(state, len, "%s", same ? "ok" : "mismatch");
    return same ? 0
                : abx__error_set(
                      err, ABX_EPLUGINCHANGED,
                      "provider '%s': its files changed since it was installed (edited, added, removed or "
                      "re-moded); nothing was started",
                      id);
}

bool abx__plugin_config_secret(const char *id, const char *key)
{
    char dir[640], path[700];
    if (!abx__provider_id_valid(id) || abx__plugin_path("providers", id, dir, sizeof dir, NULL) < 0)
        return false;
    snprintf(path, sizeof path, "%s/abx-provider.toml", dir);
    FILE *f = fopen(path, "re");
    char *text = f ? calloc(1, 65537) : NULL;
    if (text) {
        size_t got = fread(text, 1, 65536, f);
        (void)got;
    }
    if (f)
        fclose(f);
    abx_manifest m;
    bool secret = false;
    if (text && abx__manifest_parse(text, &m, NULL) == 0) {
        secret = json_is_true(json_object_get(json_object_get(m.config, key), "secret"));
        abx__manifest_clear(&m);
    }
    free(text);
    return secret;
}

/* The manifest in dir (a plugin's, or its staged copy). */
static int read_manifest(const char *id, const char *dir, abx_manifest *m, abx_error **err)
{
    char path[700];
    snprintf(path, sizeof path, "%s/abx-provider.toml", dir);
    char *text = calloc(1, 65537);
    FILE *f = text ? fopen(path, "re") : NULL;
    if (f) {
        size_t got = fread(text, 1, 65536, f);
        (void)got;
        fclose(f);
    }
    int rc = f ? abx__error_wrap(err, abx__manifest_parse(text, m, err), "provider '%s': its manifest", id)
               : abx__error_set(err, ABX_EPROVIDER, "provider '%s': no manifest", id);
    free(text);
    return rc;
}

/* The index and installed plugin id's entry in it (*index the caller's,
 * *entry borrowed from it); E8015 when id is not installed. */
static int installed_entry(const char *id, json_t **index, json_t **entry, abx_error **err)
{
    *entry = NULL;
    int rc = abx__plugin_index_load(index, err);
    if (rc < 0)
        return rc;
    *entry = json_object_get(*index, id);
    if (!abx__provider_id_valid(id) || !*entry) {
        json_decref(*index);
        *index = NULL;
        return abx__error_set(err, ABX_EPROVIDER, "no provider '%.64s' is installed (abx provider list)", id);
    }
    return 0;
}

/* Removes the staged copies in runs whose process is gone (named
 * "<id>.<pid>.XXXXXX"): a caller that died before abx__plugin_unstage. */
static void sweep_runs(const char *runs)
{
    DIR *d = opendir(runs);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *dot = strchr(e->d_name, '.');
        char *end = NULL;
        long pid = dot ? strtol(dot + 1, &end, 10) : 0;
        if (pid <= 0 || !end || *end != '.' || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", runs, e->d_name);
        abx__tree_remove(path);
    }
    closedir(d);
}

int abx__plugin_stage(const char *id, abx_manifest *m, char *run_dir, size_t len, bool *copied,
                      abx_error **err)
{
    *copied = false;
    json_t *index = NULL, *entry = NULL;
    int rc = installed_entry(id, &index, &entry, err);
    if (rc < 0)
        return rc;
    char dir[640], runs[640], want[65];
    const char *recorded = json_string_value(json_object_get(entry, "digest"));
    snprintf(want, sizeof want, "%s", recorded ? recorded : "");
    bool linked = json_is_true(json_object_get(entry, "linked"));
    json_decref(index);
    abx__plugin_path("providers", id, dir, sizeof dir, NULL);
    if (linked) {
        fprintf(stderr,
                "abx: warning: provider %s is a --link install (development): its files are not checked\n",
                id);
        snprintf(run_dir, len, "%s", dir);
        return read_manifest(id, dir, m, err);
    }
    rc = abx__plugin_path("plugin-runs", NULL, runs, sizeof runs, err);
    if (rc < 0)
        return rc;
    if (abx__mkdir_exist_ok(runs, 0700) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "creating $ABX_HOME/plugin-runs");
    sweep_runs(runs);
    if (snprintf(run_dir, len, "%s/%s.%ld.XXXXXX", runs, id, (long)getpid()) >= (int)len || !mkdtemp(run_dir))
        return abx__error_errno(err, ABX_EIO, errno, "staging the provider's files");
    const abx_tree_digest_rules rules = {
        .max_entries = MAX_FILES, .max_depth = MAX_DEPTH, .owners = false, .copy_to = run_dir};
    char hex[65] = "";
    int walked = abx__digest_tree(dir, &rules, hex);
    int walk_errno = errno;
    /* a file replaced or gone while it was copied is a change; a copy that
     * could not be written (a full disk) is not the plugin's fault */
    if (walked < 0 && walk_errno != ESTALE && walk_errno != ENOENT && walk_errno != ELOOP &&
        walk_errno != EINVAL && walk_errno != E2BIG) {
        abx__tree_remove(run_dir);
        return abx__error_errno(err, ABX_EIO, walk_errno, "staging the provider's files");
    }
    bool same = walked == 0 && want[0] && strcmp(hex, want) == 0;
    if (!same) {
        abx__tree_remove(run_dir);
        return abx__error_set(
            err, ABX_EPLUGINCHANGED,
            "provider '%s': its files changed since it was installed (edited, added, removed "
            "or re-moded); nothing was started",
            id);
    }
    *copied = true;
    rc = read_manifest(id, run_dir, m, err);
    if (rc < 0) {
        abx__tree_remove(run_dir);
        *copied = false;
    }
    return rc;
}

void abx__plugin_unstage(const char *run_dir, bool copied)
{
    if (copied && run_dir && run_dir[0])
        abx__tree_remove(run_dir);
}

int abx__plugin_manifest_verified(const char *id, abx_manifest *m, abx_error **err)
{
    json_t *index = NULL, *entry = NULL;
    int rc = installed_entry(id, &index, &entry, err);
    if (rc < 0)
        return rc;
    char state[16], dir[640];
    rc = abx__plugin_check(id, entry, state, sizeof state, err);
    bool linked = json_is_true(json_object_get(entry, "linked"));
    json_decref(index);
    if (rc < 0)
        return rc;
    if (linked)
        fprintf(stderr,
                "abx: warning: provider %s is a --link install (development): its files are not checked\n",
                id);
    abx__plugin_path("providers", id, dir, sizeof dir, NULL);
    return read_manifest(id, dir, m, err);
}
