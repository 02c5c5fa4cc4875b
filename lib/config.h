/* config.h: abx's configuration files and provider resolution.
 *
 * Files: ./.env and $ABX_HOME/.env (KEY=VALUE lines), and
 * $ABX_HOME/config.toml (a small TOML subset: [section] and [a.b] tables,
 * key = "string" | integer | true/false, # comments). Keys are addressed as
 * "section.key", e.g. "core.provider" or "providers.e2b.api_key".
 * Under config.toml lies the operator's file for the whole machine
 * (/etc/abx/config.toml, $ABX_SYSTEM_CONFIG overriding the path): its keys
 * hold unless config.toml sets them again, and nothing writes it.
 */
#ifndef ABX_CONFIG_H
#define ABX_CONFIG_H

#include "abx/abx.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define ABX_CONFIG_MAX_ENTRIES 256
#define ABX_SYSTEM_CONFIG_PATH "/etc/abx/config.toml"

typedef struct abx_kv {
    char key[128]; /* dotted: "core.provider" (toml) or "ABX_PROVIDER" (.env) */
    char value[1024];
    bool system; /* from the operator's file (abx__config_load), never written back */
} abx_kv;

typedef struct abx_kvs {
    abx_kv items[ABX_CONFIG_MAX_ENTRIES];
    size_t n;
} abx_kvs;

/* Parses .env text. Returns 0, or -ABX_ECONFIG with the line in *bad_line. */
int abx__env_parse(const char *text, abx_kvs *out, int *bad_line);
/* Parses TOML-subset text. Returns 0, or -ABX_ECONFIG with the line in *bad_line. */
int abx__toml_parse(const char *text, abx_kvs *out, int *bad_line);
/* The same subset into JSON (tables as nested objects, strings, integers,
 * booleans, and one-line arrays of strings): *out is the caller's. */
int abx__toml_parse_json(const char *text, json_t **out, int *bad_line);
/* Serialises entries as TOML (grouped by table, keys in order). Caller frees. */
char *abx__toml_format(const abx_kvs *kvs);
const char *abx__kvs_get(const abx_kvs *kvs, const char *key);
/* Sets (or adds) key; -ABX_ELIMIT when full, -ABX_EINVAL for a bad key. */
int abx__kvs_set(abx_kvs *kvs, const char *key, const char *value);
int abx__kvs_unset(abx_kvs *kvs, const char *key);
/* A dotted key of [A-Za-z0-9_-] parts. */
bool abx__config_key_valid(const char *key);

/* $ABX_HOME, else $HOME/.abx. Returns 0 or -ABX_ECONFIG. */
int abx__home(char *out, size_t len);
/* Refuses (E8025) a state directory that is not the caller's or is
 * writable by group or others, or one with such a parent (ssh's
 * StrictModes). A home that does not exist yet passes (abx creates it 0700). */
int abx__home_check(const char *home, abx_error **err);

/* The provider id, first match wins: arg > cli_flag > $ABX_PROVIDER >
 * ./.env ABX_PROVIDER > $ABX_HOME/.env ABX_PROVIDER > config.toml
 * [core] provider > "local". *source names where it came from. */
int abx__resolve_provider(const char *arg, const char *cli_flag, char *out, size_t len, const char **source,
                          abx_error **err);

/* Reads config.toml (missing = empty). */
int abx__config_load(abx_kvs *kvs, abx_error **err);
/* config.toml [network] default into out ("none" when unset); E8021 when
 * it is not none, internet or allowlist. */
int abx__config_network_default(char *out, size_t len, abx_error **err);
/* Checks a normal network policy's allow list against the walls
 * (netpolicy.h) with config.toml's [network] client_may_allow (CIDRs, a
 * TOML array or a comma-separated string) and pool (the sandbox pool's
 * CIDR): E8031 naming the entry; E8021 for a bad client_may_allow. */
int abx__config_net_walls(json_t *policy, const char *pool, abx_error **err);
/* Writes config.toml atomically (0600). */
int abx__config_save(const abx_kvs *kvs, abx_error **err);

#endif
