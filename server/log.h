/*
 * log.h - structured JSON log lines on stderr, one object per line.
 *
 * Every line carries "ts", "level", "msg" and, when the calling thread is
 * serving a request, that request's "request_id" (set with log_set_request_id
 * by the HTTP layer), and its W3C "traceparent" when the client sent one.
 * Only server/ and handlers/ log; pipeline code returns errors instead.
 */
#ifndef T2S_LOG_H
#define T2S_LOG_H

#include <jansson.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Lines below level are dropped.  name: "debug", "info", "warn", "error". */
void log_set_level_name(const char *name);
/* Thread-local request id for following lines; NULL clears. The string must outlive its use. */
void log_set_request_id(const char *request_id);
/*
 * Thread-local W3C traceparent (validated, 55 characters) for following
 * lines, which then carry "traceparent" and "trace_id"; NULL or "" clears,
 * and so does log_set_request_id(NULL).  The string must outlive its use.
 */
void log_set_traceparent(const char *traceparent);

/*
 * Thread-local caller (an API key's name or a JWT's subject) for following
 * lines, which then carry "caller"; NULL clears, and so does
 * log_set_request_id(NULL).  The string must outlive its use.
 */
void log_set_caller(const char *caller);

/*
 * Write one line.  fields (may be NULL) is an object whose members are added
 * to the line; the reference is stolen.
 */
void log_json(enum log_level level, const char *msg, json_t *fields);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
