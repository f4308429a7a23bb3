/*
 * limits.h - limits that cross layers: the same bound is enforced by the
 * HTTP handlers, the pipeline stages and the durable state, and documented
 * in openapi/openapi.json.  Defined once here so they cannot disagree.
 */
#ifndef T2S_LIMITS_H
#define T2S_LIMITS_H

/* Bytes of a natural-language question (/link, /evidence, stored examples). */
#define T2S_QUESTION_MAX_BYTES 4000

/*
 * Defaults shared by a library's fallback (an option left 0) and the
 * config's default for the setting (config/ sees only common/).
 */
/* Redis connect and per-command timeout (embedding cache, state store, health). */
#define T2S_REDIS_TIMEOUT_DEFAULT_MS 500L
/* A model call's whole-request timeout per attempt, and its connect timeout. */
#define T2S_MODEL_TIMEOUT_DEFAULT_MS 60000L
#define T2S_MODEL_CONNECT_TIMEOUT_DEFAULT_MS 2000L
/* Bytes of one page of a stored-records list (GET /feedback, GET /databases/{name}/examples). */
#define T2S_LIST_PAGE_BYTES_DEFAULT (1L << 20)
/* Stored examples, and stored feedback entries, one database may hold: defaults, and the ceiling of both. */
#define T2S_STORED_PER_DATABASE_MAX 100000L
#define T2S_EXAMPLES_PER_DATABASE_DEFAULT 10000L
#define T2S_FEEDBACK_PER_DATABASE_DEFAULT 10000L

/*
 * Bytes of a statement (or of a check's detail quoting one) that a problem
 * body or a correction's trace shows: longer ones are cut to an excerpt
 * (common/utf8.h, utf8_excerpt).  The whole statement a success answers
 * with is never cut.
 */
#define T2S_EXCERPT_MAX_BYTES 4096

#endif
