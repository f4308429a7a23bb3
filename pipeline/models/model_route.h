/*
 * model_route.h - a stage's way to its model: the primary endpoint, an
 * optional fallback endpoint, and a circuit breaker in front of each.
 *
 * model_client.h stays the one retry layer: a routed call makes at most one
 * model_chat per endpoint (which retries as its endpoint says), and moves to
 * the fallback only when the primary call failed or its breaker is open.
 *
 * Breaker (one per endpoint, process-wide, thread-safe):
 *   closed     calls pass; `failures` consecutive failed calls open it;
 *   open       calls are refused at once (outcome "breaker_open") until
 *              `cooldown_ms` have passed since it opened;
 *   half-open  one trial call passes (others are refused while it runs);
 *              its success closes the breaker, its failure opens it again.
 * A failed call is one that ends in -T2S_ERR_UPSTREAM, -T2S_ERR_UPSTREAM_TIMEOUT
 * or -T2S_ERR_UNAVAILABLE (the server's fault); a refused argument is not.
 *
 * Metrics: text2sqld_model_breaker_state{stage,endpoint} (0 closed, 1 open,
 * 2 half-open), text2sqld_model_breaker_rejections_total{stage,endpoint},
 * and per call the stage metrics of stage_metrics.h.
 */
#ifndef T2S_MODEL_ROUTE_H
#define T2S_MODEL_ROUTE_H

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/models/model_client.h"

#include <pthread.h>
#include <stdbool.h>

enum breaker_state { BREAKER_CLOSED, BREAKER_OPEN, BREAKER_HALF_OPEN };

struct model_breaker {
	pthread_mutex_t lock;
	const char *stage, *endpoint; /* metric labels (static or config-owned strings) */
	int failures_to_open;
	long cooldown_ms;
	/* guarded by lock */
	enum breaker_state state;
	int consecutive_failures;
	double opened_at_ms;
	bool trial_in_flight;
};

/* Set up a closed breaker (labels borrowed). failures_to_open >= 1. */
void model_breaker_init(struct model_breaker *b, const char *stage, const char *endpoint, int failures_to_open,
			long cooldown_ms);
/* Accepts NULL and a zeroed, never initialised breaker. */
void model_breaker_release(struct model_breaker *b);
/* The current state, as a reader would see it now (open turns half-open once cooled down); b not NULL. */
enum breaker_state model_breaker_state(struct model_breaker *b);
const char *model_breaker_state_name(enum breaker_state s);

struct model_route {
	const struct model_endpoint *primary;  /* NULL: the stage has no model */
	struct model_breaker *primary_breaker; /* may be NULL: no breaker */
	const struct model_endpoint *fallback; /* NULL: none */
	struct model_breaker *fallback_breaker;
};

/* What one endpoint attempt of a routed call did. */
struct model_route_attempt {
	const char *endpoint; /* "primary" or "fallback" */
	const char *outcome;  /* "ok", "breaker_open", or the error slug ("upstream-timeout", ...) */
	int rc;
	struct model_call_stats stats;
};

#define MODEL_ROUTE_MAX_ATTEMPTS 2

/*
 * *ret = a copy of ep whose calls end by deadline_ms (absolute, clock_now_ms;
 * <= 0: ep as is): its timeout_ms is cut to the time left and its retries
 * to as many as fit, so that model_client's whole budget (timeout_ms *
 * (retries + 1)) ends by the deadline.  The copy borrows ep's strings.
 * Returns false (and *ret is ep as is) when no time is left.
 */
bool model_endpoint_fit(const struct model_endpoint *ep, double deadline_ms, struct model_endpoint *ret);

/*
 * Chat through the route: the primary unless its breaker refuses, then the
 * fallback when the primary failed or was refused.
 *
 * deadline_ms: absolute time (clock_now_ms) by which the call must end; <= 0
 *   for none.  Each endpoint's timeout and retries are cut to fit it; with no
 *   time left the call fails with -T2S_ERR_UPSTREAM_TIMEOUT without calling.
 * ret_text: on success, malloc'd answer (caller frees).
 * ret_attempts / ret_n_attempts: written on success and failure alike (up to
 *   MODEL_ROUTE_MAX_ATTEMPTS entries), for traces and metrics.
 * Errors: the last attempt's error; -T2S_ERR_UNAVAILABLE "breaker open" when
 * every endpoint refused; -T2S_ERR_UNAVAILABLE when r->primary is NULL.
 */
T2S_MUST_CHECK
int model_route_chat(const struct model_route *r, const struct model_message *msgs, size_t n_msgs,
		     double deadline_ms, char **ret_text, struct model_route_attempt *ret_attempts,
		     size_t *ret_n_attempts, struct t2s_error *err);

#endif
