/*
 * model_client_internal.h - what the files of model_client share (not for
 * use outside pipeline/models/): the request that the transport
 * (model_client_http.c) runs for the JSON calls (model_client.c).
 */
#ifndef T2S_MODEL_CLIENT_INTERNAL_H
#define T2S_MODEL_CLIENT_INTERNAL_H

#include "common/contract.h"
#include "pipeline/models/model_client.h"

#include <stddef.h>

/* One request, retried as the header of model_client.h describes. */
struct mc_request {
	const struct model_endpoint *ep;
	const char *path; /* "/chat/completions" */
	const char *body; /* NULL: GET */
	size_t body_len;
	long timeout_ms;
	long connect_timeout_ms;
	int retries;
	size_t body_max; /* largest response body read: MODEL_BODY_MAX unless the call lowers it */
};

/* Milliseconds on the monotonic clock. */
double mc_now_ms(void);

/* ep's stage name for messages ("?" when it has none). */
const char *mc_stage_name(const struct model_endpoint *ep);

/* Fill rq's limits from ep (defaults for unset values). */
void mc_request_init(struct mc_request *rq, const struct model_endpoint *ep, const char *path);

/*
 * Run rq until a 2xx arrives or attempts are over.  On success *ret_body is
 * the malloc'd, NUL-terminated body (caller frees) and *ret_len its length.
 * stats->attempts, ->http_status and ->elapsed_ms are updated either way.
 */
T2S_MUST_CHECK
int mc_perform(const struct mc_request *rq, char **ret_body, size_t *ret_len, struct model_call_stats *stats,
	       struct t2s_error *err);

#endif
