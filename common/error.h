/*
 * error.h - the one error vocabulary of text2sqld.
 *
 * Every fallible function returns 0 on success or a negative enum t2s_code
 * (-T2S_ERR_...), and, when it is given a struct t2s_error, fills it with the
 * code and a short factual message meant for the user (it becomes the
 * "detail" of an RFC 9457 problem body).  Messages never carry secrets, keys
 * or another tenant's SQL.  Library-level code does not log: the handler that
 * receives the error logs once and answers.
 */
#ifndef T2S_ERROR_H
#define T2S_ERROR_H

#include <stddef.h>

enum t2s_code {
	T2S_OK = 0,
	T2S_ERR_NOMEM,            /* allocation failed */
	T2S_ERR_INVALID,          /* malformed or out-of-range input */
	T2S_ERR_NOT_FOUND,        /* unknown database, table, route... */
	T2S_ERR_FORBIDDEN,        /* caller may not reach this resource */
	T2S_ERR_SQL_REJECTED,     /* statement refused by the safety checks */
	T2S_ERR_SQL_INVALID,      /* statement does not parse or names do not resolve */
	T2S_ERR_SQL_FAILED,       /* the database raised an error while running it */
	T2S_ERR_TIMEOUT,          /* a time limit was reached */
	T2S_ERR_UNAVAILABLE,      /* a dependency is down or a pool is exhausted */
	T2S_ERR_UPSTREAM,         /* a model server answered with an error or garbage */
	T2S_ERR_UPSTREAM_TIMEOUT, /* a model server did not answer in time */
	T2S_ERR_GENERATION_UNAVAILABLE, /* a generate model is asked for and none is configured */
	T2S_ERR_GENERATION_FAILED,      /* no valid read-only SQL was reached within the correction rounds */
	T2S_ERR_UNANSWERABLE,     /* the question relates to nothing in the database, or the model says so */
	T2S_ERR_INTERNAL,         /* a bug or an unexpected state */
	T2S_ERR_CANCELLED,        /* the caller asked to stop (a streaming client went away) */
	T2S_ERR_QUOTA,            /* a stored kind of record is at its configured maximum */
	T2S_ERR_LOW_CONFIDENCE,   /* an answer was found, below the confidence the request asked for */
	T2S_ERR_BUILTIN_REFUSED,  /* the built-in generator refuses the question and no model stands in: retrying cannot help */
	T2S_CODE_COUNT
};

#define T2S_ERROR_MESSAGE_MAX 512

struct t2s_error {
	enum t2s_code code;
	char message[T2S_ERROR_MESSAGE_MAX];
};

/*
 * Fill err (may be NULL) with code and a printf-style message, truncated to
 * fit.  Returns -code so that callers can write `return t2s_error_set(...)`.
 */
int t2s_error_set(struct t2s_error *err, enum t2s_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Reset err to T2S_OK with an empty message. */
void t2s_error_clear(struct t2s_error *err);

/* Stable lower-case slug of a code ("sql-rejected"); used in problem types and metrics. */
const char *t2s_code_slug(enum t2s_code code);

/* Short human title of a code ("SQL statement rejected"). */
const char *t2s_code_title(enum t2s_code code);

#endif
