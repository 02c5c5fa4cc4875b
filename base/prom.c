/* prom.c: Prometheus' text exposition format, written into a bounded
 * buffer (prom.h). Owns the escaping of label values and the printing of
 * values; the names are the caller's (fixed strings, never input). */
#include "prom.h"
#include "abx/abx.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int abx__prom_escape(abx_buf *b, const char *value)
{
    int rc = 0;
    for (const char *p = value ? value : ""; *p && rc == 0; p++) {
        if (*p == '\\')
            rc = abx__buf_append(b, "\\\\", 2);
        else if (*p == '"')
            rc = abx__buf_append(b, "\\\"", 2);
        else if (*p == '\n')
            rc = abx__buf_append(b, "\\n", 2);
        else
            rc = abx__buf_append(b, p, 1);
    }
    return rc;
}

int abx__prom_family(abx_buf *b, const char *name, const char *type, const char *help)
{
    char line[600];
    int n = snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    if (n < 0 || (size_t)n >= sizeof line)
        return -ABX_ETOOBIG;
    return abx__buf_append(b, line, (size_t)n);
}

/* name{labels} (no value yet). */
static int sample_head(abx_buf *b, const char *name, const char *const *labels)
{
    int rc = abx__buf_append_str(b, name);
    for (size_t i = 0; rc == 0 && labels && labels[i]; i += 2) {
        rc = abx__buf_append_str(b, i == 0 ? "{" : ",");
        if (rc == 0)
            rc = abx__buf_append_str(b, labels[i]);
        if (rc == 0)
            rc = abx__buf_append(b, "=\"", 2);
        if (rc == 0)
            rc = abx__prom_escape(b, labels[i + 1]);
        if (rc == 0)
            rc = abx__buf_append(b, "\"", 1);
    }
    if (rc == 0 && labels && labels[0])
        rc = abx__buf_append(b, "}", 1);
    return rc;
}

int abx__prom_sample_u(abx_buf *b, const char *name, const char *const *labels, unsigned long long value)
{
    char v[32];
    snprintf(v, sizeof v, " %llu\n", value);
    int rc = sample_head(b, name, labels);
    return rc == 0 ? abx__buf_append_str(b, v) : rc;
}

int abx__prom_sample_f(abx_buf *b, const char *name, const char *const *labels, double value)
{
    char v[48];
    if (isnan(value))
        snprintf(v, sizeof v, " NaN\n");
    else if (isinf(value))
        snprintf(v, sizeof v, " %sInf\n", value > 0 ? "+" : "-");
    else
        snprintf(v, sizeof v, " %.9g\n", value);
    int rc = sample_head(b, name, labels);
    return rc == 0 ? abx__buf_append_str(b, v) : rc;
}
