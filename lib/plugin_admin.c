/* plugin_admin.c: installing, listing, removing and checking provider
 * plugins (abx.h "provider plugins"), on the store of plugin_store.c:
 * $ABX_HOME/providers/<id>/ with a SHA-256 digest recorded in the index
 * and checked before every start. Installing copies files and records;
 * it never runs anything of the plugin's (no npm, no pip, no install
 * script). Sources: a directory named by the manifest's id, a tar archive
 * of one (the manifest at its root or in its one top-level directory), or
 * a git source cloned with git (no hooks, no prompt). The front end asks
 * the user (abx_plugin_install_options.confirm) and prints.
 */
#include "provider.h"
#include "archive_extract.h"
#include "config.h"
#include "epp.h"
#include "error_internal.h"
#include "manifest.h"
#include "plugin_store.h"
#include "sysutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- copying a plugin ------------------------------------------------------------ */

/* Copies the tree at src into dst (made here): directories, regular files
 * with their modes, and symlinks that stay inside the plugin. Anything else
 * (a device node, a fifo, a link out of the tree) refuses the install. */
static int copy_tree(const char *src, const char *dst, int depth, char *why, size_t why_len)
{
    if (depth > 32 || mkdir(dst, 0755) < 0) {
        snprintf(why, why_len, "cannot create %s", dst);
        return -1;
    }
    DIR *d = opendir(src);
    if (!d) {
        snprintf(why, why_len, "cannot read %s", src);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char from[PATH_MAX], to[PATH_MAX];
        if ((size_t)snprintf(from, sizeof from, "%s/%s", src, e->d_name) >= sizeof from ||
            (size_t)snprintf(to, sizeof to, "%s/%s", dst, e->d_name) >= sizeof to) {
            rc = -1;
            snprintf(why, why_len, "a path in the plugin is too long");
            break;
        }
        struct stat st;
        if (lstat(from, &st) < 0) {
            rc = -1;
            snprintf(why, why_len, "cannot stat %s", from);
        } else if (S_ISDIR(st.st_mode)) {
            rc = copy_tree(from, to, depth + 1, why, why_len);
        } else if (S_ISREG(st.st_mode)) {
            int in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            int out = in >= 0 ? open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0755) : -1;
            char buf[65536];
            ssize_t n = 0;
            while (out >= 0 && (n = read(in, buf, sizeof buf)) > 0 &&
                   abx__write_all(out, buf, (size_t)n) == 0)
                ;
            if (in < 0 || out < 0 || n < 0 || fchmod(out, st.st_mode & 0755) < 0) {
                rc = -1;
                snprintf(why, why_len, "cannot copy %s", from);
            }
            if (in >= 0)
                close(in);
            if (out >= 0 && close(out) < 0)
                rc = -1;
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t n = readlink(from, target, sizeof target - 1);
            target[n > 0 ? n : 0] = '\0';
            if (n <= 0 || target[0] == '/' || strstr(target, "..") || symlink(target, to) < 0) {
                rc = -1;
                snprintf(why, why_len, "%s is a symlink that may point outside the plugin", from);
            }
        } else {
            rc = -1;
            snprintf(why, why_len, "%s is not a file, a directory or a symlink", from);
        }
    }
    closedir(d);
    return rc;
}

/* ---- install ------------------------------------------------------------------------ */

/* $ABX_HOME/providers (made when missing) in root, and a fresh scratch
 * name there, "<root>/.<kind>-<random>", in out. */
static int scratch_path(const char *kind, char *root, size_t root_len, char *out, size_t len, abx_error **err)
{
    char home[512];
    if (abx__plugin_path("providers", NULL, root, root_len, err) < 0 || abx__home(home, sizeof home) < 0)
        return -ABX_ECONFIG;
    abx__mkdir_exist_ok(home, 0700);
    abx__mkdir_exist_ok(root, 0700);
    unsigned rnd = 0;
    if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return abx__error_set(err, ABX_ESYS, "no randomness");
    snprintf(out, len, "%s/.%s-%08x", root, kind, rnd);
    return 0;
}

static int read_manifest(const char *dir, abx_manifest *m, abx_error **err)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/abx-provider.toml", dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return abx__error_set(err, ABX_ECONFIG, "no readable abx-provider.toml in the plugin (%s)",
                              strerror(errno));
    char *text = calloc(1, 65537);
    size_t n = text ? fread(text, 1, 65536, f) : 0;
    bool too_long = text && n == 65536 && fgetc(f) != EOF;
    fclose(f);
    if (!text || too_long) {
        free(text);
        return abx__error_set(err, ABX_ECONFIG, "abx-provider.toml: larger than 64 KiB");
    }
    int rc = abx__manifest_parse(text, m, err);
    free(text);
    return rc;
}

/* The manifest as the JSON the confirm callback is shown. */
static char *manifest_json(const abx_manifest *m)
{
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O, s:s, s:O, s:O}", "id", m->id, "name", m->name,
                            "version", m->version, "kind", m->kind, "description", m->description, "command",
                            m->command ? m->command : json_null(), "base_url", m->base_url, "env",
                            m->env ? m->env : json_null(), "config", m->config ? m->config : json_null());
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    return text;
}

/* Puts the staged copy (or the link) at final, replacing an old one with
 * --force. */
static int put_in_place(const char *staged, const char *final, bool force, char *why, size_t len)
{
    struct stat st;
    char old[PATH_MAX + 32] = "";
    if (lstat(final, &st) == 0) {
        if (!force) {
            snprintf(why, len, "already installed (use --force to replace it)");
            return -1;
        }
        snprintf(old, sizeof old, "%s.old.%d", final, (int)getpid());
        if (rename(final, old) < 0) {
            snprintf(why, len, "cannot move the installed copy aside");
            return -1;
        }
    }
    if (rename(staged, final) < 0) {
        if (old[0])
            rename(old, final);
        snprintf(why, len, "cannot move the plugin into place");
        return -1;
    }
    if (old[0])
        abx__tree_remove(old);
    return 0;
}

/* Installs the plugin directory src; label is what the index records as
 * its source (the directory, or the git source it came from). */
static int install_dir(const char *src, const char *label, const abx_plugin_install_options *o, char **info,
                       abx_error **err)
{
    abx_manifest m;
    int rc = read_manifest(src, &m, err);
    if (rc < 0)
        return rc;
    const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
    if (strcmp(base, m.id) != 0) {
        rc = abx__error_set(err, ABX_EINVAL,
                            "install: the directory is named '%.64s' but the manifest's id is '%s': "
                            "they must be the same",
                            base, m.id);
        abx__manifest_clear(&m);
        return rc;
    }
    char *shown = o->confirm ? manifest_json(&m) : NULL;
    bool go = !o->confirm || (shown && o->confirm(shown, o->userdata));
    free(shown);
    if (!go) {
        abx__manifest_clear(&m);
        return abx__error_set(err, ABX_ECANCELLED, "install: not confirmed (answer y, or pass --yes)");
    }
    char root[640], final[PATH_MAX], staged[PATH_MAX + 32], why[PATH_MAX + 100] = "", hex[65] = "";
    abx_error *inner = NULL;
    if (scratch_path("staging", root, sizeof root, staged, sizeof staged, err) < 0 ||
        abx__plugin_path("providers", m.id, final, sizeof final, err) < 0) {
        abx__manifest_clear(&m);
        return -ABX_ECONFIG;
    }
    int ok = o->link ? symlink(src, staged) : copy_tree(src, staged, 0, why, sizeof why);
    if (ok == 0 && !o->link) { /* a git checkout's metadata is not the plugin's */
        char git_dir[PATH_MAX + 64];
        snprintf(git_dir, sizeof git_dir, "%s/.git", staged);
        abx__tree_remove(git_dir);
    }
    if (ok == 0 && !o->link && abx__plugin_digest(staged, hex, &inner) < 0)
        ok = -1;
    if (ok == 0)
        ok = put_in_place(staged, final, o->force, why, sizeof why);
    if (ok < 0) {
        abx__tree_remove(staged);
        if (inner && !why[0])
            snprintf(why, sizeof why, "%s", abx_error_message(inner));
        abx_error_free(inner);
        rc = abx__error_set(err, ABX_EINVAL, "install %s: %s; nothing was installed", m.id,
                            why[0] ? why : "failed");
        abx__manifest_clear(&m);
        return rc;
    }
    json_t *index = NULL;
    json_t *entry = json_pack("{s:s, s:s, s:s, s:b, s:o}", "kind", m.kind, "version", m.version, "source",
                              label, "linked", o->link, "digest", o->link ? json_null() : json_string(hex));
    rc = abx__plugin_index_load(&index, err);
    if (rc == 0) {
        json_object_set(index, m.id, entry);
        rc = abx__plugin_index_save(index, err);
    }
    json_decref(index);
    if (rc == 0) {
        json_object_set_new(entry, "id", json_string(m.id));
        json_object_set_new(entry, "path", json_string(final));
        if (info && !(*info = json_dumps(entry, JSON_COMPACT)))
            rc = abx__error_set(err, ABX_ENOMEM, "install");
    } else {
        abx__tree_remove(final);
    }
    json_decref(entry);
    abx__manifest_clear(&m);
    return rc;
}

/* ---- git sources ------------------------------------------------------------------------ */

/* A git source: "URL//subdir" or "owner/repo//subdir" (resolved against
 * ABX_PROVIDER_GIT_BASE, default https://github.com/), the subdirectory
 * optional. Only file, http(s) and ssh URLs; nothing that git could read
 * as an option; a subdirectory without "..". */
static int parse_git_source(const char *source, char *url, size_t url_len, char *subdir, size_t sub_len,
                            char *why, size_t why_len)
{
    if (source[0] == '-' || strpbrk(source, " \t\n\r\\'\"`$;|&<>")) {
        snprintf(why, why_len,
                 "a git source may not start with '-' or hold spaces, quotes or shell characters");
        return -1;
    }
    const char *scheme = strstr(source, "://");
    const char *sep = strstr(scheme ? scheme + 3 : source, "//");
    size_t repo_len = sep ? (size_t)(sep - source) : strlen(source);
    snprintf(subdir, sub_len, "%s", sep ? sep + 2 : "");
    if (strstr(subdir, "..") || subdir[0] == '/') {
        snprintf(why, why_len, "the subdirectory must stay inside the repository");
        return -1;
    }
    if (scheme) {
        bool allowed = strncmp(source, "file://", 7) == 0 || strncmp(source, "https://", 8) == 0 ||
                       strncmp(source, "http://", 7) == 0 || strncmp(source, "ssh://", 6) == 0;
        if (!allowed) {
            snprintf(why, why_len, "only file://, http(s):// and ssh:// git URLs");
            return -1;
        }
        snprintf(url, url_len, "%.*s", (int)repo_len, source);
        return 0;
    }
    const char *slash = memchr(source, '/', repo_len);
    if (!slash || memchr(slash + 1, '/', repo_len - (size_t)(slash + 1 - source))) {
        snprintf(why, why_len, "expected a directory, owner/repo//subdir, or a git URL");
        return -1;
    }
    const char *base = getenv("ABX_PROVIDER_GIT_BASE");
    if (!base || !*base)
        base = "https://github.com/";
    snprintf(url, url_len, "%s%s%.*s", base, base[strlen(base) - 1] == '/' ? "" : "/", (int)repo_len, source);
    return 0;
}

/* git clone --depth 1 -- url dir, without a terminal prompt; git runs no
 * hook of the repository on clone. */
static int git_clone(const char *url, const char *dir)
{
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
        }
        setenv("GIT_TERMINAL_PROMPT", "0", 1);
        execlp("git", "git", "-c", "core.hooksPath=/dev/null", "clone", "--quiet", "--depth", "1", "--", url,
               dir, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0     ? 0
           : WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -2
                                                             : -1;
}

/* A tar archive (compressed or not): the manifest at its root, or inside
 * its one top-level directory (whose name must then be the id). */
static int install_archive(const char *src, const abx_plugin_install_options *o, char **info, abx_error **err)
{
    char root[640], unpack[700], why[400] = "";
    if (scratch_path("unpack", root, sizeof root, unpack, sizeof unpack, err) < 0)
        return -ABX_ECONFIG;
    char tree[800], plugin[PATH_MAX];
    snprintf(tree, sizeof tree, "%s/tree", unpack);
    int rc;
    if (mkdir(unpack, 0700) < 0 || mkdir(tree, 0700) < 0) {
        rc = abx__error_set(err, ABX_EIO,
                            "install: cannot make a scratch directory under $ABX_HOME/providers");
    } else if (abx__archive_extract(src, tree, why, sizeof why) < 0) {
        rc = abx__error_set(err, ABX_EINVAL, "install: %s; nothing was installed", why);
    } else {
        snprintf(plugin, sizeof plugin, "%s/abx-provider.toml", tree);
        bool at_root = access(plugin, F_OK) == 0;
        DIR *d = at_root ? NULL : opendir(tree);
        struct dirent *e;
        int count = 0;
        char name[256] = "";
        while (d && (e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && ++count == 1)
                snprintf(name, sizeof name, "%s", e->d_name);
        if (d)
            closedir(d);
        if (at_root) { /* named by its id, as a directory install would be */
            abx_manifest m;
            rc = read_manifest(tree, &m, err);
            if (rc == 0) {
                snprintf(plugin, sizeof plugin, "%s/%s", unpack, m.id);
                abx__manifest_clear(&m);
                rc = rename(tree, plugin) == 0
                         ? install_dir(plugin, src, o, info, err)
                         : abx__error_set(err, ABX_EIO, "install: cannot stage the plugin");
            }
        } else if (count == 1) {
            snprintf(plugin, sizeof plugin, "%s/%s", tree, name);
            rc = install_dir(plugin, src, o, info, err);
        } else {
            rc = abx__error_set(err, ABX_EINVAL,
                                "install: no abx-provider.toml at the archive's root or in its one "
                                "top-level directory");
        }
    }
    abx__tree_remove(unpack);
    return rc;
}

static int install_git(const char *source, const abx_plugin_install_options *o, char **info, abx_error **err)
{
    char url[2048], subdir[1024], why[256];
    if (parse_git_source(source, url, sizeof url, subdir, sizeof subdir, why, sizeof why) < 0)
        return abx__error_set(err, ABX_EINVAL, "install: %s", why);
    if (o->link)
        return abx__error_set(err, ABX_EINVAL, "install: --link takes a local directory, not a git source");
    char root[640], clone[700];
    if (scratch_path("clone", root, sizeof root, clone, sizeof clone, err) < 0)
        return -ABX_ECONFIG;
    int cloned = git_clone(url, clone);
    int rc;
    struct stat st;
    if (cloned < 0) {
        rc = abx__error_set(err, ABX_EINVAL,
                            cloned == -2 ? "install: git is not installed (apt-get install git)"
                                         : "install: git could not clone %s",
                            url);
    } else {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s%s%s", clone, subdir[0] ? "/" : "", subdir);
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
            dir[--n] = '\0';
        if (!subdir[0]) { /* the repository is the plugin: its name is the id */
            const char *repo = strrchr(url, '/') ? strrchr(url, '/') + 1 : url;
            int repo_len = (int)(strstr(repo, ".git") ? strstr(repo, ".git") - repo : (long)strlen(repo));
            snprintf(dir, sizeof dir, "%s.plugin", clone);
            mkdir(dir, 0700);
            snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/%.*s", repo_len, repo);
            rename(clone, dir);
        }
        rc = stat(dir, &st) == 0 && S_ISDIR(st.st_mode)
                 ? install_dir(dir, source, o, info, err)
                 : abx__error_set(err, ABX_EINVAL, "install: %s has no directory %s", url, subdir);
        if (!subdir[0]) {
            char *slash = strrchr(dir, '/');
            *slash = '\0';
            abx__tree_remove(dir);
        }
    }
    abx__tree_remove(clone);
    return rc;
}

int abx_plugin_install(const abx_plugin_install_options *o, char **info, abx_error **err)
{
    if (info)
        *info = NULL;
    if (!o || !o->source || !*o->source)
        return abx__error_set(err, ABX_EINVAL, "install: a source");
    char src[PATH_MAX];
    struct stat st;
    if (realpath(o->source, src) && stat(src, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return install_dir(src, src, o, info, err);
        if (o->link)
            return abx__error_set(err, ABX_EINVAL, "install: --link takes a local directory, not an archive");
        return install_archive(src, o, info, err);
    }
    return install_git(o->source, o, info, err);
}

/* ---- list, remove ----------------------------------------------------------------------- */

int abx_plugin_list(char **json, abx_error **err)
{
    *json = NULL;
    json_t *index = NULL, *out = json_array();
    int rc = abx__plugin_index_load(&index, err);
    const char *id;
    json_t *e;
    json_object_foreach(rc == 0 ? index : NULL, id, e)
    {
        char state[16];
        abx__plugin_check(id, e, state, sizeof state, NULL);
        json_array_append_new(
            out, json_pack("{s:s, s:O, s:O, s:O, s:b, s:s}", "id", id, "kind", json_object_get(e, "kind"),
                           "version", json_object_get(e, "version"), "source", json_object_get(e, "source"),
                           "linked", json_is_true(json_object_get(e, "linked")), "digest", state));
    }
    json_decref(index);
    if (rc == 0 && !(*json = json_dumps(out, JSON_COMPACT)))
        rc = abx__error_set(err, ABX_ENOMEM, "list");
    json_decref(out);
    return rc;
}

static int not_installed(const char *id, abx_error **err)
{
    return abx__error_set(err, ABX_EPROVIDER, "no provider '%.64s' is installed ('abx provider list')", id);
}

int abx_plugin_remove(const char *id, bool purge, abx_error **err)
{
    json_t *index = NULL;
    int rc = abx__plugin_index_load(&index, err);
    if (rc < 0)
        return rc;
    if (!id || !abx__provider_id_valid(id) || !json_object_get(index, id)) {
        json_decref(index);
        return not_installed(id ? id : "", err);
    }
    char dir[640], data[640];
    abx__plugin_path("providers", id, dir, sizeof dir, NULL);
    abx__plugin_path("provider-data", id, data, sizeof data, NULL);
    json_object_del(index, id);
    rc = abx__plugin_index_save(index, err);
    json_decref(index);
    if (rc < 0)
        return rc;
    abx__tree_remove(dir); /* a --link install: only the link goes */
    if (purge)
        abx__tree_remove(data);
    return 0;
}

/* ---- doctor ------------------------------------------------------------------------ */

static void check_as(json_t *list, const char *name, const char *status, const char *detail)
{
    json_array_append_new(list,
                          json_pack("{s:s, s:s, s:s}", "check", name, "status", status, "detail", detail));
}

static void check(json_t *list, const char *name, bool ok, const char *detail)
{
    check_as(list, name, ok ? "ok" : "fail", detail);
}

/* The command's program: a path relative to the plugin, or found on PATH. */
static bool command_found(const char *dir, const char *prog)
{
    char path[PATH_MAX + 300];
    if (strchr(prog, '/')) {
        snprintf(path, sizeof path, "%s%s%s", prog[0] == '/' ? "" : dir, prog[0] == '/' ? "" : "/", prog);
        return access(path, X_OK) == 0;
    }
    const char *env = getenv("PATH");
    char paths[4096];
    snprintf(paths, sizeof paths, "%s", env ? env : "/usr/local/bin:/usr/bin:/bin");
    char *save = NULL;
    for (char *d = strtok_r(paths, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(path, sizeof path, "%s/%s", d, prog);
        if (access(path, X_OK) == 0)
            return true;
    }
    return false;
}

/* The handshake of an exec plugin, or the answer of a rest plugin's API. */
static void check_answers(json_t *checks, const char *id, const abx_manifest *m)
{
    char detail[700];
    abx_error *err = NULL;
    int rc;
    if (strcmp(m->kind, "exec") == 0) {
        abx_epp *e = NULL;
        rc = abx__epp_start(id, &e, &err);
        if (rc == 0) {
            char *features = json_dumps(abx__epp_features(e), JSON_COMPACT);
            snprintf(detail, sizeof detail, "initialize answered; features %s", features ? features : "[]");
            free(features);
        } else {
            snprintf(detail, sizeof detail, "%s", abx_error_message(err));
        }
        check(checks, "initialize", rc == 0, detail);
        abx__epp_stop(e);
    } else { /* rest: the service answers with this configuration */
        abx_client_options co = {.provider = id};
        abx_client *c = NULL;
        abx_sandbox_info *items = NULL;
        size_t n = 0;
        rc = abx_client_new(&co, &c, &err);
        if (rc == 0)
            rc = abx_list(c, NULL, 1, 0, &items, &n, &err);
        abx_sandbox_info_list_free(items, n);
        abx_client_free(c);
        snprintf(detail, sizeof detail, "%s",
                 rc == 0 ? "the API answered a list with this key" : abx_error_message(err));
        check(checks, "api", rc == 0, detail);
    }
    abx_error_free(err);
}

/* Every config key of the manifest: set, or how to set it. */
static void check_config(json_t *checks, const char *id, const abx_manifest *m)
{
    abx_kvs *kvs = calloc(1, sizeof *kvs);
    bool loaded = kvs && abx__config_load(kvs, NULL) == 0;
    const char *k;
    json_t *v;
    char detail[700];
    json_object_foreach(m->config, k, v)
    {
        char key[256];
        snprintf(key, sizeof key, "providers.%s.%s", id, k);
        bool set = loaded && abx__kvs_get(kvs, key);
        snprintf(detail, sizeof detail, set ? "%s is set" : "%s is not set: abx config set %s%s", key, key,
                 json_is_true(json_object_get(v, "secret")) ? " (then type it: a secret is read from stdin)"
                                                            : " VALUE");
        check_as(checks, "config", set ? "ok" : "warn",
                 detail); /* the manifest does not say which are required */
    }
    if (kvs)
        explicit_bzero(kvs, sizeof *kvs);
    free(kvs);
}

int abx_plugin_doctor(const char *id, char **json, abx_error **err)
{
    *json = NULL;
    json_t *index = NULL;
    abx__plugin_index_load(&index, NULL);
    json_t *entry = index && id ? json_object_get(index, id) : NULL;
    if (!id || !abx__provider_id_valid(id) || !entry) {
        json_decref(index);
        return not_installed(id ? id : "", err);
    }
    json_t *checks = json_array();
    char dir[640], detail[700];
    abx__plugin_path("providers", id, dir, sizeof dir, NULL);
    abx_manifest m;
    abx_error *why = NULL;
    int rc = read_manifest(dir, &m, &why);
    check(checks, "manifest", rc == 0, rc == 0 ? "abx-provider.toml is valid" : abx_error_message(why));
    abx_error_free(why);
    bool manifest_ok = rc == 0;
    if (manifest_ok && m.command) {
        const char *prog = json_string_value(json_array_get(m.command, 0));
        bool found = command_found(dir, prog);
        snprintf(detail, sizeof detail,
                 found ? "%s found"
                       : "%s: not found or not executable (install it, or fix "
                         "[runtime] command)",
                 prog);
        check(checks, "command", found, detail);
    }
    char state[16];
    rc = abx__plugin_check(id, entry, state, sizeof state, NULL);
    check(checks, "digest", rc == 0,
          rc < 0 ? "files changed since install (E8011): reinstall with abx provider install --force"
          : strcmp(state, "linked") == 0 ? "a --link install: not checked"
                                         : "matches the install");
    if (rc == 0 && manifest_ok)
        check_answers(checks, id, &m);
    if (manifest_ok && m.config)
        check_config(checks, id, &m);
    if (manifest_ok)
        abx__manifest_clear(&m);
    json_decref(index);
    bool failed = false;
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c) failed |=
        strcmp(json_string_value(json_object_get(c, "status")), "fail") == 0;
    json_t *doc = json_pack("{s:s, s:b, s:o}", "id", id, "ok", !failed, "checks", checks);
    *json = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    return *json ? 0 : abx__error_set(err, ABX_ENOMEM, "doctor");
}
