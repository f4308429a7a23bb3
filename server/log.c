/*
 * log.c - JSON lines on stderr (see log.h).  One fputs per line under a lock
 * so lines of concurrent requests never interleave.
 */
#include "server/log.h"

#include "common/clock.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum log_level min_level = LOG_INFO;
static _Thread_local const char *current_request_id;
static _Thread_local const char *current_traceparent;
static _Thread_local const char *current_caller;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level_name(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(name, level_names[i]) == 0)
			min_level = (enum log_level)i;
}

void log_set_request_id(const char *request_id)
{
	current_request_id = request_id;
	if (!request_id)
		current_traceparent = current_caller = NULL;
}

void log_set_caller(const char *caller)
{
	current_caller = caller;
}

void log_set_traceparent(const char *traceparent)
{
	current_traceparent = traceparent && *traceparent ? traceparent : NULL;
}

void log_json(enum log_level level, const char *msg, json_t *fields)
{
	if (level < min_level) {
		json_decref(fields);
		return;
	}
	char ts[40];
	clock_rfc3339(ts, sizeof(ts));
	json_t *line = json_object();
	json_object_set_new(line, "ts", json_string(ts));
	json_object_set_new(line, "level", json_string(level_names[level]));
	json_object_set_new(line, "msg", json_string(msg ? msg : ""));
	if (current_request_id)
		json_object_set_new(line, "request_id", json_string(current_request_id));
	if (current_caller)
		json_object_set_new(line, "caller", json_string(current_caller));
	if (current_traceparent) {
		/* version-trace_id-parent_id-flags: the trace id is characters 3..34 */
		json_object_set_new(line, "traceparent", json_string(current_traceparent));
		json_object_set_new(line, "trace_id", json_stringn(current_traceparent + 3, 32));
	}
	if (fields)
		json_object_update(line, fields);
	json_decref(fields);
	char *text = json_dumps(line, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(line);
	if (!text)
		return;
	pthread_mutex_lock(&log_lock);
	fputs(text, stderr);
	fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&log_lock);
	free(text);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (level < min_level)
		return;
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_json(level, buf, NULL);
}
