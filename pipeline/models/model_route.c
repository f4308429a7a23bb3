/*
 * model_route.c - circuit breakers and primary/fallback routing of model
 * calls (see model_route.h).
 */
#include "pipeline/models/model_route.h"

#include "common/clock.h"
#include "common/limits.h"
#include "common/metrics.h"
#include "pipeline/models/stage_metrics.h"

#include <string.h>

static struct metric_family *m_state, *m_rejections;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

static void register_families(void)
{
	static const char *const labels[] = {"stage", "endpoint", NULL};
	m_state = metrics_family("text2sqld_model_breaker_state",
				 "Circuit breaker of each model endpoint: 0 closed, 1 open, 2 half-open.", METRIC_GAUGE,
				 labels, NULL, 0);
	m_rejections = metrics_family("text2sqld_model_breaker_rejections_total",
				      "Model calls refused because the endpoint's breaker was open.", METRIC_COUNTER,
				      labels, NULL, 0);
}

/* Publish b's state; call with b->lock held. */
static void publish_locked(struct model_breaker *b)
{
	const char *labels[] = {b->stage, b->endpoint, NULL};
	metrics_set(m_state, labels, (double)b->state);
}

void model_breaker_init(struct model_breaker *b, const char *stage, const char *endpoint, int failures_to_open,
			long cooldown_ms)
{
	pthread_once(&metrics_once, register_families);
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
	b->stage = stage;
	b->endpoint = endpoint;
	b->failures_to_open = failures_to_open > 0 ? failures_to_open : 1;
	b->cooldown_ms = cooldown_ms > 0 ? cooldown_ms : 1;
	b->state = BREAKER_CLOSED;
	publish_locked(b);
}

void model_breaker_release(struct model_breaker *b)
{
	if (b && b->stage) /* zeroed: never initialised */
		pthread_mutex_destroy(&b->lock);
}

const char *model_breaker_state_name(enum breaker_state s)
{
	return s == BREAKER_OPEN ? "open" : s == BREAKER_HALF_OPEN ? "half_open" : "closed";
}

/* Open turns half-open once cooled down; call with b->lock held. */
static void cool_down_locked(struct model_breaker *b, double now)
{
	if (b->state == BREAKER_OPEN && now - b->opened_at_ms >= (double)b->cooldown_ms) {
		b->state = BREAKER_HALF_OPEN;
		b->trial_in_flight = false;
		publish_locked(b);
	}
}

enum breaker_state model_breaker_state(struct model_breaker *b)
{
	pthread_mutex_lock(&b->lock);
	cool_down_locked(b, clock_now_ms());
	enum breaker_state s = b->state;
	pthread_mutex_unlock(&b->lock);
	return s;
}

/* May a call go to b's endpoint now?  In half-open, only one trial at a time. */
static bool breaker_admit(struct model_breaker *b)
{
	if (!b)
		return true;
	pthread_mutex_lock(&b->lock);
	cool_down_locked(b, clock_now_ms());
	bool ok = b->state == BREAKER_CLOSED || (b->state == BREAKER_HALF_OPEN && !b->trial_in_flight);
	if (ok && b->state == BREAKER_HALF_OPEN)
		b->trial_in_flight = true;
	pthread_mutex_unlock(&b->lock);
	if (!ok) {
		const char *labels[] = {b->stage, b->endpoint, NULL};
		metrics_add(m_rejections, labels, 1);
	}
	return ok;
}

static bool server_fault(int rc)
{
	return rc == -T2S_ERR_UPSTREAM || rc == -T2S_ERR_UPSTREAM_TIMEOUT || rc == -T2S_ERR_UNAVAILABLE;
}

/* Record the end of an admitted call. */
static void breaker_record(struct model_breaker *b, int rc)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	bool was_trial = b->state == BREAKER_HALF_OPEN;
	b->trial_in_flight = false;
	if (!server_fault(rc)) {
		b->consecutive_failures = 0;
		b->state = BREAKER_CLOSED;
	} else if (was_trial || ++b->consecutive_failures >= b->failures_to_open) {
		b->state = BREAKER_OPEN;
		b->opened_at_ms = clock_now_ms();
	}
	publish_locked(b);
	pthread_mutex_unlock(&b->lock);
}

bool model_endpoint_fit(const struct model_endpoint *ep, double deadline_ms, struct model_endpoint *ret)
{
	*ret = *ep;
	if (deadline_ms <= 0)
		return true;
	double left = deadline_ms - clock_now_ms();
	if (left < 1)
		return false;
	long timeout = ep->timeout_ms > 0 ? ep->timeout_ms : T2S_MODEL_TIMEOUT_DEFAULT_MS;
	if ((double)timeout > left)
		timeout = (long)left;
	int retries = ep->retries > 0 ? ep->retries : 0;
	while (retries > 0 && (double)timeout * (retries + 1) > left)
		retries--;
	ret->timeout_ms = timeout;
	ret->retries = retries;
	if (ret->connect_timeout_ms > timeout)
		ret->connect_timeout_ms = timeout;
	return true;
}

/* One endpoint's attempt; fills *a. */
static int attempt(const struct model_endpoint *ep, struct model_breaker *b, const char *name,
		   const struct model_message *msgs, size_t n_msgs, double deadline_ms, char **ret_text,
		   struct model_route_attempt *a, struct t2s_error *err)
{
	*a = (struct model_route_attempt){.endpoint = name};
	struct model_endpoint fitted;
	if (!model_endpoint_fit(ep, deadline_ms, &fitted)) {
		a->rc = t2s_error_set(err, T2S_ERR_UPSTREAM_TIMEOUT, "the request's time limit was reached before the %s model of stage '%s' was asked",
				      name, ep->stage ? ep->stage : "?");
		a->outcome = t2s_code_slug(T2S_ERR_UPSTREAM_TIMEOUT);
		return a->rc;
	}
	if (!breaker_admit(b)) {
		a->rc = t2s_error_set(err, T2S_ERR_UNAVAILABLE, "the %s model of stage '%s' is failing: its circuit breaker is open",
				      name, ep->stage ? ep->stage : "?");
		a->outcome = "breaker_open";
		return a->rc;
	}
	a->rc = model_chat(&fitted, msgs, n_msgs, ret_text, &a->stats, err);
	breaker_record(b, a->rc);
	stage_metrics_model_call(ep->stage ? ep->stage : "?", a->rc, &a->stats);
	a->outcome = a->rc == 0 ? "ok" : t2s_code_slug((enum t2s_code)-a->rc);
	return a->rc;
}

int model_route_chat(const struct model_route *r, const struct model_message *msgs, size_t n_msgs,
		     double deadline_ms, char **ret_text, struct model_route_attempt *ret_attempts,
		     size_t *ret_n_attempts, struct t2s_error *err)
{
	*ret_n_attempts = 0;
	if (!r || !r->primary)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "no model is configured for this stage");
	int rc = attempt(r->primary, r->primary_breaker, "primary", msgs, n_msgs, deadline_ms, ret_text,
			 &ret_attempts[(*ret_n_attempts)++], err);
	if (rc == 0 || !r->fallback || rc == -T2S_ERR_NOMEM || rc == -T2S_ERR_INVALID)
		return rc;
	return attempt(r->fallback, r->fallback_breaker, "fallback", msgs, n_msgs, deadline_ms, ret_text,
		       &ret_attempts[(*ret_n_attempts)++], err);
}
