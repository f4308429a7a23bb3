/*
 * fallback.c - see fallback.h.
 */
#include "pipeline/models/fallback.h"

#include "common/metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

static struct metric_family *m_fallbacks;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void register_families(void)
{
	static const char *const labels[] = {"stage", "reason", NULL};
	m_fallbacks = metrics_family("text2sqld_fallbacks_total",
				     "Requests a stage answered by its fallback path, by stage and reason.", METRIC_COUNTER,
				     labels, NULL, 0);
}

const char *fallback_reason_of(int rc, int http_status)
{
	if (rc == -T2S_ERR_UNAVAILABLE)
		return FALLBACK_UNREACHABLE;
	if (rc == -T2S_ERR_UPSTREAM_TIMEOUT || rc == -T2S_ERR_TIMEOUT)
		return FALLBACK_TIMEOUT;
	if (http_status >= 400)
		return FALLBACK_HTTP_ERROR;
	return FALLBACK_BAD_RESPONSE;
}

void fallback_add(struct stage_fallback *list, size_t *n, const char *stage, const char *reason, const char *fmt, ...)
{
	pthread_once(&once, register_families);
	const char *labels[] = {stage, reason, NULL};
	metrics_add(m_fallbacks, labels, 1);
	if (*n >= FALLBACK_MAX)
		return;
	struct stage_fallback *f = &list[(*n)++];
	f->stage = stage;
	f->reason = reason;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->detail, sizeof(f->detail), fmt, ap);
	va_end(ap);
}

json_t *fallback_json(const struct stage_fallback *list, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "stage", list[i].stage, "reason", list[i].reason,
						   "detail", list[i].detail));
	return a;
}
