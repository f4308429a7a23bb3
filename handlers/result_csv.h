/*
 * result_csv.h - result rows as RFC 4180 CSV, for a client that sends
 * Accept: text/csv to /query or /execute.
 *
 * The header record holds the column names, then one record per row in the
 * answer's order; UTF-8 as the rows are (no byte order mark), every record
 * ends with CRLF; a field is quoted when it holds a comma, a double quote,
 * CR or LF, its quotes doubled.  NULL is an empty field, the empty string
 * a quoted one (""), as PostgreSQL's COPY tells them apart; a string is its
 * text; an integer its decimal digits (exact however large); a real the
 * shortest of %.15g, %.16g, %.17g that reads back as the same double (0.1,
 * not the JSON answer's 0.10000000000000001); true and false as such; an array or object (a
 * PostgreSQL array or json value) its compact JSON text.  The rows are the
 * ones the JSON answer would carry, under the same row and byte limits.
 *
 * The body is written as it is sent (http_reply_produced): a piece of about
 * RESULT_CSV_PIECE bytes at a time from the rows held by the answer.
 */
#ifndef T2S_RESULT_CSV_H
#define T2S_RESULT_CSV_H

#include "server/http.h"

#include <jansson.h>

#define RESULT_CSV_PIECE (64 * 1024)
#define RESULT_CSV_CONTENT_TYPE "text/csv; charset=utf-8"

/*
 * Answer res with the CSV of columns and rows (borrowed: the response takes
 * its own references), status 200, Content-Type RESULT_CSV_CONTENT_TYPE and
 * the Content-Disposition header disposition (a static string such as
 * `attachment; filename="query.csv"`); a 500 problem when out of memory.
 */
void result_csv_reply(struct http_request *req, struct http_response *res, json_t *columns, json_t *rows,
		      const char *disposition);

/*
 * The form a client asks /query or /execute for: 0 JSON (the default), 1
 * CSV (http_negotiate over application/json and text/csv); -1 when its
 * Accept header allows neither, and res then holds a 406 not-acceptable
 * problem.  /query asks after its text/event-stream check.
 */
int result_csv_negotiate(struct http_request *req, struct http_response *res);

/*
 * Add X-Truncated-By (copied to the request's arena) when truncated_by (may
 * be NULL) names the limit that cut the rows.
 */
void result_csv_truncated_header(struct http_request *req, struct http_response *res, const char *truncated_by);

/* One record of the values in values (an array) appended to out, CRLF included; negative when out is full. */
int result_csv_record(const json_t *values, struct strbuf *out);

#endif
