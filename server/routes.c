/*
 * routes.c - the endpoint table: method, path pattern, handler, and the
 * scope a caller needs (config.h enum api_scope; ROUTE_PUBLIC: no key).
 * Querying reads; administering changes what every key's prompts say about a
 * database (descriptions, examples), refreshes it or reviews its feedback.
 * POST /feedback is a query route whose "correct": true verdict, which
 * stores an example, needs admin too (handlers/feedback.c).
 */
#include "handlers/handlers.h"
#include "server/router.h"

const struct route routes[] = {
	{"GET", "/healthz", handle_healthz, ROUTE_PUBLIC},
	{"GET", "/readyz", handle_readyz, ROUTE_PUBLIC},
	{"GET", "/metrics", handle_metrics, ROUTE_PUBLIC},
	{"GET", "/openapi.json", handle_openapi, ROUTE_PUBLIC},
	{"GET", "/docs", handle_docs, ROUTE_PUBLIC},
	{"GET", "/docs/{file}", handle_docs_asset, ROUTE_PUBLIC},
	{"GET", "/", handle_playground, ROUTE_PUBLIC},
	{"GET", "/playground/{file}", handle_playground_file, ROUTE_PUBLIC},
	{"GET", "/databases", handle_databases_list, API_SCOPE_QUERY},
	{"GET", "/databases/{name}", handle_database_get, API_SCOPE_QUERY},
	{"POST", "/databases/{name}/refresh", handle_database_refresh, API_SCOPE_ADMIN},
	{"POST", "/execute", handle_execute, API_SCOPE_QUERY},
	{"POST", "/link", handle_link, API_SCOPE_QUERY},
	{"POST", "/describe", handle_describe, API_SCOPE_QUERY},
	{"POST", "/evidence", handle_evidence, API_SCOPE_QUERY},
	{"POST", "/generate", handle_generate, API_SCOPE_QUERY},
	{"POST", "/query", handle_query, API_SCOPE_QUERY},
	{"POST", "/query/stream", handle_query_stream, API_SCOPE_QUERY},
	{"GET", "/databases/{name}/descriptions", handle_descriptions_get, API_SCOPE_QUERY},
	{"PUT", "/databases/{name}/descriptions", handle_descriptions_put, API_SCOPE_ADMIN},
	{"GET", "/databases/{name}/examples", handle_examples_list, API_SCOPE_QUERY},
	{"POST", "/databases/{name}/examples", handle_examples_add, API_SCOPE_ADMIN},
	{"GET", "/databases/{name}/examples/{id}", handle_example_get, API_SCOPE_QUERY},
	{"DELETE", "/databases/{name}/examples/{id}", handle_examples_delete, API_SCOPE_ADMIN},
	{"POST", "/feedback", handle_feedback_add, API_SCOPE_QUERY},
	{"GET", "/feedback", handle_feedback_list, API_SCOPE_ADMIN},
	{"GET", "/feedback/{id}", handle_feedback_get, API_SCOPE_QUERY},
	{"POST", "/mcp", handle_mcp_post, API_SCOPE_QUERY},
	{"DELETE", "/mcp", handle_mcp_delete, API_SCOPE_QUERY},
	{0},
};
