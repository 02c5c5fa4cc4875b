/* fuzz-shim.c: the shim's decoding of client requests (shim_decode.c):
 * Connect envelopes and JSON bodies with the shape checks the process API
 * applies to them, Basic authorization headers, user names from query
 * strings and signal names. The first input byte picks the decoder. */
#include "shim_decode.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_request(json_t *req)
{
    json_t *proc = json_object_get(req, "process");
    (void)abx__shim_string_map_ok(json_object_get(proc, "envs"));
    (void)abx__shim_string_array_ok(json_object_get(proc, "args"));
    json_t *sel = json_object_get(proc, "selector");
    (void)json_integer_value(json_object_get(sel ? sel : proc, "pid"));
    (void)abx__shim_signal_from_name(json_string_value(json_object_get(req, "signal")));
    json_decref(req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    char *text = malloc(n + 1);
    memcpy(text, p, n);
    text[n] = '\0';
    unsigned uid = 12345;
    switch (data[0] % 5) {
    case 0:
        check_request(abx__shim_connect_unwrap(p, n));
        break;
    case 1:
        check_request(abx__shim_json_body(p, n));
        break;
    case 2:
        if (abx__shim_user_from_basic(text, 1000, &uid) == 0 && uid != 0 && uid != 1000)
            abort();
        break;
    case 3:
        if (abx__shim_user_from_name(text, 1000, &uid) == 0 && uid != 0 && uid != 1000)
            abort();
        break;
    default:
        if (abx__shim_signal_from_name(text) == 0)
            abort();
    }
    free(text);
    return 0;
}
