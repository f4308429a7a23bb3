/*
 * sql_explain.c - the driver of sql_explain (sql_explain.h): the statement
 * parsed as sql_analyze parses it (SQLite syntax normalised and repaired),
 * each statement of the tree described by sql_explain_select.c, the
 * fallback of sql_explain_fallback.c when it does not parse.
 *
 * The module's files, one job each:
 *   sql_explain.c           the API and the parse (this file);
 *   sql_explain_select.c    query blocks, FROM and joins, clauses, set operations;
 *   sql_explain_expr.c      expressions, aggregates, conditions, subqueries;
 *   sql_explain_words.c     appending words, nodes, names as written, scopes;
 *   sql_explain_fallback.c  what the tokens name when nothing parses;
 *   sql_explain_internal.h  what they share.
 */
#include "pipeline/sql/sql_explain_internal.h"

#include <stdlib.h>

/* strbuf's refusal past its maximum is this module's "too long". */
static int too_long_or(int rc, struct t2s_error *err)
{
	if (rc == -T2S_ERR_INVALID || rc == -T2S_ERR_SQL_REJECTED)
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "the explanation would be longer than %d bytes",
				     SQL_EXPLAIN_MAX_LEN);
	if (rc == -T2S_ERR_NOMEM)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory explaining the statement");
	return t2s_error_set(err, (enum t2s_code)-rc, "the statement could not be explained");
}

/* Every statement of tree, one sentence (or more) each, into sb. */
static int explain_tree(struct ex *x, const json_t *tree, struct strbuf *sb)
{
	const json_t *stmts = json_object_get(tree, "stmts");
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < ex_list_len(stmts); i++) {
		if (i)
			rc = ex_add(sb, " ");
		if (rc == 0)
			rc = ex_statement(x, json_object_get(json_array_get(stmts, i), "stmt"), sb);
	}
	return rc;
}

int sql_explain(const char *sql, enum sql_dialect dialect, char **ret, struct t2s_error *err)
{
	struct ntext nt = {0};
	struct strbuf sb;
	struct t2s_error perr = {0};
	json_t *tree = NULL;
	int rc;

	if (ret)
		*ret = NULL;
	if (!sql || !ret || (dialect != SQL_DIALECT_SQLITE && dialect != SQL_DIALECT_POSTGRES))
		return t2s_error_set(err, T2S_ERR_INVALID, "no SQL or no dialect given");
	strbuf_init(&sb, SQL_EXPLAIN_MAX_LEN);
	rc = sa_parse_tree(sql, dialect, &tree, &nt, NULL, &perr);
	if (rc == -T2S_ERR_SQL_INVALID) {
		rc = ex_fallback(sql, "the statement could not be read in full", &sb);
		if (rc == -T2S_ERR_SQL_INVALID) {
			if (err)
				*err = perr;
			goto out;
		}
	} else if (rc < 0) {
		if (err)
			*err = perr;
		goto out;
	} else {
		struct ex x = {.dialect = dialect, .orig = sql, .nt = &nt, .block = ex_block_phrase};
		rc = explain_tree(&x, tree, &sb);
		if (rc == -T2S_ERR_INVALID) { /* past SQL_EXPLAIN_MAX_LEN: what its words name instead */
			strbuf_release(&sb);
			strbuf_init(&sb, SQL_EXPLAIN_MAX_LEN);
			rc = ex_fallback(sql, "the statement is too long to explain in full", &sb);
		}
	}
	if (rc == 0 && sb.len == 0)
		rc = t2s_error_set(err, T2S_ERR_SQL_INVALID, "the statement is empty");
	else if (rc < 0)
		rc = too_long_or(rc, err);
	if (rc == 0 && !(*ret = strbuf_detach(&sb, NULL)))
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory explaining the statement");
out:
	strbuf_release(&sb);
	json_decref(tree);
	sa_ntext_release(&nt);
	return rc;
}

json_t *sql_explain_json(const char *sql, enum sql_dialect dialect)
{
	char *text = NULL;
	if (!sql || sql_explain(sql, dialect, &text, NULL) < 0)
		return json_null();
	json_t *j = json_string(text); /* NULL for invalid UTF-8 in the SQL's names or values */
	if (!j)
		j = json_null();
	free(text);
	return j;
}
