/*
 * evidence.c - POST /evidence {database, question, evidence?}: values the question
 * (read with the user's evidence appended, as linking reads it)
 * names (spelled as stored, with the probe that confirmed them), evidence
 * sentences and the most similar stored examples (pipeline_evidence,
 * evidence_json.h).
 */
#include "handlers/handlers.h"

#include "handlers/request_json.h"
#include "pipeline/evidence/evidence_json.h"

void handle_evidence(struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = {"database", "question", "evidence", NULL};
	struct t2s_error err = {0};
	json_t *body = NULL;
	const char *database = NULL, *question = NULL, *user_evidence = NULL;
	struct catalog_db *db;
	struct pipeline_evidence result = {0};
	int rc = request_json_object(req, fields, &body, &err);
	if (rc == 0)
		rc = request_json_string(body, "database", true, &database, &err);
	if (rc == 0)
		rc = request_json_text(body, "question", true, &question, &err);
	if (rc == 0)
		rc = request_json_text(body, "evidence", false, &user_evidence, &err);
	if (rc == 0)
		rc = request_database(req, database, &db, &err);
	if (rc == 0)
		rc = pipeline_evidence(&req->app->pipeline, db, request_grant(req, db), question, user_evidence, &req->arena, &result, &err);
	if (rc == 0)
		http_reply_json(res, 200,
				evidence_result_json(database, question, user_evidence, result.schema, &result.result,
						     result.index_state,
						     pipeline_value_index_stats(&result)));
	else
		http_reply_error(res, req, &err);
	pipeline_evidence_release(&result);
	json_decref(body);
}
