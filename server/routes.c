/*
 * routes.c - the endpoint table: method, path pattern, handler, and whether
 * the route is reachable without an API key.
 */
#include "handlers/handlers.h"
#include "server/router.h"

const struct route routes[] = {
	{"GET", "/healthz", handle_healthz, true},
	{"GET", "/readyz", handle_readyz, true},
	{"GET", "/metrics", handle_metrics, true},
	{"GET", "/openapi.json", handle_openapi, true},
	{"GET", "/docs", handle_docs, true},
	{"GET", "/docs/{file}", handle_docs_asset, true},
	{"GET", "/", handle_playground, true},
	{"GET", "/playground/{file}", handle_playground_file, true},
	{"GET", "/databases", handle_databases_list, false},
	{"GET", "/databases/{name}", handle_database_get, false},
	{"POST", "/databases/{name}/refresh", handle_database_refresh, false},
	{"POST", "/execute", handle_execute, false},
	{"POST", "/link", handle_link, false},
	{"POST", "/describe", handle_describe, false},
	{"POST", "/evidence", handle_evidence, false},
	{"POST", "/generate", handle_generate, false},
	{"POST", "/query", handle_query, false},
	{"GET", "/databases/{name}/descriptions", handle_descriptions_get, false},
	{"PUT", "/databases/{name}/descriptions", handle_descriptions_put, false},
	{"GET", "/databases/{name}/examples", handle_examples_list, false},
	{"POST", "/databases/{name}/examples", handle_examples_add, false},
	{"GET", "/databases/{name}/examples/{id}", handle_example_get, false},
	{"DELETE", "/databases/{name}/examples/{id}", handle_examples_delete, false},
	{"POST", "/feedback", handle_feedback_add, false},
	{"GET", "/feedback", handle_feedback_list, false},
	{"GET", "/feedback/{id}", handle_feedback_get, false},
	{0},
};
