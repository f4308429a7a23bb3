/*
 * link_json.h - the one JSON form of a link result: the body of POST /link,
 * and the "link" entry of a /generate answer's trace and of its event
 * stream.  Names keep the database's spelling (API names: schema-qualified
 * outside SQLite's main and PostgreSQL's public).
 */
#ifndef T2S_LINK_JSON_H
#define T2S_LINK_JSON_H

#include "pipeline/link/link.h"

#include <jansson.h>
#include <stdbool.h>

/*
 * r as JSON (a new reference; NULL only when out of memory): database,
 * question, user_evidence (when not NULL), mode, schema_hash, tables (with
 * scores, reasons in words and as codes, votes), columns, joins,
 * alternative_joins, disconnected, unknown_tables, model_calls, tokens,
 * timings_ms (index_build too when built_now), index, fallbacks and, when
 * the link model was asked, column_budget.
 */
json_t *link_result_json(const char *database, const char *question, const char *user_evidence,
			 const struct link_result *r, bool built_now);

#endif
