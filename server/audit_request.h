/*
 * audit_request.h - the audit log's REST side (audit.h): handlers note what
 * they learned on their request (database, question, SQL, rows, generator,
 * confidence), and the HTTP server's completion path writes one line with
 * the final status and time (audit_request_done) for every request of an
 * audited route, refused ones included:
 *   POST /query, /query/stream, /generate   action "query" / "generate"
 *   POST /execute                           action "execute"
 *   a write (not GET) of the admin scope,
 *   and a query route a handler marked      action "admin"
 * The caller is the key's name (or the JWT's subject); "anonymous" with
 * auth off; null when the request was refused before a caller was known.
 */
#ifndef T2S_AUDIT_REQUEST_H
#define T2S_AUDIT_REQUEST_H

#include "server/http.h"

#include <jansson.h>

/*
 * An answer of /query or /generate: body is its JSON, or the problem's
 * extension members on a failure (may be NULL); sql, row_count, generator
 * and confidence are read from it.  database and question are copied.
 */
void audit_note_answer(struct http_request *req, const char *database, const char *question, json_t *body);

/* The caller an audit line names for req: the key's name or the JWT's subject, "anonymous" with auth off,
   NULL when auth is on and none was known (borrowed from req). */
const char *audit_caller(const struct http_request *req);

/* A statement of /execute: rows < 0 when none were read (a refusal). */
void audit_note_execute(struct http_request *req, const char *database, const char *sql, long long rows);

/* The database an admin write changed (copied). */
void audit_note_database(struct http_request *req, const char *database);

/* A query route that wrote as admin (POST /feedback "correct": true stores an example). */
void audit_note_admin_write(struct http_request *req);

/* The status the answer really had when the response's is 200 (a streamed answer's error event). */
void audit_note_status(struct http_request *req, int status);

/* Write the request's line when its route is audited (above); status is the response's. */
void audit_request_done(struct http_request *req, int status, double elapsed_ms);

#endif
