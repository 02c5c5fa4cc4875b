/* dockerfile.c: the Dockerfile subset of `abx template build`, parsed into
 * steps, and the build-time variable expansion (dockerfile.h).
 *
 * Owns: logical lines (continuations, comments), keywords, word splitting
 * with quotes, the JSON array form, each instruction's arguments and
 * flags, and the errors that name the line. Does not own what the steps
 * do (lib/local/template_build.c). Input is the user's file: every loop is
 * bounded by its length, every list by a constant of dockerfile.h.
 */
#include "dockerfile.h"

#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPAND_MAX (64u * 1024)

static const char *const keywords[] = {
    [DF_FROM] = "FROM",
    [DF_RUN] = "RUN",
    [DF_COPY] = "COPY",
    [DF_ADD] = "ADD",
    [DF_ENV] = "ENV",
    [DF_ARG] = "ARG",
    [DF_WORKDIR] = "WORKDIR",
    [DF_USER] = "USER",
    [DF_CMD] = "CMD",
    [DF_ENTRYPOINT] = "ENTRYPOINT",
    [DF_HEALTHCHECK] = "HEALTHCHECK",
    [DF_EXPOSE] = "EXPOSE",
    [DF_LABEL] = "LABEL",
    [DF_MAINTAINER] = "MAINTAINER",
    [DF_STOPSIGNAL] = "STOPSIGNAL",
    [DF_SHELL] = "SHELL",
    [DF_VOLUME] = "VOLUME",
};

const char *abx__dockerfile_keyword(df_kind kind)
{
    return (size_t)kind < sizeof keywords / sizeof keywords[0] ? keywords[kind] : "?";
}

typedef struct parse_ctx {
    char *why;
    size_t whylen;
    unsigned line;
} parse_ctx;

__attribute__((format(printf, 2, 3))) static int fail(parse_ctx *p, const char *fmt, ...)
{
    int n = snprintf(p->why, p->whylen, "line %u: ", p->line);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < p->whylen)
        vsnprintf(p->why + n, p->whylen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- words -------------------------------------------------------------- */

static int push_arg(df_step *s, char *word)
{
    if (!word || s->nargs >= ABX_DOCKERFILE_MAX_ARGS) {
        free(word);
        return -1;
    }
    char **grown = realloc(s->args, (s->nargs + 1) * sizeof *grown);
    if (!grown) {
        free(word);
        return -1;
    }
    s->args = grown;
    s->args[s->nargs++] = word;
    return 0;
}

/* Splits in into words the way the shell would quote them: "..." and '...'
 * group, a backslash escapes the next character. A '$' that must stay
 * literal (single quotes, or escaped) is kept as "\$" for the expansion. */
static int split_words(parse_ctx *p, const char *in, df_step *s)
{
    size_t n = strlen(in);
    for (size_t i = 0; i < n;) {
        while (i < n && isspace((unsigned char)in[i]))
            i++;
        if (i == n)
            break;
        char *w = malloc(2 * (n - i) + 1);
        size_t o = 0;
        if (!w)
            return fail(p, "out of memory");
        char quote = 0;
        for (; i < n && (quote || !isspace((unsigned char)in[i])); i++) {
            char c = in[i];
            if (quote == '\'') {
                if (c == '\'')
                    quote = 0;
                else if (c == '$') {
                    w[o++] = '\\';
                    w[o++] = '$';
                } else
                    w[o++] = c;
            } else if (c == '\\' && i + 1 < n) {
                if (in[i + 1] == '$')
                    w[o++] = '\\';
                w[o++] = in[++i];
            } else if (quote == '"' && c == '"') {
                quote = 0;
            } else if (!quote && (c == '"' || c == '\'')) {
                quote = c;
            } else {
                w[o++] = c;
            }
        }
        if (quote) {
            free(w);
            return fail(p, "unterminated quote");
        }
        w[o] = '\0';
        if (push_arg(s, w) < 0)
            return fail(p, "too many words (at most %d)", ABX_DOCKERFILE_MAX_ARGS);
    }
    return 0;
}

/* The JSON array form ["a", "b"]: 1 when rest is one, 0 when it is not
 * (the shell form then), -1 on an array of something other than strings. */
static int json_form(parse_ctx *p, const char *rest, df_step *s)
{
    if (rest[0] != '[')
        return 0;
    json_t *a = json_loads(rest, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_array(a)) {
        json_decref(a);
        return 0;
    }
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v) || push_arg(s, strdup(json_string_value(v))) < 0) {
            json_decref(a);
            return fail(p, "%s: the array form takes strings only (at most %d)", keywords[s->kind],
                        ABX_DOCKERFILE_MAX_ARGS);
        }
    }
    json_decref(a);
    return 1;
}

/* ---- instructions ------------------------------------------------------- */

static bool env_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 255 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return false;
    return true;
}

/* RUN, CMD, ENTRYPOINT: the array form, or the rest of the line for sh -c. */
static int parse_command(parse_ctx *p, const char *rest, df_step *s)
{
    int rc = json_form(p, rest, s);
    if (rc < 0)
        return -1;
    s->exec_form = rc == 1;
    if (!s->exec_form && push_arg(s, strdup(rest)) < 0)
        return fail(p, "out of memory");
    if (s->nargs == 0 || !s->args[0][0])
        return fail(p, "%s: a command is required", keywords[s->kind]);
    return 0;
}

/* ENV A=1 B="two words", or the old ENV NAME the rest of the line. */
static int parse_env(parse_ctx *p, const char *rest, df_step *s)
{
    const char *sp = rest + strcspn(rest, " \t");
    const char *eq = strchr(rest, '=');
    if (!eq || eq > sp) { /* the old form */
        if (!*sp || !env_name_ok(rest, (size_t)(sp - rest)))
            return fail(p, "ENV: NAME=value expected");
        size_t nlen = (size_t)(sp - rest);
        while (isspace((unsigned char)*sp))
            sp++;
        if (push_arg(s, strndup(rest, nlen)) < 0 || push_arg(s, strdup(sp)) < 0)
            return fail(p, "out of memory");
        return 0;
    }
    df_step words = {.kind = DF_ENV};
    int rc = split_words(p, rest, &words);
    for (size_t i = 0; rc == 0 && i < words.nargs; i++) {
        char *w = words.args[i];
        char *e = strchr(w, '=');
        if (!e || !env_name_ok(w, (size_t)(e - w))) {
            rc = fail(p, "ENV: '%.64s' is not NAME=value", w);
            break;
        }
        if (push_arg(s, strndup(w, (size_t)(e - w))) < 0 || push_arg(s, strdup(e + 1)) < 0)
            rc = fail(p, "ENV: too many variables");
    }
    for (size_t i = 0; i < words.nargs; i++)
        free(words.args[i]);
    free(words.args);
    return rc;
}

/* LABEL k=v "k 2"="v 2" ...: keys any non-empty word. */
static int parse_label(parse_ctx *p, const char *rest, df_step *s)
{
    df_step words = {.kind = DF_LABEL};
    int rc = split_words(p, rest, &words);
    if (rc == 0 && words.nargs == 0)
        rc = fail(p, "LABEL: KEY=value expected");
    for (size_t i = 0; rc == 0 && i < words.nargs; i++) {
        char *w = words.args[i];
        char *e = strchr(w, '=');
        if (!e || e == w)
            rc = fail(p, "LABEL: '%.64s' is not KEY=value", w);
        else if (push_arg(s, strndup(w, (size_t)(e - w))) < 0 || push_arg(s, strdup(e + 1)) < 0)
            rc = fail(p, "LABEL: too many labels");
    }
    for (size_t i = 0; i < words.nargs; i++)
        free(words.args[i]);
    free(words.args);
    return rc;
}

/* EXPOSE ports, VOLUME paths (or VOLUME's array): one or more words. */
static int parse_words(parse_ctx *p, const char *rest, df_step *s)
{
    int rc = s->kind == DF_VOLUME ? json_form(p, rest, s) : 0;
    if (rc < 0 || (rc == 0 && split_words(p, rest, s) < 0))
        return -1;
    if (s->nargs == 0)
        return fail(p, "%s: an argument is required", keywords[s->kind]);
    return 0;
}

/* SHELL ["executable", "parameters"]: the array form only, as Docker. */
static int parse_shell(parse_ctx *p, const char *rest, df_step *s)
{
    int rc = json_form(p, rest, s);
    if (rc < 0)
        return -1;
    if (rc == 0 || s->nargs == 0)
        return fail(p, "SHELL: the JSON array form is required, e.g. SHELL [\"/bin/bash\", \"-c\"]");
    s->exec_form = true;
    return 0;
}

static int parse_arg(parse_ctx *p, const char *rest, df_step *s)
{
    df_step words = {.kind = DF_ARG};
    int rc = split_words(p, rest, &words);
    if (rc == 0 && words.nargs != 1)
        rc = fail(p, "ARG: one NAME or NAME=default per line");
    if (rc == 0) {
        char *w = words.args[0];
        char *e = strchr(w, '=');
        size_t nlen = e ? (size_t)(e - w) : strlen(w);
        if (!env_name_ok(w, nlen))
            rc = fail(p, "ARG: '%.64s' is not a variable name", w);
        else if (push_arg(s, strndup(w, nlen)) < 0 || (e && push_arg(s, strdup(e + 1)) < 0))
            rc = fail(p, "out of memory");
        s->has_default = e != NULL;
    }
    for (size_t i = 0; i < words.nargs; i++)
        free(words.args[i]);
    free(words.args);
    return rc;
}

/* COPY/ADD [--chown=U[:G]] SRC... DEST, or the array form. */
static int parse_copy(parse_ctx *p, const char *rest, df_step *s)
{
    while (strncmp(rest, "--", 2) == 0) {
        size_t len = strcspn(rest, " \t");
        if (strncmp(rest, "--chown=", 8) == 0 && len > 8 && !s->chown) {
            s->chown = strndup(rest + 8, len - 8);
        } else if (strncmp(rest, "--chmod=", 8) == 0 && len > 8 && len < 8 + 8 && !s->chmod) {
            s->chmod = strndup(rest + 8, len - 8);
        } else if (strncmp(rest, "--from=", 7) == 0 && len > 7 && len < 7 + 64 && !s->from &&
                   s->kind == DF_COPY) {
            s->from = strndup(rest + 7, len - 7);
        } else {
            return fail(p, "%s: the flag '%.*s' is not supported (--chown, --chmod and COPY --from are)",
                        keywords[s->kind], (int)(len < 64 ? len : 64), rest);
        }
        rest += len;
        while (isspace((unsigned char)*rest))
            rest++;
    }
    int rc = json_form(p, rest, s);
    if (rc < 0 || (rc == 0 && split_words(p, rest, s) < 0))
        return -1;
    if (s->nargs < 2)
        return fail(p, "%s: SOURCE... DESTINATION expected", keywords[s->kind]);
    for (size_t i = 0; i + 1 < s->nargs; i++)
        if (strstr(s->args[i], "://"))
            return fail(p, "%s: sources from URLs are not supported (RUN curl ... does that)",
                        keywords[s->kind]);
    return 0;
}

/* "1s", "500ms", "2m", "1m30s" as milliseconds; -1 when it is none. */
static long parse_duration(const char *s)
{
    long total = 0;
    if (!*s)
        return -1;
    while (*s) {
        if (!isdigit((unsigned char)*s))
            return -1;
        long v = 0;
        while (isdigit((unsigned char)*s) && v < 100000000)
            v = v * 10 + (*s++ - '0');
        long unit = strncmp(s, "ms", 2) == 0 ? 1
                    : *s == 's'              ? 1000
                    : *s == 'm'              ? 60000
                    : *s == 'h'              ? 3600000
                                             : -1;
        if (unit < 0 || v >= 100000000)
            return -1;
        s += unit == 1 ? 2 : 1;
        total += v * unit;
        if (total > 86400000)
            return -1;
    }
    return total;
}

static int parse_healthcheck(parse_ctx *p, const char *rest, df_step *s)
{
    s->interval_ms = 500;
    s->timeout_ms = 60000;
    while (strncmp(rest, "--", 2) == 0) {
        size_t len = strcspn(rest, " \t");
        char opt[64];
        snprintf(opt, sizeof opt, "%.*s", (int)(len < 63 ? len : 63), rest);
        char *eq = strchr(opt, '=');
        long ms = eq ? parse_duration(eq + 1) : -1;
        if (eq && strncmp(opt, "--interval=", 11) == 0 && ms > 0)
            s->interval_ms = (unsigned)ms;
        else if (eq && strncmp(opt, "--start-period=", 15) == 0 && ms > 0)
            s->timeout_ms = (unsigned)ms;
        else if (!(eq && strncmp(opt, "--timeout=", 10) == 0 && ms > 0) &&
                 !(eq && strncmp(opt, "--retries=", 10) == 0 &&
                   strspn(eq + 1, "0123456789") == strlen(eq + 1) && eq[1]))
            return fail(p, "HEALTHCHECK: '%s' (--interval, --timeout, --start-period, --retries)", opt);
        rest += len;
        while (isspace((unsigned char)*rest))
            rest++;
    }
    if (strcasecmp(rest, "NONE") == 0) {
        s->healthcheck_none = true;
        return 0;
    }
    if (strncasecmp(rest, "CMD", 3) != 0 || (rest[3] && !isspace((unsigned char)rest[3])))
        return fail(p, "HEALTHCHECK: CMD command or NONE expected");
    rest += 3;
    while (isspace((unsigned char)*rest))
        rest++;
    return parse_command(p, rest, s);
}

static int parse_from(parse_ctx *p, const char *rest, df_step *s)
{
    if (strncmp(rest, "--", 2) == 0)
        return fail(p, "FROM: flags (%.32s) are not supported", rest);
    if (split_words(p, rest, s) < 0)
        return -1;
    if (s->nargs == 3 && strcasecmp(s->args[1], "AS") == 0) { /* a stage's name, for FROM and COPY --from */
        free(s->args[1]);
        s->stage = s->args[2];
        s->nargs = 1;
        if (!s->stage[0] || strlen(s->stage) > 63 ||
            strspn(s->stage, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                strlen(s->stage))
            return fail(p, "FROM ... AS NAME: a name of letters, digits, '.', '_' and '-' (at most 63)");
    }
    if (s->nargs != 1)
        return fail(p, "FROM: IMAGE [AS NAME] expected");
    return 0;
}

static int parse_single(parse_ctx *p, const char *rest, df_step *s)
{
    if (!*rest)
        return fail(p, "%s: an argument is required", keywords[s->kind]);
    df_step words = {.kind = s->kind};
    int rc = split_words(p, rest, &words);
    if (rc == 0 && words.nargs != 1)
        rc = fail(p, "%s: one argument expected (quote a value with spaces)", keywords[s->kind]);
    if (rc == 0) {
        rc = push_arg(s, words.args[0]) < 0 ? fail(p, "out of memory") : 0;
        words.nargs = 0;
    }
    for (size_t i = 0; i < words.nargs; i++)
        free(words.args[i]);
    free(words.args);
    return rc;
}

static int kind_of(const char *word, size_t len, df_kind *kind)
{
    for (size_t k = 0; k < sizeof keywords / sizeof keywords[0]; k++)
        if (strlen(keywords[k]) == len && strncasecmp(keywords[k], word, len) == 0) {
            *kind = (df_kind)k;
            return 0;
        }
    return -1;
}

static void step_free(df_step *s)
{
    for (size_t i = 0; i < s->nargs; i++)
        free(s->args[i]);
    free(s->args);
    free(s->text);
    free(s->chown);
    free(s->from);
    free(s->chmod);
    free(s->stage);
    memset(s, 0, sizeof *s);
}

static int parse_step(parse_ctx *p, const char *logical, abx_dockerfile *df, bool *seen_from)
{
    size_t klen = strcspn(logical, " \t");
    df_kind kind;
    if (klen == 7 && strncasecmp(logical, "ONBUILD", 7) == 0)
        return fail(p, "ONBUILD is not supported: a template runs no instructions in the builds made FROM it "
                       "(write them in those Dockerfiles)");
    if (kind_of(logical, klen, &kind) < 0)
        return fail(p,
                    "'%.*s' is not an instruction abx supports (FROM, RUN, COPY, ADD, ENV, ARG, WORKDIR, "
                    "USER, CMD, ENTRYPOINT, HEALTHCHECK, EXPOSE, LABEL, MAINTAINER, STOPSIGNAL, SHELL, "
                    "VOLUME)",
                    (int)(klen < 32 ? klen : 32), logical);
    if (kind != DF_FROM && kind != DF_ARG && !*seen_from)
        return fail(p, "%s before FROM", keywords[kind]);
    if (df->n >= ABX_DOCKERFILE_MAX_STEPS)
        return fail(p, "too many instructions (at most %d)", ABX_DOCKERFILE_MAX_STEPS);
    const char *rest = logical + klen;
    while (isspace((unsigned char)*rest))
        rest++;
    df_step *s = &df->steps[df->n];
    *s = (df_step){.kind = kind, .line = p->line, .text = strdup(logical)};
    if (!s->text)
        return fail(p, "out of memory");
    int rc;
    switch (kind) {
    case DF_FROM:
        rc = parse_from(p, rest, s);
        *seen_from = true;
        break;
    case DF_RUN:
    case DF_CMD:
    case DF_ENTRYPOINT:
        rc = parse_command(p, rest, s);
        break;
    case DF_COPY:
    case DF_ADD:
        rc = parse_copy(p, rest, s);
        break;
    case DF_ENV:
        rc = parse_env(p, rest, s);
        break;
    case DF_ARG:
        rc = parse_arg(p, rest, s);
        break;
    case DF_HEALTHCHECK:
        rc = parse_healthcheck(p, rest, s);
        break;
    case DF_WORKDIR:
    case DF_USER:
    case DF_STOPSIGNAL:
        rc = parse_single(p, rest, s);
        break;
    case DF_MAINTAINER:
        rc = *rest ? (push_arg(s, strdup(rest)) < 0 ? fail(p, "out of memory") : 0)
                   : fail(p, "MAINTAINER: a name is required");
        break;
    case DF_LABEL:
        rc = parse_label(p, rest, s);
        break;
    case DF_EXPOSE:
    case DF_VOLUME:
        rc = parse_words(p, rest, s);
        break;
    case DF_SHELL:
        rc = parse_shell(p, rest, s);
        break;
    default:
        rc = fail(p, "unknown instruction");
        break;
    }
    if (rc < 0) {
        step_free(s);
        return -1;
    }
    df->n++;
    return 0;
}

/* Trailing whitespace off; true when the line then ends in a continuation. */
static bool continues(char *line, size_t *len)
{
    while (*len && isspace((unsigned char)line[*len - 1]))
        (*len)--;
    if (*len && line[*len - 1] == '\\') {
        (*len)--;
        return true;
    }
    return false;
}

int abx__dockerfile_parse(const char *text, size_t len, abx_dockerfile *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    parse_ctx p = {.why = why, .whylen = whylen, .line = 0};
    if (len > ABX_DOCKERFILE_MAX_BYTES)
        return fail(&p, "the Dockerfile is over %u bytes", ABX_DOCKERFILE_MAX_BYTES);
    if (memchr(text, '\0', len))
        return fail(&p, "the Dockerfile holds a NUL byte");
    out->steps = calloc(ABX_DOCKERFILE_MAX_STEPS, sizeof *out->steps);
    char *logical = malloc(len + 1);
    if (!out->steps || !logical) {
        free(logical);
        free(out->steps);
        out->steps = NULL;
        return fail(&p, "out of memory");
    }
    size_t llen = 0, pos = 0;
    unsigned lineno = 0, start = 0;
    bool seen_from = false;
    int rc = 0;
    while (rc == 0 && pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        lineno++;
        char *line = (char *)text + pos; /* read only: lengths, not writes */
        size_t n = end - pos;
        pos = end + 1;
        size_t lead = 0;
        while (lead < n && isspace((unsigned char)line[lead]))
            lead++;
        if (lead == n || line[lead] == '#') {
            if (llen == 0 && lead < n && strncasecmp(line + lead, "# escape=", 9) == 0 &&
                line[lead + 9] != '\\')
                rc = (p.line = lineno, fail(&p, "the escape directive: only '\\' is supported"));
            continue; /* blank lines and comments, also inside a continuation */
        }
        if (llen == 0)
            start = lineno;
        size_t from = llen ? 0 : lead; /* a continued line keeps its indentation, as docker's */
        size_t keep = n - from;
        memcpy(logical + llen, line + from, keep);
        bool more = continues(logical + llen, &keep);
        llen += keep;
        if (more && pos < len)
            continue;
        logical[llen] = '\0';
        p.line = start;
        rc = parse_step(&p, logical, out, &seen_from);
        llen = 0;
    }
    free(logical);
    if (rc == 0 && !seen_from)
        rc = (p.line = lineno ? lineno : 1,
              fail(&p, "no FROM: a Dockerfile starts with FROM (debian:bookworm-slim, "
                       "scratch, a template's name or an archive)"));
    if (rc < 0)
        abx__dockerfile_free(out);
    return rc;
}

void abx__dockerfile_free(abx_dockerfile *df)
{
    for (size_t i = 0; df->steps && i < df->n; i++)
        step_free(&df->steps[i]);
    free(df->steps);
    memset(df, 0, sizeof *df);
}

/* ---- expansion ---------------------------------------------------------- */

static const char *lookup(const df_vars *vars, const char *name, size_t n)
{
    for (size_t i = 0; vars && vars->pairs && vars->pairs[i]; i++)
        if (strncmp(vars->pairs[i], name, n) == 0 && vars->pairs[i][n] == '=')
            return vars->pairs[i] + n + 1;
    return NULL;
}

static bool put(char *out, size_t *o, const char *s, size_t n)
{
    if (*o + n >= EXPAND_MAX)
        return false;
    memcpy(out + *o, s, n);
    *o += n;
    return true;
}

char *abx__dockerfile_expand(const char *in, const df_vars *vars)
{
    char *out = malloc(EXPAND_MAX);
    size_t o = 0;
    if (!out)
        return NULL;
    for (const char *c = in; *c;) {
        bool ok = true;
        if (c[0] == '\\' && c[1] == '$') {
            ok = put(out, &o, "$", 1);
            c += 2;
        } else if (c[0] == '$' && c[1] == '{') {
            const char *close = strchr(c + 2, '}');
            const char *name = c + 2;
            size_t nlen = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
            if (!close || nlen == 0 || (name[nlen] != '}' && name[nlen] != ':')) {
                free(out);
                return NULL;
            }
            const char *v = lookup(vars, name, nlen);
            if (name[nlen] == ':') {
                char op = name[nlen + 1];
                const char *word = name + nlen + 2;
                if (op != '-' && op != '+') {
                    free(out);
                    return NULL;
                }
                bool set = v && *v;
                if ((op == '-' && !set) || (op == '+' && set))
                    ok = put(out, &o, word, (size_t)(close - word));
                else if (op == '-')
                    ok = put(out, &o, v, strlen(v));
            } else if (v) {
                ok = put(out, &o, v, strlen(v));
            }
            c = close + 1;
        } else if (c[0] == '$' && (isalpha((unsigned char)c[1]) || c[1] == '_')) {
            size_t nlen = strspn(c + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
            const char *v = lookup(vars, c + 1, nlen);
            if (v)
                ok = put(out, &o, v, strlen(v));
            c += 1 + nlen;
        } else {
            ok = put(out, &o, c, 1);
            c++;
        }
        if (!ok) {
            free(out);
            return NULL;
        }
    }
    out[o] = '\0';
    return out;
}
