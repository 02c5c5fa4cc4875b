/* prom.h: Prometheus' text exposition format (version 0.0.4), written
 * into a bounded abx_buf (base/prom.c): a family's HELP and TYPE lines,
 * then its samples, each label value escaped as the format asks (\\, \"
 * and \n), so that an id, a template name or a tenant never breaks a line
 * or adds a series of its own.
 *
 * Ownership: the caller owns the buffer; nothing here allocates but it.
 */
#ifndef ABX_PROM_H
#define ABX_PROM_H

#include "buf.h"

#define ABX_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* "# HELP name help\n# TYPE name type\n"; type "counter", "gauge" or
 * "histogram". 0, or -ABX_ETOOBIG / -ABX_ENOMEM. */
int abx__prom_family(abx_buf *b, const char *name, const char *type, const char *help);
/* name{k="v",...} value\n, labels NULL or {"k", "v", ..., NULL} (a NULL
 * value writes ""). Integer and real values; a real prints as Prometheus
 * reads it (+Inf, -Inf, NaN). 0, or -ABX_ETOOBIG / -ABX_ENOMEM. */
int abx__prom_sample_u(abx_buf *b, const char *name, const char *const *labels, unsigned long long value);
int abx__prom_sample_f(abx_buf *b, const char *name, const char *const *labels, double value);
/* value with \\, \" and \n escaped, appended to b. */
int abx__prom_escape(abx_buf *b, const char *value);

#endif
