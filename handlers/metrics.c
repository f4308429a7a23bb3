/*
 * metrics.c - GET /metrics: the Prometheus text exposition of the registry.
 *
 * Series labelled with a database name tell which databases exist and how
 * busy each is, so with auth on they follow the choice /readyz makes for
 * its details: the metrics key (auth.metrics_key_sha256) sees everything;
 * an API key or a JWT caller sees the series of the databases it may use
 * (other databases' series are left out); a scrape without a key gets auth.public_metrics:
 * "aggregate" (the default: every series summed over its database label),
 * "full", or "none" (401).  Without auth everything is shown.  The caller
 * label (key names, JWT subjects) is private the same way: a caller sees
 * its own series, an aggregate scrape none.
 */
#include "handlers/handlers.h"

#include "common/metrics.h"
#include "server/auth.h"

#include <stdlib.h>
#include <string.h>

/* Labels that name a database or a caller (text2sqld_caller_requests_total: key names, JWT subjects). */
static const char *const private_labels[] = {"database", "caller", NULL};

struct metrics_reader {
	const struct config *cfg;
	const struct config_api_key *principal;
};

static bool may_see(void *ctx, const char *label, const char *value)
{
	const struct metrics_reader *m = ctx;
	if (strcmp(label, "caller") == 0) /* a caller sees its own series only */
		return auth_is_caller_label(m->principal, value);
	return auth_may_use_database(m->cfg, m->principal, value);
}

void handle_metrics(struct http_request *req, struct http_response *res)
{
	const struct config *cfg = req->cfg;
	const char *authorization = http_request_header(req, "Authorization");
	struct metrics_reader reader = {.cfg = cfg};
	struct metrics_view view = {.labels = private_labels, .show = may_see, .ctx = &reader};
	const struct metrics_view *shown = NULL; /* everything */
	if (cfg->auth.enabled && !auth_check_metrics_key(cfg, authorization)) {
		reader.principal = auth_identify(req); /* an API key or a JWT */
		if (reader.principal) {
			shown = &view;
		} else if (cfg->auth.public_metrics == CONFIG_METRICS_NONE) {
			res->www_authenticate = true;
			http_reply_problem(res, req, 401, "unauthorized", "Unauthorized",
					   "a valid API key, JWT or the metrics key is required: "
					   "Authorization: Bearer <key or JWT>");
			return;
		} else if (cfg->auth.public_metrics == CONFIG_METRICS_AGGREGATE) {
			view.aggregate = true;
			shown = &view;
		}
	}
	size_t len = 0;
	char *text = metrics_render_view(shown, &len);
	if (!text) {
		http_reply_problem(res, req, 503, "out-of-memory", "Out of memory", "could not render metrics");
		return;
	}
	http_reply_text(res, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
	free(text);
}
