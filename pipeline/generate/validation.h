/*
 * validation.h - a statement's validation report, the list every check of
 * validate.h appends to: the report (struct validation, its checks and what
 * each level found for the next) and the context the checks run in, with the
 * kernel that adds a check and reads or frees the report (validation.c).
 *
 * The bottom of validation's files: validate.c (levels 1 and 3, and their
 * order), semantics.c (level 2) and question_checks.c (level 3 against the
 * question) append to a report through validation_add; validation.c calls
 * none of them.  Included by those files' headers (validate.h, semantics.h,
 * question_checks.h) and by readers of a report (trace.h, the job); the
 * checks themselves are run only through validate_sql (validate.h).
 */
#ifndef T2S_GENERATE_VALIDATION_H
#define T2S_GENERATE_VALIDATION_H

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/db/catalog.h"
#include "pipeline/link/column_index.h"
#include "pipeline/sql/exec.h"

#include <stdbool.h>

struct validation_check {
	int level;
	const char *check; /* static name */
	bool ok;
	bool blocking;     /* a failure makes the statement wrong */
	char *detail;      /* malloc'd, never NULL */
};

/* A string literal compared with a column of a schema table (level 2 finds them, level 3 probes them). */
struct validation_literal {
	int table, column; /* indexes into the schema */
	char *value;       /* malloc'd */
};

struct validation {
	struct validation_check *checks;
	size_t n_checks, cap_checks;
	int failed;        /* index of the first failed blocking check, -1 when none */
	int score;         /* 0: level 1 failed, 1: level 2, 2: level 3, 3: every blocking check passed */
	bool executed;     /* result holds the statement's rows */
	struct exec_result result;
	enum t2s_code exec_code; /* code of the level-1 failure (T2S_OK when none) */
	char *unknown_name;      /* a name the database did not know, or NULL */
	bool unknown_is_table;
	int *used_tables;        /* schema tables the statement reads (level 2), for re-planning */
	size_t n_used_tables;
	bool join_problem;       /* level 2 blamed the joins: re-plan the scaffold */
	bool set_operation;      /* UNION / INTERSECT / EXCEPT: results may hold every table's rows */
	struct validation_literal *literals; /* level 2: literals compared with schema columns */
	size_t n_literals;
	bool filters;            /* level 2: some block has a WHERE or HAVING column reference, or a literal */
	bool having;             /* level 2: some block filters its groups (a HAVING column reference) */
	/*
	 * Level 2: the statement's one top-level query block (no set operation,
	 * no CTE), when known: it reads two or more relations (joined), selects
	 * DISTINCT, groups (GROUP BY); top_multiplied: every column its select
	 * list shows (outside aggregates) belongs to a table the join repeats,
	 * joined by its one-column primary key to a column that is not the
	 * other table's key (the "one" side of a one-to-many join);
	 * top_references: it reads one relation and every column its select
	 * list shows (outside aggregates) is a declared foreign key.
	 * top_known false: the rest is unset.
	 */
	bool top_known, top_joined, top_distinct, top_grouped, top_multiplied, top_references;
	/*
	 * Level 3: rows_not_repeated or references_not_repeated failed: the
	 * result repeats rows the statement's one top-level SELECT repeats (no
	 * DISTINCT, no GROUP BY, no set operation); its SELECT DISTINCT is the
	 * repair the check names (vote.h, generate_repair).
	 */
	bool rows_repeated;
	/*
	 * Level 3: result_not_empty or first_value_meaningful failed on a
	 * literal that is not a stored value of its column, and the probe found
	 * one stored value, and only one, spelling the same letters and digits
	 * whatever their case and the characters between them ('North Carolina'
	 * stored as 'NorthCarolina', 'Dog' as 'dog'): both malloc'd, else NULL.
	 * The literal made that value is the repair the check names
	 * (repair_stored_value, generate_repair).
	 */
	char *stored_literal, *stored_spelling;
	/*
	 * Level 2, when analysed (false: the rest is unset): top_unnamed_groups:
	 * the top-level block groups and its select list shows aggregates only;
	 * averages: some block calls avg(), or reads a column whose name says it
	 * holds an average ("avg", "average", "mean"); limited_asc / limited_desc:
	 * some block with ORDER BY and LIMIT orders by an ascending / a descending key;
	 * ordered: the statement's top level sorts its result (ORDER BY), by an
	 * ascending (sorted_asc) / a descending (sorted_desc) key.
	 */
	bool analysed, top_unnamed_groups, averages, limited_asc, limited_desc, ordered, sorted_asc, sorted_desc;
};

struct validate_context {
	struct catalog_db *db;
	const struct schema *schema;
	const struct column_index *index; /* the schema graph */
	const bool *linked_table;         /* per schema table: in the linked schema */
	struct exec_limits limits;
	const char *question;             /* the user's question, for question_checks.h; NULL: those are skipped */
};

/*
 * Append a check (detail printf-style, cut to T2S_EXCERPT_MAX_BYTES); the
 * first failed blocking check becomes v->failed.  check is a static name;
 * level is 1, 2 or 3.  0 or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int validation_add(struct validation *v, int level, const char *check, bool ok, bool blocking, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* The message for the debug model: the first blocking failure, "" when none (static or v-owned). */
const char *validation_error(const struct validation *v);

/* Free v's contents (NULL is accepted) and leave it empty, failed = -1. */
void validation_release(struct validation *v);

#endif
