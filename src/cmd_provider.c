/* cmd_provider.c: `abx provider install|list|remove|doctor|test` (issue 10): provider
 * plugins installed into $ABX_HOME/providers/<id>/ with a digest checked
 * before every start (lib/plugin_store.c), from a directory for now.
 * Installing copies files and records; it never runs anything of the
 * plugin's (no npm, no pip, no install script). */
#include "cli.h"
#include "config.h"
#include "error_internal.h"
#include "archive_extract.h"
#include "epp.h"
#include "manifest.h"
#include "plugin_store.h"
#include "provider.h"
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

const char cmd_provider_help[] =
    "Usage: abx provider install SOURCE [--link] [--yes] [--force] [--json]\n"
    "       abx provider list [--json]\n"
    "       abx provider remove ID [--purge] [--json]\n"
    "       abx provider doctor ID [--json]\n"
    "       abx provider test ID [--json]\n"
    "\n"
    "Provider plugins: other backends for the same sandbox verbs and tools.\n"
    "\n"
    "install  SOURCE is a plugin directory holding abx-provider.toml, a tar\n"
    "         archive (.tar, .tar.gz, ...: the manifest at its root or in its\n"
    "         one top-level directory), or a git source: URL//subdir (file,\n"
    "         http(s) or ssh URLs) or\n"
    "         owner/repo//subdir (on ABX_PROVIDER_GIT_BASE, default\n"
    "         https://github.com/). The directory's name (the repository's,\n"
    "         without a subdir) must be the manifest's [provider] id. Shows\n"
    "         what the plugin will get (its command, the host variables passed\n"
    "         through, its config keys) and asks unless --yes, then copies it\n"
    "         to ~/.abx/providers/<id>/ and records a SHA-256 digest of its\n"
    "         files, checked before every start (a change is E8011). Nothing\n"
    "         of the plugin's is run. --link installs a symlink instead (for\n"
    "         development: no digest, a warning at every use). --force\n"
    "         replaces an installed plugin of the same id.\n"
    "list     installed plugins: id, kind, version, source, linked, digest\n"
    "         (ok, mismatch or linked).\n"
    "remove   uninstalls; the plugin's data (~/.abx/provider-data/<id>/)\n"
    "         stays unless --purge.\n"
    "doctor   checks an installed plugin, a line each (ok, warn or fail, with what\n"
    "         to do): its manifest, its command, its digest, the initialize\n"
    "         handshake and the features it declares, and config keys not set.\n"
    "         Exits 1 when a check fails.\n"
    "test     drives the plugin capability by capability with real calls\n"
    "         (create, get, list, exec, files, timeout, kill) and prints a table;\n"
    "         exits 1 when one fails. Capabilities this abx does not drive\n"
    "         over EPP yet are listed as untested.\n";

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
            while (out >= 0 && (n = read(in, buf, sizeof buf)) > 0 && abx__write_all(out, buf, (size_t)n) == 0)
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

static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char child[PATH_MAX];
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            remove_tree(child);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
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
        return abx__error_set(err, ABX_ECONFIG, "%.200s: no readable abx-provider.toml (%s)", dir, strerror(errno));
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

/* What the plugin will get, on stderr, before the question. */
static void show_grants(const abx_manifest *m)
{
    fprintf(stderr, "provider %s (%s%s%s, kind %s)\n", m->id, m->name[0] ? m->name : m->id,
            m->version[0] ? " " : "", m->version, m->kind);
    if (m->description[0])
        fprintf(stderr, "  %s\n", m->description);
    size_t i;
    json_t *v;
    if (m->command) {
        fprintf(stderr, "  runs:");
        json_array_foreach(m->command, i, v) fprintf(stderr, " %s", json_string_value(v));
        fprintf(stderr, "\n");
    }
    if (m->base_url[0])
        fprintf(stderr, "  talks to: %s\n", m->base_url);
    fprintf(stderr, "  host variables passed through:");
    json_array_foreach(m->env, i, v) fprintf(stderr, " %s", json_string_value(v));
    fprintf(stderr, "%s\n", json_array_size(m->env) ? "" : " (none)");
    fprintf(stderr, "  config keys:");
    const char *k;
    json_object_foreach(m->config, k, v)
        fprintf(stderr, " %s%s", k, json_is_true(json_object_get(v, "secret")) ? " (secret)" : "");
    fprintf(stderr, "%s\n", json_object_size(m->config) ? "" : " (none)");
}

static bool confirmed(void)
{
    if (!isatty(STDIN_FILENO))
        return false;
    fprintf(stderr, "Install it? [y/N] ");
    char line[16];
    return fgets(line, sizeof line, stdin) && (line[0] == 'y' || line[0] == 'Y');
}

typedef struct install_args {
    bool link, yes, force;
} install_args;

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
        remove_tree(old);
    return 0;
}

/* Installs the plugin directory src; label is what the index records as
 * its source (the directory, or the git source it came from). */
static int install_dir(cli_ctx *ctx, const char *src, const char *label, const install_args *a)
{
    abx_manifest m;
    abx_error *err = NULL;
    int rc = read_manifest(src, &m, &err);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
    if (strcmp(base, m.id) != 0) {
        rc = cli_fail(ctx, ABX_EINVAL, "install: the directory is named '%s' but the manifest's id is '%s': they must "
                                       "be the same", base, m.id);
        abx__manifest_clear(&m);
        return rc;
    }
    show_grants(&m);
    if (!a->yes && !confirmed()) {
        abx__manifest_clear(&m);
        return cli_fail(ctx, ABX_EINVAL, "install: not confirmed (answer y, or pass --yes)");
    }
    char root[640], final[PATH_MAX], staged[PATH_MAX + 32], why[PATH_MAX + 100] = "", hex[65] = "";
    if (scratch_path("staging", root, sizeof root, staged, sizeof staged, &err) < 0 ||
        abx__plugin_path("providers", m.id, final, sizeof final, &err) < 0) {
        abx__manifest_clear(&m);
        return cli_fail_error(ctx, err, -ABX_ECONFIG);
    }
    int ok = a->link ? symlink(src, staged) : copy_tree(src, staged, 0, why, sizeof why);
    if (ok == 0 && !a->link) { /* a git checkout's metadata is not the plugin's */
        char git_dir[PATH_MAX + 64];
        snprintf(git_dir, sizeof git_dir, "%s/.git", staged);
        remove_tree(git_dir);
    }
    if (ok == 0 && !a->link && abx__plugin_digest(staged, hex, &err) < 0)
        ok = -1;
    if (ok == 0)
        ok = put_in_place(staged, final, a->force, why, sizeof why);
    if (ok < 0) {
        remove_tree(staged);
        if (err && !why[0])
            snprintf(why, sizeof why, "%s", abx_error_message(err));
        abx_error_free(err);
        rc = cli_fail(ctx, ABX_EINVAL, "install %s: %s; nothing was installed", m.id, why[0] ? why : "failed");
        abx__manifest_clear(&m);
        return rc;
    }
    json_t *index = NULL;
    json_t *entry = json_pack("{s:s, s:s, s:s, s:b, s:o}", "kind", m.kind, "version", m.version, "source", label,
                              "linked", a->link, "digest", a->link ? json_null() : json_string(hex));
    rc = abx__plugin_index_load(&index, &err);
    if (rc == 0) {
        json_object_set(index, m.id, entry);
        rc = abx__plugin_index_save(index, &err);
    }
    json_decref(index);
    if (rc < 0) {
        remove_tree(final);
        json_decref(entry);
        abx__manifest_clear(&m);
        return cli_fail_error(ctx, err, rc);
    }
    if (a->link)
        fprintf(stderr, "abx provider: warning: %s is a --link install (development): its files are not checked\n",
                m.id);
    if (ctx->json) {
        json_object_set_new(entry, "id", json_string(m.id));
        json_object_set_new(entry, "path", json_string(final));
        cli_print_json(entry);
    } else {
        printf("installed %s into %s%s\n", m.id, final, a->link ? " (linked)" : "");
        json_decref(entry);
    }
    abx__manifest_clear(&m);
    return 0;
}

/* ---- git sources ------------------------------------------------------------------------ */

/* A git source: "URL//subdir" or "owner/repo//subdir" (resolved against
 * ABX_PROVIDER_GIT_BASE, default https://github.com/), the subdirectory
 * optional. Only file, http(s) and ssh URLs; nothing that git could read
 * as an option; a subdirectory without "..". */
static int parse_git_source(const char *source, char *url, size_t url_len, char *subdir, size_t sub_len, char *why,
                            size_t why_len)
{
    if (source[0] == '-' || strpbrk(source, " \t\n\r\\'\"`$;|&<>")) {
        snprintf(why, why_len, "a git source may not start with '-' or hold spaces, quotes or shell characters");
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
        execlp("git", "git", "-c", "core.hooksPath=/dev/null", "clone", "--quiet", "--depth", "1", "--", url, dir,
               (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -2 : -1;
}

/* A tar archive (compressed or not): the manifest at its root, or inside
 * its one top-level directory (whose name must then be the id). */
static int install_archive(cli_ctx *ctx, const char *src, const install_args *a)
{
    char root[640], unpack[700], why[400] = "";
    abx_error *err = NULL;
    if (scratch_path("unpack", root, sizeof root, unpack, sizeof unpack, &err) < 0)
        return cli_fail_error(ctx, err, -ABX_ECONFIG);
    char tree[800], plugin[PATH_MAX];
    snprintf(tree, sizeof tree, "%s/tree", unpack);
    int rc;
    if (mkdir(unpack, 0700) < 0 || mkdir(tree, 0700) < 0) {
        rc = cli_fail(ctx, ABX_EIO, "install: cannot make a scratch directory in %s", root);
    } else if (abx__archive_extract(src, tree, why, sizeof why) < 0) {
        rc = cli_fail(ctx, ABX_EINVAL, "install: %s; nothing was installed", why);
    } else {
        snprintf(plugin, sizeof plugin, "%s/abx-provider.toml", tree);
        bool at_root = access(plugin, F_OK) == 0;
        DIR *d = at_root ? NULL : opendir(tree);
        struct dirent *e, *only = NULL;
        int count = 0;
        char name[256] = "";
        while (d && (e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && ++count == 1) {
                only = e;
                snprintf(name, sizeof name, "%s", only->d_name);
            }
        if (d)
            closedir(d);
        if (at_root) {
            /* named by its id, as a directory install would be */
            abx_manifest m;
            rc = read_manifest(tree, &m, &err);
            if (rc == 0) {
                snprintf(plugin, sizeof plugin, "%s/%s", unpack, m.id);
                abx__manifest_clear(&m);
                rc = rename(tree, plugin) == 0 ? install_dir(ctx, plugin, src, a)
                                               : cli_fail(ctx, ABX_EIO, "install: cannot stage the plugin");
            } else {
                rc = cli_fail_error(ctx, err, rc);
            }
        } else if (count == 1) {
            snprintf(plugin, sizeof plugin, "%s/%s", tree, name);
            rc = install_dir(ctx, plugin, src, a);
        } else {
            rc = cli_fail(ctx, ABX_EINVAL, "install: no abx-provider.toml at the archive's root or in its one "
                                           "top-level directory");
        }
    }
    remove_tree(unpack);
    return rc;
}

static int install(cli_ctx *ctx, const char *source, const install_args *a)
{
    char src[PATH_MAX];
    struct stat st;
    if (realpath(source, src) && stat(src, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return install_dir(ctx, src, src, a);
        if (a->link)
            return cli_fail(ctx, ABX_EINVAL, "install: --link takes a local directory, not an archive");
        return install_archive(ctx, src, a);
    }
    char url[2048], subdir[1024], why[256];
    if (parse_git_source(source, url, sizeof url, subdir, sizeof subdir, why, sizeof why) < 0)
        return cli_fail(ctx, ABX_EINVAL, "install: %s", why);
    if (a->link)
        return cli_fail(ctx, ABX_EINVAL, "install: --link takes a local directory, not a git source");
    char root[640], clone[700];
    abx_error *err = NULL;
    if (scratch_path("clone", root, sizeof root, clone, sizeof clone, &err) < 0)
        return cli_fail_error(ctx, err, -ABX_ECONFIG);
    int cloned = git_clone(url, clone);
    int rc;
    if (cloned < 0) {
        rc = cli_fail(ctx, ABX_EINVAL, cloned == -2 ? "install: git is not installed (apt-get install git)"
                                                    : "install: git could not clone %s", url);
    } else {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s%s%s", clone, subdir[0] ? "/" : "", subdir);
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
            dir[--n] = '\0';
        if (!subdir[0]) { /* the repository is the plugin: its name is the id */
            char named[PATH_MAX + 8];
            const char *repo = strrchr(url, '/') ? strrchr(url, '/') + 1 : url;
            snprintf(named, sizeof named, "%s/%.*s", root, (int)(strstr(repo, ".git") ? strstr(repo, ".git") - repo
                                                                                       : (long)strlen(repo)), repo);
            snprintf(dir, sizeof dir, "%s.plugin", clone);
            mkdir(dir, 0700);
            snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/%s", strrchr(named, '/') + 1);
            rename(clone, dir);
        }
        rc = stat(dir, &st) == 0 && S_ISDIR(st.st_mode)
                 ? install_dir(ctx, dir, source, a)
                 : cli_fail(ctx, ABX_EINVAL, "install: %s has no directory %s", url, subdir);
        if (!subdir[0]) {
            char *slash = strrchr(dir, '/');
            *slash = '\0';
            remove_tree(dir);
        }
    }
    remove_tree(clone);
    return rc;
}

/* ---- list, remove ----------------------------------------------------------------------- */

static int list(cli_ctx *ctx)
{
    json_t *index = NULL, *out = json_array();
    abx_error *err = NULL;
    int rc = abx__plugin_index_load(&index, &err);
    if (rc < 0) {
        json_decref(out);
        return cli_fail_error(ctx, err, rc);
    }
    const char *id;
    json_t *e;
    json_object_foreach(index, id, e) {
        char state[16];
        abx__plugin_check(id, e, state, sizeof state, NULL);
        json_array_append_new(out, json_pack("{s:s, s:O, s:O, s:O, s:b, s:s}", "id", id, "kind",
                                             json_object_get(e, "kind"), "version", json_object_get(e, "version"),
                                             "source", json_object_get(e, "source"), "linked",
                                             json_is_true(json_object_get(e, "linked")), "digest", state));
    }
    json_decref(index);
    if (ctx->json) {
        cli_print_json(out);
        return 0;
    }
    printf("%-24s %-5s %-10s %-9s %s\n", "ID", "KIND", "VERSION", "DIGEST", "SOURCE");
    size_t i;
    json_array_foreach(out, i, e)
        printf("%-24s %-5s %-10s %-9s %s\n", json_string_value(json_object_get(e, "id")),
               json_string_value(json_object_get(e, "kind")), json_string_value(json_object_get(e, "version")),
               json_string_value(json_object_get(e, "digest")), json_string_value(json_object_get(e, "source")));
    json_decref(out);
    return 0;
}

static int remove_plugin(cli_ctx *ctx, const char *id, bool purge)
{
    json_t *index = NULL;
    abx_error *err = NULL;
    int rc = abx__plugin_index_load(&index, &err);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    if (!abx__provider_id_valid(id) || !json_object_get(index, id)) {
        json_decref(index);
        return cli_fail(ctx, ABX_EPROVIDER, "no provider '%.64s' is installed ('abx provider list')", id);
    }
    char dir[640], data[640];
    abx__plugin_path("providers", id, dir, sizeof dir, NULL);
    abx__plugin_path("provider-data", id, data, sizeof data, NULL);
    json_object_del(index, id);
    rc = abx__plugin_index_save(index, &err);
    json_decref(index);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    remove_tree(dir); /* a --link install: only the link goes */
    if (purge)
        remove_tree(data);
    if (ctx->json)
        cli_print_json(json_pack("{s:s, s:b, s:b}", "id", id, "removed", 1, "data_purged", purge));
    else
        printf("removed %s%s\n", id, purge ? " and its data" : "");
    return 0;
}

/* ---- doctor ------------------------------------------------------------------------ */

static void check_as(json_t *list, const char *name, const char *status, const char *detail)
{
    json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "check", name, "status", status, "detail", detail));
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

static int doctor(cli_ctx *ctx, const char *id)
{
    json_t *checks = json_array(), *index = NULL;
    abx_error *err = NULL;
    char dir[640], detail[700];
    abx__plugin_index_load(&index, NULL);
    json_t *entry = index ? json_object_get(index, id) : NULL;
    if (!abx__provider_id_valid(id) || !entry) {
        json_decref(index);
        json_decref(checks);
        return cli_fail(ctx, ABX_EPROVIDER, "no provider '%.64s' is installed ('abx provider list')", id);
    }
    abx__plugin_path("providers", id, dir, sizeof dir, NULL);
    abx_manifest m;
    int rc = read_manifest(dir, &m, &err);
    check(checks, "manifest", rc == 0, rc == 0 ? "abx-provider.toml is valid" : abx_error_message(err));
    abx_error_free(err);
    err = NULL;
    if (rc == 0 && m.command) {
        const char *prog = json_string_value(json_array_get(m.command, 0));
        bool found = command_found(dir, prog);
        snprintf(detail, sizeof detail, found ? "%s found" : "%s: not found or not executable (install it, or fix "
                                                             "[runtime] command)",
                 prog);
        check(checks, "command", found, detail);
    }
    char state[16];
    rc = abx__plugin_check(id, entry, state, sizeof state, NULL);
    check(checks, "digest", rc == 0,
          rc < 0 ? "files changed since install (E8011): reinstall with abx provider install --force"
                 : strcmp(state, "linked") == 0 ? "a --link install: not checked" : "matches the install");
    abx_epp *e = NULL;
    if (rc == 0 && strcmp(m.kind, "exec") == 0) {
        rc = abx__epp_start(id, &e, &err);
        if (rc == 0) {
            char *features = json_dumps(abx__epp_features(e), JSON_COMPACT);
            snprintf(detail, sizeof detail, "initialize answered; features %s", features ? features : "[]");
            free(features);
        } else {
            snprintf(detail, sizeof detail, "%s", abx_error_message(err));
        }
        check(checks, "initialize", rc == 0, detail);
        abx_error_free(err);
        abx__epp_stop(e);
    } else if (rc == 0) { /* rest: the service answers with this configuration */
        abx_client_options co = {.provider = id};
        abx_client *c = NULL;
        abx_sandbox_info *items = NULL;
        size_t n = 0;
        err = NULL;
        rc = abx_client_new(&co, &c, &err);
        if (rc == 0)
            rc = abx_list(c, NULL, 1, 0, &items, &n, &err);
        abx_sandbox_info_list_free(items, n);
        abx_client_free(c);
        snprintf(detail, sizeof detail, "%s", rc == 0 ? "the API answered a list with this key" : abx_error_message(err));
        check(checks, "api", rc == 0, detail);
        abx_error_free(err);
    }
    if (m.config) {
        abx_kvs *kvs = calloc(1, sizeof *kvs);
        bool loaded = kvs && abx__config_load(kvs, NULL) == 0;
        const char *k;
        json_t *v;
        json_object_foreach(m.config, k, v) {
            char key[256];
            snprintf(key, sizeof key, "providers.%s.%s", id, k);
            bool set = loaded && abx__kvs_get(kvs, key);
            snprintf(detail, sizeof detail, set ? "%s is set" : "%s is not set: abx config set %s%s", key, key,
                     json_is_true(json_object_get(v, "secret")) ? " (then type it: a secret is read from stdin)" : " VALUE");
            check_as(checks, "config", set ? "ok" : "warn", detail); /* the manifest does not say which are required */
        }
        if (kvs)
            explicit_bzero(kvs, sizeof *kvs);
        free(kvs);
    }
    abx__manifest_clear(&m);
    json_decref(index);
    bool failed = false;
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c) failed |= strcmp(json_string_value(json_object_get(c, "status")), "fail") == 0;
    if (ctx->json) {
        cli_print_json(json_pack("{s:s, s:b, s:o}", "id", id, "ok", !failed, "checks", checks));
    } else {
        json_array_foreach(checks, i, c)
            printf("%-5s %-12s %s\n", json_string_value(json_object_get(c, "status")),
                   json_string_value(json_object_get(c, "check")), json_string_value(json_object_get(c, "detail")));
        json_decref(checks);
    }
    return failed ? CLI_EXIT_ERROR : 0;
}

/* ---- test ---------------------------------------------------------------------------- */

typedef struct test_table {
    json_t *rows;
    bool failed;
} test_table;

static void row(test_table *t, const char *capability, const char *step, int rc, abx_error *err, const char *detail)
{
    const char *status = rc == 1 ? "untested" : rc == 0 ? "pass" : "fail";
    json_array_append_new(t->rows, json_pack("{s:s, s:s, s:s, s:s}", "capability", capability, "step", step, "status",
                                             status, "detail", err ? abx_error_message(err) : detail ? detail : ""));
    if (rc < 0)
        t->failed = true;
    abx_error_free(err);
}

/* exec.run: output, exit status. */
static void test_exec(test_table *t, abx_sandbox *s)
{
    abx_exec_options o = {.keep_output = true};
    abx_exec_result r;
    abx_error *err = NULL;
    int rc = abx_sandbox_exec(s, "echo abx-test; echo to-stderr >&2", &o, &r, &err);
    bool ok = rc == 0 && r.exit_code == 0 && r.stdout_data && strcmp(r.stdout_data, "abx-test\n") == 0 &&
              r.stderr_data && strcmp(r.stderr_data, "to-stderr\n") == 0;
    abx_exec_result_clear(&r);
    row(t, "exec.run", "stdout and stderr", ok ? 0 : -1, err, ok ? "" : "unexpected output");
    err = NULL;
    rc = abx_sandbox_exec(s, "exit 3", &o, &r, &err);
    ok = rc == 0 && r.exit_code == 3;
    abx_exec_result_clear(&r);
    row(t, "exec.run", "exit status", ok ? 0 : -1, err, ok ? "" : "not 3");
}

/* files.rw: binary round trip, listing, stat, mkdir, move, remove. */
static void test_files(test_table *t, abx_sandbox *s)
{
    char data[300];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)(i * 31);
    abx_error *err = NULL;
    int rc = abx_sandbox_write_file(s, "/app/abx-test/bin", data, sizeof data, NULL, &err);
    row(t, "files.rw", "write", rc, err, "");
    err = NULL;
    char *back = NULL;
    size_t len = 0;
    rc = abx_sandbox_read_file(s, "/app/abx-test/bin", NULL, 4096, &back, &len, &err);
    bool same = rc == 0 && len == sizeof data && memcmp(back, data, len) == 0;
    abx_free(back);
    row(t, "files.rw", "read (binary)", rc < 0 ? rc : same ? 0 : -1, err, same ? "" : "other bytes came back");
    err = NULL;
    char *json = NULL;
    rc = abx_sandbox_list_files(s, "/app/abx-test", 1, NULL, &json, &err);
    bool listed = rc == 0 && json && strstr(json, "\"bin\"");
    abx_free(json);
    row(t, "files.rw", "list", rc < 0 ? rc : listed ? 0 : -1, err, listed ? "" : "not listed");
    err = NULL;
    rc = abx_sandbox_stat(s, "/app/abx-test/bin", NULL, &json, &err);
    abx_free(rc == 0 ? json : NULL);
    row(t, "files.rw", "stat", rc, err, "");
    err = NULL;
    rc = abx_sandbox_mkdir(s, "/app/abx-test/d", NULL, NULL, &err);
    row(t, "files.rw", "mkdir", rc, err, "");
    err = NULL;
    rc = abx_sandbox_move(s, "/app/abx-test/bin", "/app/abx-test/d/moved", NULL, &err);
    row(t, "files.rw", "move", rc, err, "");
    err = NULL;
    rc = abx_sandbox_remove(s, "/app/abx-test", NULL, &err);
    row(t, "files.rw", "remove", rc, err, "");
}

typedef struct stream_seen {
    char text[256];
    size_t len;
    int chunks;
} stream_seen;

static void seen_output(const char *data, size_t len, void *ud)
{
    stream_seen *seen = ud;
    size_t room = sizeof seen->text - 1 - seen->len;
    memcpy(seen->text + seen->len, data, len < room ? len : room);
    seen->len += len < room ? len : room;
    seen->text[seen->len] = '\0';
    seen->chunks++;
}

/* exec.stream: output as it comes, the exit status; with process.manage,
 * stdin reaches the command. */
static void test_stream(test_table *t, abx_sandbox *s, bool with_stdin)
{
    stream_seen seen = {0};
    abx_exec_options o = {.on_stdout = seen_output, .userdata = &seen};
    abx_exec_result r;
    abx_error *err = NULL;
    int rc = abx_sandbox_exec(s, "echo one; sleep 0.2; echo two; exit 4", &o, &r, &err);
    bool ok = rc == 0 && r.exit_code == 4 && strcmp(seen.text, "one\ntwo\n") == 0;
    abx_exec_result_clear(&r);
    row(t, "exec.stream", "output and exit", ok ? 0 : -1, err, ok ? "" : "unexpected output or exit status");
    if (!with_stdin)
        return;
    int fds[2];
    if (pipe(fds) < 0)
        return;
    ssize_t w = write(fds[1], "abx-stdin", 9);
    close(fds[1]);
    memset(&seen, 0, sizeof seen);
    o.with_stdin = true;
    o.stdin_fd = fds[0];
    err = NULL;
    rc = w == 9 ? abx_sandbox_exec(s, "cat", &o, &r, &err) : -1;
    close(fds[0]);
    ok = rc == 0 && r.exit_code == 0 && strcmp(seen.text, "abx-stdin") == 0;
    if (rc == 0)
        abx_exec_result_clear(&r);
    row(t, "process.manage", "stdin", ok ? 0 : -1, err, ok ? "" : "the command did not read what was sent");
}

/* process.manage: a background task listed, its output read, a signal
 * ending it. */
static void test_processes(test_table *t, abx_sandbox *s)
{
    int pid = 0;
    abx_error *err = NULL;
    int rc = abx_sandbox_start_background(s, "echo started; sleep 30", NULL, &pid, &err);
    row(t, "process.manage", "start (exec.start)", rc, err, "");
    if (rc < 0)
        return;
    char *json = NULL, needle[32];
    err = NULL;
    rc = abx_sandbox_list_processes(s, &json, &err);
    snprintf(needle, sizeof needle, "\"pid\":%d", pid);
    bool listed = rc == 0 && strstr(json, needle);
    abx_free(json);
    row(t, "process.manage", "list", rc < 0 ? rc : listed ? 0 : -1, err, listed ? "" : "the task is not listed");
    abx_process_output out;
    err = NULL;
    rc = abx_sandbox_read_output(s, pid, 0, 0, 5000, &out, &err);
    bool said = rc == 0 && out.stdout_data && strcmp(out.stdout_data, "started\n") == 0;
    if (rc == 0)
        abx_process_output_clear(&out);
    row(t, "process.manage", "output", rc < 0 ? rc : said ? 0 : -1, err, said ? "" : "not its output");
    err = NULL;
    rc = abx_sandbox_signal(s, pid, 15, &err);
    row(t, "process.manage", "signal", rc, err, "");
    bool ended = false;
    for (int i = 0; rc == 0 && !ended && i < 50; i++) {
        rc = abx_sandbox_read_output(s, pid, ~0ull, ~0ull, 100, &out, NULL);
        ended = rc == 0 && !out.running;
        if (rc == 0)
            abx_process_output_clear(&out);
    }
    row(t, "process.manage", "ended by the signal", ended ? 0 : -1, NULL, ended ? "" : "still running 5 s later");
}

static void test_ports(test_table *t, abx_sandbox *s)
{
    char *url = NULL;
    abx_error *err = NULL;
    int rc = abx_sandbox_port_url(s, 8080, &url, &err);
    abx_free(url);
    row(t, "ports.url", "url of port 8080", rc, err, "");
}

static void test_pause(test_table *t, abx_sandbox *s)
{
    abx_error *err = NULL;
    int rc = abx_sandbox_pause(s, &err);
    row(t, "sandbox.pause", "pause", rc, err, "");
    err = NULL;
    rc = abx_sandbox_resume(s, 120, &err);
    row(t, "sandbox.pause", "resume", rc, err, "");
}

static int test_plugin(cli_ctx *ctx, const char *id)
{
    test_table t = {json_array(), false};
    abx_client_options co = {.provider = id};
    abx_client *c = NULL;
    abx_error *err = NULL;
    int rc = abx_client_new(&co, &c, &err);
    if (rc < 0) {
        json_decref(t.rows);
        return cli_fail_error(ctx, err, rc);
    }
    json_t *features = NULL;
    if (c->ops == &abx__provider_e2b) { /* a rest plugin: what abx's E2B client drives */
        features = json_pack("[s, s, s, s, s]", "sandbox.lifecycle", "sandbox.timeout", "exec.run", "exec.stream",
                             "files.rw");
    } else {
        abx_epp *e = NULL;
        rc = abx__epp_start(id, &e, &err);
        if (rc < 0) {
            abx_client_free(c);
            json_decref(t.rows);
            return cli_fail_error(ctx, err, rc);
        }
        features = json_incref(abx__epp_features(e));
        abx__epp_stop(e);
    }
    bool lifecycle = false, timeout_cap = false, exec_cap = false, files_cap = false, stream_cap = false,
         process_cap = false, ports_cap = false, pause_cap = false;
    static const char *const known[] = {"sandbox.lifecycle", "sandbox.timeout", "sandbox.pause", "exec.run",
                                        "exec.stream", "process.manage", "files.rw", "ports.url"};
    size_t i;
    json_t *f;
    json_array_foreach(features, i, f) {
        const char *name = json_string_value(f) ? json_string_value(f) : "";
        lifecycle |= strcmp(name, "sandbox.lifecycle") == 0;
        timeout_cap |= strcmp(name, "sandbox.timeout") == 0;
        exec_cap |= strcmp(name, "exec.run") == 0;
        files_cap |= strcmp(name, "files.rw") == 0;
        stream_cap |= strcmp(name, "exec.stream") == 0;
        process_cap |= strcmp(name, "process.manage") == 0;
        ports_cap |= strcmp(name, "ports.url") == 0;
        pause_cap |= strcmp(name, "sandbox.pause") == 0;
        bool is_known = false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            is_known |= strcmp(name, known[k]) == 0;
        if (!is_known)
            row(&t, name, "(all)", 1, NULL, "declared, but EPP version 1 has no such capability");
    }
    if (process_cap && !stream_cap)
        row(&t, "process.manage", "(all)", -1, NULL, "declared without exec.stream: its processes cannot be started");
    json_decref(features);
    if (!lifecycle) {
        row(&t, "sandbox.lifecycle", "(all)", -1, NULL, "not declared: nothing else can be tested");
    } else {
        abx_sandbox *s = NULL;
        abx_create_options o = {.timeout_s = 120};
        rc = abx_sandbox_create(c, &o, &s, &err);
        row(&t, "sandbox.lifecycle", "create", rc, err, "");
        err = NULL;
        if (rc == 0) {
            abx_sandbox_info info;
            rc = abx_sandbox_get_info(s, &info, &err);
            bool same = rc == 0 && strcmp(info.sandbox_id, abx_sandbox_id(s)) == 0;
            abx_sandbox_info_clear(&info);
            row(&t, "sandbox.lifecycle", "get", rc < 0 ? rc : same ? 0 : -1, err, same ? "" : "another id came back");
            err = NULL;
            abx_sandbox_info *items = NULL;
            size_t n = 0;
            rc = abx_list(c, NULL, 100, 0, &items, &n, &err);
            bool listed = false;
            for (size_t k = 0; rc == 0 && k < n; k++)
                listed |= strcmp(items[k].sandbox_id, abx_sandbox_id(s)) == 0;
            abx_sandbox_info_list_free(items, n);
            row(&t, "sandbox.lifecycle", "list", rc < 0 ? rc : listed ? 0 : -1, err, listed ? "" : "not listed");
            err = NULL;
            if (timeout_cap) {
                rc = abx_sandbox_set_timeout(s, 600, &err);
                row(&t, "sandbox.timeout", "set_timeout", rc, err, "");
                err = NULL;
            }
            if (exec_cap)
                test_exec(&t, s);
            if (stream_cap)
                test_stream(&t, s, process_cap);
            if (stream_cap && process_cap)
                test_processes(&t, s);
            if (files_cap)
                test_files(&t, s);
            if (ports_cap)
                test_ports(&t, s);
            if (pause_cap)
                test_pause(&t, s);
            rc = abx_sandbox_kill(s, &err);
            row(&t, "sandbox.lifecycle", "kill", rc, err, "");
            err = NULL;
            abx_sandbox_info gone;
            rc = abx_sandbox_get_info(s, &gone, &err);
            if (rc == 0)
                abx_sandbox_info_clear(&gone);
            row(&t, "sandbox.lifecycle", "get after kill", rc < 0 && abx_error_code(err) == ABX_ENOTFOUND ? 0 : -1, NULL,
                rc < 0 && abx_error_code(err) == ABX_ENOTFOUND ? "" : "a killed sandbox still answers (want E8002)");
            abx_error_free(err);
            abx_sandbox_free(s);
        }
    }
    abx_client_free(c);
    if (ctx->json) {
        cli_print_json(json_pack("{s:s, s:b, s:o}", "id", id, "ok", !t.failed, "results", t.rows));
    } else {
        printf("%-20s %-20s %-9s %s\n", "CAPABILITY", "STEP", "RESULT", "DETAIL");
        json_t *r;
        json_array_foreach(t.rows, i, r)
            printf("%-20s %-20s %-9s %s\n", json_string_value(json_object_get(r, "capability")),
                   json_string_value(json_object_get(r, "step")), json_string_value(json_object_get(r, "status")),
                   json_string_value(json_object_get(r, "detail")));
        json_decref(t.rows);
    }
    return t.failed ? CLI_EXIT_ERROR : 0;
}

int cmd_provider(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    install_args a = {0};
    bool purge = false;
    const cli_flag flags[] = {
        {"--link", CLI_BOOL, &a.link, 0, 0, NULL, 0, NULL},
        {"--yes", CLI_BOOL, &a.yes, 0, 0, NULL, 0, NULL},
        {"--force", CLI_BOOL, &a.force, 0, 0, NULL, 0, NULL},
        {"--purge", CLI_BOOL, &purge, 0, 0, NULL, 0, NULL},
    };
    int rc = cli_parse(ctx, "provider", cmd_provider_help, argc, argv, flags, sizeof flags / sizeof flags[0], pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    const char *op = npos ? pos[0] : "";
    if (strcmp(op, "install") == 0 && npos == 2)
        return install(ctx, pos[1], &a);
    if (strcmp(op, "list") == 0 && npos == 1)
        return list(ctx);
    if (strcmp(op, "remove") == 0 && npos == 2)
        return remove_plugin(ctx, pos[1], purge);
    if (strcmp(op, "doctor") == 0 && npos == 2)
        return doctor(ctx, pos[1]);
    if (strcmp(op, "test") == 0 && npos == 2)
        return test_plugin(ctx, pos[1]);
    return cli_fail(ctx, ABX_EUSAGE, "usage: abx provider install SOURCE | list | remove ID | doctor ID | test ID");
}
