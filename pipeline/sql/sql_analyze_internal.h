/*
 * sql_analyze_internal.h - what the files of sql_analyze share (not for use
 * outside pipeline/sql/): the normalised copy and its tokens
 * (sql_analyze_text.c), the analysis in progress and the walk's context
 * (sql_analyze_walk.c, sql_analyze_refs.c).  Functions shared between the
 * files carry the prefix sa_.
 */
#ifndef T2S_SQL_ANALYZE_INTERNAL_H
#define T2S_SQL_ANALYZE_INTERNAL_H

#include "common/contract.h"
#include "pipeline/sql/sql_analyze.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Alias given to a FROM subquery that had none (SQLite allows that, PostgreSQL 15 does not). */
#define DERIVED_ALIAS_PREFIX "t2s_derived_"

/* ---------------------------------------------------------------- text -- */

/* A copy of the statement with, for each byte, the offset of the original byte it stands for. */
struct ntext {
	char *s;      /* NUL-terminated */
	size_t *map;  /* map[i] for i < len; map[len] = length of the original */
	size_t len, cap;
};

void sa_ntext_release(struct ntext *t);
size_t sa_ntext_orig(const struct ntext *t, size_t pos);
T2S_MUST_CHECK
int sa_normalise(const char *sql, size_t len, enum sql_dialect dialect, struct ntext *t, bool *ret_changed);
T2S_MUST_CHECK
int sa_repair(struct ntext *t, const char *msg, int cursor, int n, bool *ret_done);

/* -------------------------------------------------------------- tokens -- */

enum tok_kind { TOK_END, TOK_WORD, TOK_QUOTED, TOK_STRING, TOK_NUMBER, TOK_PUNCT };

struct tok {
	enum tok_kind kind;
	size_t start, end;
};

struct tok sa_next_tok(const char *s, size_t len, size_t p);
bool sa_tok_is(const char *s, struct tok t, const char *word);
bool sa_tok_ident(const char *s, struct tok t, char *buf, size_t size);

/* -------------------------------------------------------------- walker -- */

/* One analysis in progress. */
struct an {
	struct sql_analysis *a;
	enum sql_dialect dialect;
	const char *orig;         /* the caller's text */
	const struct ntext *nt;   /* the parsed copy */
	size_t cap_tables, cap_columns, cap_joins, cap_blocks, cap_literals, cap_using, cap_unqualified;
	int *col_target;          /* per column: its select-list entry, or -1 */
	size_t cap_col_target;
	const char **ctes;        /* visible CTE names (borrowed from the tree) */
	size_t n_ctes, cap_ctes;
	struct t2s_error *err;
};

/* Where the walk stands. */
struct wc {
	int scope;                /* block, -1 outside any SELECT */
	enum sql_clause clause;
	bool in_agg;
	bool in_sum;              /* inside sum(), avg() or total() without DISTINCT */
	bool summed;              /* the whole argument of sum(), avg() or total() is the node walked */
	bool conjunct;            /* reached from a WHERE/ON root through AND only */
	bool disjunct;            /* reached from a WHERE/ON root through AND and OR (not NOT) */
	int target;               /* select-list entry being walked, or -1 */
	const json_t *targets;    /* the block's targetList, for output names */
	int depth;
};

/* sql_analyze_refs.c: errors, arrays and parse-tree nodes */
int sa_nomem(struct an *an);
T2S_MUST_CHECK
int sa_grow(struct an *an, void **arr, size_t n, size_t *cap, size_t size);
const char *sa_member_string(const json_t *obj, const char *key);
const json_t *sa_node_body(const json_t *node, const char *type);
const char *sa_node_type(const json_t *node);
const char *sa_string_node(const json_t *node);
const char *sa_const_string(const json_t *aconst);
bool sa_same_name(const char *x, const char *y);

/* sql_analyze_refs.c: the facts recorded */
T2S_MUST_CHECK
int sa_add_table(struct an *an, const char *schema, const char *name, const char *alias, int scope,
		 int derived_block, int *ret_index);
T2S_MUST_CHECK
int sa_add_range_var(struct an *an, const json_t *rv, struct wc wc);
T2S_MUST_CHECK
int sa_add_literal(struct an *an, const char *value, int scope, int compared, int identifier);
T2S_MUST_CHECK
int sa_add_column(struct an *an, const json_t *cr, struct wc wc, int *ret_index);
void sa_compare_quoted(struct an *an, int col, int other);

/*
 * sql_analyze.c: steps 1 and 2 alone, for another reader of the tree
 * (sql_explain.c).  On 0, *ret_tree (json_decref) and *ret_text
 * (sa_ntext_release: the parsed copy, its locations mapped to sql) are the
 * caller's, and *ret_changed (may be NULL) says whether SQLite syntax was
 * rewritten; on failure nothing is set.  Errors as for sql_analyze.
 */
T2S_MUST_CHECK
int sa_parse_tree(const char *sql, enum sql_dialect dialect, json_t **ret_tree, struct ntext *ret_text,
		  bool *ret_changed, struct t2s_error *err);

/* sql_analyze_walk.c */
T2S_MUST_CHECK
int sa_walk_tree(struct an *an, const json_t *tree);

#endif
