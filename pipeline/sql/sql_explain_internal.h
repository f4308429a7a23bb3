/*
 * sql_explain_internal.h - what the files of sql_explain share (not for use
 * outside pipeline/sql/): the explanation in progress and the scopes of the
 * query blocks being described.  Functions shared between the files carry
 * the prefix ex_.
 *
 * Calls flow one way: sql_explain.c (the driver) calls the statement step
 * (sql_explain_select.c) and the fallback (sql_explain_fallback.c); the
 * statement step calls the expressions (sql_explain_expr.c); everything
 * calls the words (sql_explain_words.c).  A subquery inside an expression is
 * described through the `block` hook the driver sets, so the expressions
 * never name the statement step.
 *
 * Errors: writers return 0 or a negative T2S_ERR_* code (out of memory, or
 * the text past SQL_EXPLAIN_MAX_LEN); the first failure ends the
 * explanation.
 */
#ifndef T2S_SQL_EXPLAIN_INTERNAL_H
#define T2S_SQL_EXPLAIN_INTERNAL_H

#include "common/contract.h"
#include "common/strbuf.h"
#include "pipeline/sql/sql_analyze_internal.h"
#include "pipeline/sql/sql_explain.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Deepest nesting of expressions and query blocks described; deeper parts read "a nested expression". */
#define EX_MAX_DEPTH 64
/* Longest name recovered from the text; longer ones keep the parser's spelling. */
#define EX_NAME_MAX 256

/* One relation of a block's FROM, as the block's column references may name it. */
struct ex_rel {
	char name[EX_NAME_MAX];  /* the table (or CTE) name as written; "" for a derived table */
	char alias[EX_NAME_MAX]; /* "" when none */
};

/* The relations of one query block; its parent is the enclosing block (correlation). */
struct ex_scope {
	struct ex_rel *rels;
	size_t n_rels, cap_rels;
	const struct ex_scope *parent;
};

struct ex;

/* A query block (a SelectStmt body) described as a noun phrase, into sb. */
typedef int (*ex_block_fn)(struct ex *x, const json_t *select, struct strbuf *sb);

/* One explanation in progress. */
struct ex {
	enum sql_dialect dialect;
	const char *orig;          /* the caller's text */
	const struct ntext *nt;    /* the parsed copy: node locations point into it */
	const struct ex_scope *scope; /* the innermost block being described; NULL outside any */
	int depth;
	ex_block_fn block;         /* set by the driver: sql_explain_select.c's noun phrase */
	bool exists_row;           /* the next block is an EXISTS subquery: "row from ..." stands for its select list */
};

/* ------------------------------------------------ sql_explain_words.c -- */

T2S_MUST_CHECK
int ex_add(struct strbuf *sb, const char *s);
T2S_MUST_CHECK
int ex_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const json_t *ex_body(const json_t *node, const char *type);
const char *ex_type(const json_t *node);
const char *ex_str(const json_t *obj, const char *key);
const char *ex_sval(const json_t *string_node);
bool ex_bool(const json_t *obj, const char *key);
size_t ex_list_len(const json_t *list);
/*
 * The spelling in the text of folded, a name the parser read at or after
 * body's "location" (a dotted name's parts, an alias after its table): the
 * first identifier token there equal to it but for case, copied into buf
 * (EX_NAME_MAX bytes); folded itself when none is found (or it is NULL).
 */
const char *ex_written(const struct ex *x, const json_t *body, const char *folded, char *buf);
/* Was the name at body's location written in double quotes (a SQLite string, maybe)? */
bool ex_double_quoted(const struct ex *x, const json_t *body);
/* The relation of scope chain s that qualifier q names, or NULL; *ret_outer when found in a parent. */
const struct ex_rel *ex_resolve(const struct ex_scope *s, const char *q, bool *ret_outer);
/* How many relations of s are named like r (self-joins: the alias tells them apart). */
size_t ex_same_table(const struct ex_scope *s, const struct ex_rel *r);
T2S_MUST_CHECK
int ex_rel_add(struct ex_scope *s, const char *name, const char *alias, struct ex_rel **ret);
void ex_scope_release(struct ex_scope *s);
/* A relation as the text names it: "singer", or "singer T1" in a self-join. */
T2S_MUST_CHECK
int ex_add_rel(struct strbuf *sb, const struct ex_scope *s, const struct ex_rel *r);
/* s's possessive: "singer's", "orders'". */
T2S_MUST_CHECK
int ex_add_possessive(struct strbuf *sb, const char *s);
/* A constant (A_Const body) as written: 'France', 20, 1.5, true, NULL. */
T2S_MUST_CHECK
int ex_add_const(struct strbuf *sb, const json_t *aconst);
/* The integer value of an A_Const node, or -1 when it is none (or negative). */
long long ex_const_int(const json_t *node);
/* Upper-case the first letter at sb->buf[from] (ASCII). */
void ex_capitalise(struct strbuf *sb, size_t from);

/* ------------------------------------------------- sql_explain_expr.c -- */

/* An expression in words. */
T2S_MUST_CHECK
int ex_expr(struct ex *x, const json_t *node, struct strbuf *sb);
/* A JOIN's ON condition: equalities of same-named columns read "on Name". */
T2S_MUST_CHECK
int ex_join_condition(struct ex *x, const json_t *node, struct strbuf *sb);
/* Is node an aggregate call (count, sum, avg, min, max, total, group_concat, string_agg...)? */
bool ex_is_aggregate(const json_t *node);
/* Is node count(...) without FILTER or OVER? */
bool ex_is_count(const json_t *node);

/* ----------------------------------------------- sql_explain_select.c -- */

/* A whole statement (a "stmt" of the tree) as one or more sentences. */
T2S_MUST_CHECK
int ex_statement(struct ex *x, const json_t *stmt, struct strbuf *sb);
/* The noun phrase of a query block, for the block hook. */
T2S_MUST_CHECK
int ex_block_phrase(struct ex *x, const json_t *select, struct strbuf *sb);

/* --------------------------------------------- sql_explain_fallback.c -- */

/*
 * What the tokens of sql name, after why ("the statement could not be read
 * in full"): at most 24 names of each kind, so it always fits;
 * -T2S_ERR_SQL_INVALID when no table.
 */
T2S_MUST_CHECK
int ex_fallback(const char *sql, const char *why, struct strbuf *sb);

#endif
