/*
 * trace.c - the thread's W3C trace context and child span ids (see trace.h).
 */
#include "common/trace.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static _Thread_local char current[TRACE_PARENT_LEN + 1];
static _Thread_local uint64_t rng_state;

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

void trace_set(const char *traceparent)
{
	current[0] = '\0';
	if (!traceparent || strnlen(traceparent, TRACE_PARENT_LEN) < TRACE_PARENT_LEN)
		return;
	const char *t = traceparent;
	if (!is_hex(t, 2) || t[2] != '-' || !is_hex(t + 3, 32) || t[35] != '-' || !is_hex(t + 36, 16) || t[52] != '-' ||
	    !is_hex(t + 53, 2))
		return;
	memcpy(current, t, TRACE_PARENT_LEN);
	current[TRACE_PARENT_LEN] = '\0';
}

void trace_get(struct trace_context *ret)
{
	memcpy(ret->traceparent, current, sizeof(ret->traceparent));
}

/* 64 random bits, never 0: the kernel's when it answers, else a per-thread xorshift seeded from the clock. */
static uint64_t random_span(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v) && v)
		return v;
	if (!rng_state) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		rng_state = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&v;
		if (!rng_state)
			rng_state = 0x9e3779b97f4a7c15u;
	}
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state ? rng_state : 1;
}

bool trace_child(char *buf, size_t size)
{
	if (size)
		buf[0] = '\0';
	if (!current[0] || size < TRACE_PARENT_LEN + 1)
		return false;
	/* version 00: the trace id and the flags (01 = sampled) as received, our span as the parent */
	snprintf(buf, size, "00-%.32s-%016llx-%.2s", current + 3, (unsigned long long)random_span(), current + 53);
	return true;
}
