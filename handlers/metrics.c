/*
 * metrics.c - GET /metrics: the Prometheus text exposition of the registry.
 */
#include "handlers/handlers.h"

#include "common/metrics.h"

#include <stdlib.h>

void handle_metrics(struct http_request *req, struct http_response *res)
{
	size_t len = 0;
	char *text = metrics_render(&len);
	if (!text) {
		http_reply_problem(res, req, 503, "out-of-memory", "Out of memory", "could not render metrics");
		return;
	}
	http_reply_text(res, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
	free(text);
}
