/*
 * fallback.h - how a stage says it answered by another path than the one
 * configured or asked for: one entry per fallback, counted in /metrics and
 * rendered the same way by every endpoint that reports it.
 *
 * An entry is {stage, reason, detail}:
 *   stage   where it happened: "embed" (models.embed could not serve: the
 *           built-in lexical embedder scored the request), "link_llm" (the
 *           link model gave no usable table: vector linking answered);
 *   reason  a short stable code, for machines (see FALLBACK_* below);
 *   detail  one sentence for people (the model server's error, what was
 *           used instead); never holds an API key.
 *
 * Metric: text2sqld_fallbacks_total{stage, reason}, one per entry added.
 * The families are registered on first use; every function may be called
 * from many threads at once.
 */
#ifndef T2S_FALLBACK_H
#define T2S_FALLBACK_H

#include "pipeline/models/model_client.h"

#include <jansson.h>
#include <stddef.h>

/* Reason codes (static strings; documented in openapi/openapi.json, schema Fallback). */
#define FALLBACK_UNREACHABLE "unreachable"        /* the server could not be reached (refused, unresolved) */
#define FALLBACK_TIMEOUT "timeout"                /* no answer within timeout_ms and retries */
#define FALLBACK_HTTP_ERROR "http_error"          /* an HTTP error status (404, 5xx...) */
#define FALLBACK_BAD_RESPONSE "bad_response"      /* a 2xx answer that is not the expected JSON */
#define FALLBACK_DIMENSION "dimension_mismatch"   /* question vector of another dimension than the columns' */
#define FALLBACK_UNPARSEABLE "unparseable"        /* the link model's answers named no candidate table */
#define FALLBACK_NOT_CONFIGURED "not_configured"  /* the mode asked for needs a model that is not configured */

#define FALLBACK_DETAIL_MAX 320
#define FALLBACK_MAX 4 /* entries one stage result holds (more are counted, not kept) */

struct stage_fallback {
	const char *stage;  /* static */
	const char *reason; /* static, FALLBACK_* */
	char detail[FALLBACK_DETAIL_MAX];
};

/*
 * The reason code of a failed model call: rc its return value, http_status
 * the status of its last attempt (model_call_stats.http_status, 0 when no
 * answer arrived).
 */
const char *fallback_reason_of(int rc, int http_status);

/*
 * Append {stage, reason, printf detail} to list[0..*n) (capacity
 * FALLBACK_MAX; past it the entry is only counted) and add one to
 * text2sqld_fallbacks_total{stage, reason}.  stage and reason must be static.
 */
void fallback_add(struct stage_fallback *list, size_t *n, const char *stage, const char *reason, const char *fmt,
		  ...) __attribute__((format(printf, 5, 6)));

/* [{stage, reason, detail}] of list[0..n): a new reference (NULL only when out of memory). */
json_t *fallback_json(const struct stage_fallback *list, size_t n);

#endif
