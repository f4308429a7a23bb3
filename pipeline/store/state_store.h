/*
 * state_store.h - the service's own durable state: question/SQL examples,
 * user overrides of schema descriptions, and generated descriptions cached
 * by schema hash.  It survives restarts and schema refreshes.
 *
 * Two backends behind one API, chosen by the URL given to state_store_open:
 *
 *   sqlite:///abs/path.db, sqlite://relative/path.db (relative to the
 *       current directory: the config layer resolves it first)
 *       The embedded default.  The file is created when missing, opened in
 *       WAL mode with synchronous=FULL and a busy timeout (several processes
 *       may share it), and used through one connection guarded by a mutex.
 *   postgresql://... (or postgres://...)
 *       For several replicas sharing one state.  Tables live in their own
 *       schema (options.pg_schema, default "text2sqld"), created when
 *       missing.  A small pool of connections (pipeline/db.h); every call is
 *       one transaction with statement_timeout and lock_timeout set locally.
 *
 * On open the schema is created or migrated to the version this build knows
 * (a schema_version table records it); a store written by a newer build is
 * refused.  Creation and migration are serialised between processes
 * (SQLite: BEGIN IMMEDIATE; Postgres: an advisory lock).
 *
 * Data kinds, all scoped by the registered database's name:
 *   examples      (id, question, sql, created_at): add, get, list (paged),
 *                 delete, and all (for similarity search: the caller embeds
 *                 and ranks).  At most max_examples_per_database per
 *                 database (default T2S_EXAMPLES_PER_DATABASE_DEFAULT,
 *                 ceiling STATE_EXAMPLES_MAX); past it an add is
 *                 -T2S_ERR_QUOTA.
 *   overrides     (table, column or NULL for the table itself, text,
 *                 updated_at): put (upsert), delete, list.  Keyed by names,
 *                 never by schema hash, so they outlive refreshes.
 *   descriptions  (schema_hash, table, column or NULL, text, source):
 *                 generated text cached per schema hash; put_many (upsert),
 *                 get_all.  A different hash sees nothing.
 *   feedback      (id, question, sql, correct, note or NULL, example_id or
 *                 0, created_at): a user's verdict on an answer.  A correct
 *                 one is also stored as an example in the same transaction
 *                 (an identical example is reused); add, get, list.  At
 *                 most max_feedback_per_database per database (default
 *                 T2S_FEEDBACK_PER_DATABASE_DEFAULT, ceiling
 *                 STATE_FEEDBACK_MAX); past it an add is -T2S_ERR_QUOTA.
 *
 * Pages (examples_list, feedback_list) are bounded in bytes as well as rows:
 * a page stops before the row that would take the bytes its rows store
 * (texts plus STATE_PAGE_ROW_BYTES each) past max_page_bytes, but always
 * holds its first row (a row stores at most about 106 KB).  The page then
 * holds fewer rows than its limit although more follow: the caller pages on
 * from offset + n.
 *
 * Every statement is parameterised: names, questions, SQL and texts are
 * stored verbatim and never interpreted.  Inputs are bounded (the
 * STATE_*_MAX limits below) and must be valid UTF-8; past a bound a call
 * fails with -T2S_ERR_INVALID and a message naming the field and the limit.
 *
 * Errors: 0 or -T2S_ERR_* with err filled: INVALID (input), NOT_FOUND (get or
 * delete of an absent row), UNAVAILABLE (file or server unreachable, busy
 * past the timeout, pool exhausted), TIMEOUT (Postgres statement or lock
 * timeout), NOMEM, INTERNAL.  Messages hold no URL, password or stored data.
 *
 * Results come back in caller-owned structs (state_examples,
 * state_overrides, state_descriptions): each owns an arena holding every
 * string it points to, and is freed with its _release function.  They are
 * written only on success; releasing a zero-filled struct is harmless.
 *
 * Thread safety: every function may be called concurrently on one store,
 * except state_store_close.  Library code: nothing is logged.
 */
#ifndef T2S_STATE_STORE_H
#define T2S_STATE_STORE_H

#include "common/arena.h"
#include "common/contract.h"
#include "common/error.h"
#include "common/limits.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATE_DATABASE_NAME_MAX 256u     /* bytes of a registered database's name */
#define STATE_IDENT_MAX 1024u            /* bytes of a table or column name */
#define STATE_QUESTION_MAX ((unsigned)T2S_QUESTION_MAX_BYTES) /* bytes of an example's question */
#define STATE_SQL_MAX (100u * 1024u)     /* bytes of an example's SQL */
#define STATE_TEXT_MAX 4000u             /* bytes of a description or override */
#define STATE_SCHEMA_HASH_MAX 128u       /* bytes of a schema hash */
#define STATE_SOURCE_MAX 32u             /* bytes of a description's source ("model", "metadata") */
#define STATE_EXAMPLES_MAX T2S_STORED_PER_DATABASE_MAX /* examples per database (ceiling of the option) */
#define STATE_FEEDBACK_MAX T2S_STORED_PER_DATABASE_MAX /* feedback entries per database (ceiling of the option) */
#define STATE_PAGE_ROW_BYTES 160         /* bytes a page counts for a row beyond its texts */
#define STATE_OVERRIDES_MAX 100000L      /* overrides per database */
#define STATE_LIST_LIMIT_MAX 1000L       /* rows per page of state_store_examples_list */
#define STATE_DESCRIPTIONS_PUT_MAX 100000u /* items per state_store_descriptions_put_many */

/* The schema version this build creates and reads. */
#define STATE_STORE_SCHEMA_VERSION 3

struct state_store;

/* Zero or NULL fields take the defaults noted. */
struct state_store_options {
	long busy_timeout_ms;      /* SQLite busy timeout; Postgres lock_timeout. Default 5000 */
	long statement_timeout_ms; /* Postgres statement_timeout per statement. Default 10000 */
	int pool_size;             /* Postgres connections kept. Default 4 */
	long pool_wait_ms;         /* wait for a free Postgres connection. Default 5000 */
	long connect_timeout_s;    /* Postgres connect timeout. Default 5 */
	const char *pg_schema;     /* Postgres schema holding the tables. Default "text2sqld"; copied */
	long max_examples_per_database; /* 1..STATE_EXAMPLES_MAX. Default T2S_EXAMPLES_PER_DATABASE_DEFAULT */
	long max_feedback_per_database; /* 1..STATE_FEEDBACK_MAX. Default T2S_FEEDBACK_PER_DATABASE_DEFAULT */
	long max_page_bytes;            /* >= 1024: bytes of a page (see Pages). Default T2S_LIST_PAGE_BYTES_DEFAULT */
};

/*
 * Open (creating and migrating as needed) the store at url; opts may be NULL
 * (defaults).  On success *ret is a store to close with state_store_close.
 * A bad URL or option is -T2S_ERR_INVALID; a file that cannot be created or
 * opened, or a server that cannot be reached, -T2S_ERR_UNAVAILABLE; a store
 * whose schema_version is newer than STATE_STORE_SCHEMA_VERSION,
 * -T2S_ERR_UNAVAILABLE too.  Messages name a SQLite path but never echo a
 * Postgres URL (it may hold a password).
 */
T2S_MUST_CHECK
int state_store_open(const char *url, const struct state_store_options *opts, struct state_store **ret,
		     struct t2s_error *err);

/*
 * As state_store_open, for a service that must keep going when its store is
 * not there yet: a bad URL or option is still -T2S_ERR_INVALID, but a file
 * or server that cannot be opened now gives a store anyway (0, *ret set).
 * Every call on it then tries to open it again, at most once per backoff
 * (500 ms doubling up to 30 s), and fails with -T2S_ERR_UNAVAILABLE and the
 * reason until it succeeds; state_store_ping tells which.
 */
T2S_MUST_CHECK
int state_store_open_lazy(const char *url, const struct state_store_options *opts, struct state_store **ret,
			  struct t2s_error *err);

/*
 * True when the store is open (a store of state_store_open_lazy that could
 * not be opened yet tries again here, within its backoff).  Callers that can
 * serve without the store use it to choose; the store's calls still fail
 * cleanly when it is not.
 */
bool state_store_available(struct state_store *s);

/* Close connections and free the store.  Accepts NULL; returns NULL. */
struct state_store *state_store_close(struct state_store *s);

/* "sqlite" or "postgresql". */
const char *state_store_backend(const struct state_store *s);

/*
 * For /readyz: 0 when the store is open, answers a round trip, and its last
 * write (if any) succeeded.  -T2S_ERR_UNAVAILABLE "the last write failed:
 * ..." while the most recent write failed for the store's sake (not for a
 * refused input); a later successful write clears it.
 */
T2S_MUST_CHECK
int state_store_ping(struct state_store *s, struct t2s_error *err);

/*
 * The last write's outcome: true when it succeeded (or none was made);
 * false with its error copied into buf (may be NULL) when it failed.
 */
bool state_store_last_write(struct state_store *s, char *buf, size_t size);

/* ---- examples ------------------------------------------------------------ */

struct state_example {
	int64_t id;             /* unique over the whole store, increasing */
	const char *question;
	const char *sql;        /* NULL from state_store_examples_all(..., with_sql = false) */
	const char *created_at; /* RFC 3339 UTC, e.g. "2024-05-01T12:00:00.123Z" */
};

struct state_examples {
	struct arena arena;           /* owns items and every string they point to */
	struct state_example *items;  /* n items, ascending id; NULL when n == 0 */
	size_t n;
	int64_t total;                /* examples the database holds (list and all) */
};

/* Free l's contents and zero it.  Accepts NULL and zero-filled structs. */
void state_examples_release(struct state_examples *l);

/*
 * Store one example (question and sql copied verbatim; the caller has
 * validated the SQL) and set *ret_id to its id.  Fails with -T2S_ERR_INVALID
 * when an input is empty, too long or not UTF-8, and with -T2S_ERR_QUOTA
 * when the database already holds max_examples_per_database examples.
 */
T2S_MUST_CHECK
int state_store_example_add(struct state_store *s, const char *database, const char *question, const char *sql,
			    int64_t *ret_id, struct t2s_error *err);

/* The example id of database into *ret (n == 1); -T2S_ERR_NOT_FOUND when absent or another database's. */
T2S_MUST_CHECK
int state_store_example_get(struct state_store *s, const char *database, int64_t id, struct state_examples *ret,
			    struct t2s_error *err);

/* Delete example id of database; -T2S_ERR_NOT_FOUND when absent or another database's. */
T2S_MUST_CHECK
int state_store_example_delete(struct state_store *s, const char *database, int64_t id, struct t2s_error *err);

/*
 * One page of database's examples by ascending id: at most limit
 * (1..STATE_LIST_LIMIT_MAX) after skipping offset (>= 0), and at most
 * max_page_bytes (see Pages); ret->total counts them all.  An empty page is
 * not an error.
 */
T2S_MUST_CHECK
int state_store_examples_list(struct state_store *s, const char *database, long limit, long offset,
			      struct state_examples *ret, struct t2s_error *err);

/*
 * Every example of database, for similarity search.  Without with_sql only
 * ids, questions and dates are read (at most STATE_EXAMPLES_MAX x
 * STATE_QUESTION_MAX bytes); fetch the SQL of the chosen few with
 * state_store_example_get.
 */
T2S_MUST_CHECK
int state_store_examples_all(struct state_store *s, const char *database, bool with_sql,
			     struct state_examples *ret, struct t2s_error *err);

/* ---- feedback ------------------------------------------------------------ */

#define STATE_NOTE_MAX 2000u /* bytes of a feedback note */

struct state_feedback {
	int64_t id;             /* unique over the whole store, increasing */
	const char *database;
	const char *question;
	const char *sql;
	bool correct;
	const char *note;       /* NULL when none was given */
	int64_t example_id;     /* the example a correct verdict stored or reused; 0 for a wrong one */
	const char *created_at; /* RFC 3339 UTC */
};

struct state_feedbacks {
	struct arena arena;           /* owns items and every string they point to */
	struct state_feedback *items; /* n items, ascending id; NULL when n == 0 */
	size_t n;
	int64_t total;                /* rows matching the list's filter */
};

/* Free l's contents and zero it.  Accepts NULL and zero-filled structs. */
void state_feedbacks_release(struct state_feedbacks *l);

/*
 * Store a verdict on (question, sql) for database (sql validated by the
 * caller when correct); note may be NULL.  When correct, the pair becomes an
 * example in the same transaction (an example with the same question and SQL
 * is reused; the per-database example cap applies to new ones) and
 * *ret_example_id is its id, else 0.  *ret_id is the feedback's id.
 * -T2S_ERR_QUOTA when the database already holds max_feedback_per_database
 * entries (or, for a correct one, max_examples_per_database examples).
 */
T2S_MUST_CHECK
int state_store_feedback_add(struct state_store *s, const char *database, const char *question, const char *sql,
			     bool correct, const char *note, int64_t *ret_id, int64_t *ret_example_id,
			     struct t2s_error *err);

/* The feedback with this id (any database; the caller checks access), or -T2S_ERR_NOT_FOUND. */
T2S_MUST_CHECK
int state_store_feedback_get(struct state_store *s, int64_t id, struct state_feedbacks *ret, struct t2s_error *err);

/*
 * One page by ascending id of the feedback of database (NULL: every
 * database), only correct ones (correct = 1), only wrong ones (0) or both
 * (-1); limit 1..STATE_LIST_LIMIT_MAX, offset >= 0, at most max_page_bytes
 * (see Pages); ret->total counts all matches.
 */
T2S_MUST_CHECK
int state_store_feedback_list(struct state_store *s, const char *database, int correct, long limit, long offset,
			      struct state_feedbacks *ret, struct t2s_error *err);

/* ---- description overrides ----------------------------------------------- */

struct state_override {
	const char *table;
	const char *column;     /* NULL: the override describes the table itself */
	const char *text;
	const char *updated_at; /* RFC 3339 UTC */
};

struct state_overrides {
	struct arena arena;            /* owns items and their strings */
	struct state_override *items;  /* ordered by table, then column (table-level first) */
	size_t n;
};

void state_overrides_release(struct state_overrides *l);

/*
 * Set the override of database's table (column NULL) or table.column to
 * text, replacing any previous one.  Empty names are invalid (use NULL for
 * the table itself); at most STATE_OVERRIDES_MAX per database.
 */
T2S_MUST_CHECK
int state_store_override_put(struct state_store *s, const char *database, const char *table, const char *column,
			     const char *text, struct t2s_error *err);

/* Remove one override; -T2S_ERR_NOT_FOUND when there was none. */
T2S_MUST_CHECK
int state_store_override_delete(struct state_store *s, const char *database, const char *table,
				const char *column, struct t2s_error *err);

/* Every override of database. */
T2S_MUST_CHECK
int state_store_overrides_list(struct state_store *s, const char *database, struct state_overrides *ret,
			       struct t2s_error *err);

/* ---- versions: what tells replicas sharing the store that something changed ---- */

/*
 * Per database: version counts the changes of its examples and description
 * overrides (bumped by the store itself, in the writing transaction, so no
 * write can change a prompt without it); refreshes counts the schema
 * refreshes asked for (state_store_refresh_note).  A database never changed
 * has no row (both 0).  Generated descriptions do not count: they follow the
 * schema hash.
 */
struct state_version {
	const char *database;
	int64_t version;
	int64_t refreshes;
};

struct state_versions {
	struct arena arena;            /* owns items and their strings */
	struct state_version *items;   /* ordered by database */
	size_t n;
};

void state_versions_release(struct state_versions *l);

/* Every database's versions (one small read: the poll of replicas). */
T2S_MUST_CHECK
int state_store_versions(struct state_store *s, struct state_versions *ret, struct t2s_error *err);

/*
 * Count one refresh of database (other replicas polling the store refresh
 * it too); *ret_refreshes (may be NULL) gets the count it made.
 */
T2S_MUST_CHECK
int state_store_refresh_note(struct state_store *s, const char *database, int64_t *ret_refreshes,
			     struct t2s_error *err);

/* ---- generated descriptions cached by schema hash ----------------------- */

struct state_description {
	const char *table;
	const char *column; /* NULL: the description of the table itself */
	const char *text;
	const char *source; /* e.g. "model" or "metadata" */
};

struct state_descriptions {
	struct arena arena;               /* owns items and their strings */
	struct state_description *items;  /* ordered by table, then column (table-level first) */
	size_t n;
};

void state_descriptions_release(struct state_descriptions *l);

/*
 * Store n (<= STATE_DESCRIPTIONS_PUT_MAX) descriptions of database at
 * schema_hash in one transaction, replacing rows with the same (table,
 * column); within items a later duplicate wins.  items are read, not kept.
 * All are validated before anything is written: one bad item stores none.
 */
T2S_MUST_CHECK
int state_store_descriptions_put_many(struct state_store *s, const char *database, const char *schema_hash,
				      const struct state_description *items, size_t n, struct t2s_error *err);

/* Every cached description of database at schema_hash (n == 0 when none). */
T2S_MUST_CHECK
int state_store_descriptions_get_all(struct state_store *s, const char *database, const char *schema_hash,
				     struct state_descriptions *ret, struct t2s_error *err);

/*
 * Drop database's cached descriptions of every schema hash but keep_hash
 * (after a refresh made them stale).  *ret_removed (may be NULL) counts the rows.
 */
T2S_MUST_CHECK
int state_store_descriptions_prune(struct state_store *s, const char *database, const char *keep_hash,
				   int64_t *ret_removed, struct t2s_error *err);

#endif
