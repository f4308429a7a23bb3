/*
 * trace.h - the W3C Trace Context (https://www.w3.org/TR/trace-context/) of
 * the request a thread is working for, so that the calls it makes to other
 * services (the model servers) carry the same trace.
 *
 * The HTTP layer validates an incoming `traceparent` (server/traceparent.h)
 * and sets it on the thread that handles the request (trace_set); library
 * code that makes an outgoing call asks for a child traceparent
 * (trace_child): the same version-00 trace id and flags, a fresh random
 * parent id (the span of that call).  Threads that help a request with its
 * own work (the worker pool, common/workers.h) take a copy with trace_get
 * and adopt it with trace_set, and clear it (trace_set(NULL)) before they
 * serve anything else.  Without a context nothing is forwarded: the service does not start
 * traces of its own.
 *
 * This file does not log and allocates nothing; every function is
 * thread-safe (the state is thread-local).
 */
#ifndef T2S_TRACE_H
#define T2S_TRACE_H

#include <stdbool.h>
#include <stddef.h>

/* Length of a version-00 traceparent ("00-" 32 hex "-" 16 hex "-" 2 hex). */
#define TRACE_PARENT_LEN 55

/* A copy of a thread's trace context: traceparent[0] == '\0' when none. */
struct trace_context {
	char traceparent[TRACE_PARENT_LEN + 1];
};

/*
 * Make traceparent (a validated header value, at least TRACE_PARENT_LEN
 * characters, of which the first TRACE_PARENT_LEN are kept) this thread's
 * context; NULL or "" clears it.  A value that is not shaped as
 * "vv-<32 hex>-<16 hex>-<2 hex>" clears it too.
 */
void trace_set(const char *traceparent);

/* This thread's context into *ret (empty when none). */
void trace_get(struct trace_context *ret);

/*
 * The traceparent an outgoing call of this thread carries: "00-<trace
 * id>-<new span id>-<flags>" into buf (size >= TRACE_PARENT_LEN + 1).
 * False, with buf empty, when the thread has no context.
 */
bool trace_child(char *buf, size_t size);

#endif
