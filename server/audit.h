/*
 * audit.h - the audit log (log.audit_file): one JSON line per answer
 * (/query, /generate, /query/stream, /execute), per MCP tool call and per
 * admin write, saying who asked what: time, request id, caller (the API
 * key's name or the JWT's subject), database, question, SQL, status, rows,
 * elapsed time, generator and confidence.
 *
 * What it never holds: a key, a token, a password or any header.  Callers
 * hand it only the fields of struct audit_entry; nothing else of a request
 * reaches the file.
 *
 * The file is opened in append mode at start (audit_open) and opened again
 * by audit_reopen (main.c on SIGHUP) so that a rotated file (renamed away)
 * is replaced by a new one at the configured path; a reopen that fails keeps
 * writing to the file already open.  A line that cannot be written (disk
 * full, I/O error) is counted in text2sqld_audit_write_failures_total and
 * never fails the request; written lines are counted in
 * text2sqld_audit_records_total.
 *
 * Process-wide state, thread-safe: one write(2) per line under a lock, so
 * lines of concurrent requests never interleave.
 *
 * Two ways in:
 *  - REST: a handler notes what it learned on its request (audit_note_*,
 *    server/audit_request.h) and the HTTP server's completion path writes the
 *    line with the final status (audit_request_done);
 *  - anything else (the MCP tools): fill a struct audit_entry and call
 *    audit_write.
 */
#ifndef T2S_AUDIT_H
#define T2S_AUDIT_H

#include "common/contract.h"
#include "common/error.h"

#include <stdbool.h>

/* One audit line.  Every string may be NULL (the member is then null); all are borrowed for the call. */
struct audit_entry {
	const char *request_id;
	const char *caller;     /* API key name or JWT subject; NULL: not authenticated (auth on, refused) */
	const char *action;     /* "query", "generate", "execute", "admin", "mcp:<tool>" */
	const char *method;     /* HTTP method, or NULL (MCP) */
	const char *route;      /* route pattern ("/query"), or NULL */
	const char *database;
	const char *question;
	const char *sql;
	const char *generator;  /* "model", "builtin", "example", ... */
	int status;             /* HTTP status of the answer (for MCP: 200 or the problem's status) */
	long long rows;         /* rows returned; < 0: none */
	double elapsed_ms;
	double confidence;      /* NaN: none */
};

/*
 * What a REST handler learned about its request, for the line written when
 * the request completes (server/audit_request.h fills it; struct
 * http_request holds one).  Strings live in the request's arena.
 */
struct audit_note {
	const char *database, *question, *sql, *generator;
	long long rows;          /* valid when has_rows */
	double confidence;       /* valid when has_confidence */
	bool has_rows, has_confidence;
	bool admin_write;        /* a write of the admin scope on a query route (feedback "correct": true) */
	int status;              /* > 0: the answer's own status when the response's says less (a stream's error event) */
};

/*
 * Open path for appending (created 0640 when missing); NULL: no audit log
 * (every audit_write is then a no-op).  0 or -T2S_ERR_UNAVAILABLE naming
 * the file and the reason.  Called once at start, before serving.
 */
T2S_MUST_CHECK
int audit_open(const char *path, struct t2s_error *err);

/*
 * Open the configured path again (after a rotation renamed it away) and
 * write to the new file from now on.  On failure the old file stays in use,
 * the failure is counted like a failed write, and -T2S_ERR_UNAVAILABLE is
 * returned with err filled (the caller logs it).  0 without an audit log.
 */
T2S_MUST_CHECK
int audit_reopen(struct t2s_error *err);

/* Is an audit log configured? */
bool audit_enabled(void);

/* Write one line (see above); a failure is counted, never reported. */
void audit_write(const struct audit_entry *e);

/* Close the file (at exit). */
void audit_close(void);

#endif
