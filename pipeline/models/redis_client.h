/*
 * redis_client.h - connecting to the Redis of the config (hiredis 0.14).
 *
 * URL forms: redis://[[user]:password@]host[:port][/db] and
 * unix:///path/to/socket[?db=N].  Every connect and command is bounded by
 * timeout_ms.  The later cache layer builds on redis_connect; readiness uses
 * redis_ping.
 */
#ifndef T2S_REDIS_CLIENT_H
#define T2S_REDIS_CLIENT_H

#include "common/contract.h"
#include "common/error.h"

#include <hiredis/hiredis.h>

/* A connected, authenticated context with the database selected; caller redisFree()s it. */
T2S_MUST_CHECK
int redis_connect(const char *url, long timeout_ms, redisContext **ret, struct t2s_error *err);

/* Whether url is a Redis URL redis_connect can use (no connection is made): 0 or -T2S_ERR_INVALID. */
T2S_MUST_CHECK
int redis_url_check(const char *url, struct t2s_error *err);

/* Connect, PING, disconnect. */
T2S_MUST_CHECK
int redis_ping(const char *url, long timeout_ms, struct t2s_error *err);

#endif
