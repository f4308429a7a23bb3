/*
 * log.h - structured JSON log lines on stderr, one object per line.
 *
 * Every line carries "ts", "level", "msg" and, when the calling thread is
 * serving a request, that request's "request_id" (set with log_set_request_id
 * by the HTTP layer).  Only server/ and handlers/ log; pipeline code returns
 * errors instead.
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
 * Write one line.  fields (may be NULL) is an object whose members are added
 * to the line; the reference is stolen.
 */
void log_json(enum log_level level, const char *msg, json_t *fields);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
