/*
 * traceparent.h - the W3C Trace Context header (https://www.w3.org/TR/trace-context/).
 *
 * A valid `traceparent` of a request is kept (its first 55 characters:
 * version-trace_id-parent_id-flags) and written into every log line of that
 * request as "traceparent" and "trace_id"; an invalid one is ignored, as the
 * recommendation asks.
 */
#ifndef T2S_TRACEPARENT_H
#define T2S_TRACEPARENT_H

#include <stdbool.h>
#include <stddef.h>

#define TRACEPARENT_LEN 55

/*
 * Check value (may be NULL) and, when valid, copy its version-00 form into
 * ret (size at least TRACEPARENT_LEN + 1) and return true; else ret = "".
 */
bool traceparent_parse(const char *value, char *ret, size_t ret_size);

#endif
