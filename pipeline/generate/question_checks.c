/*
 * question_checks.c - the result's shape against the statement and the
 * question (see question_checks.h).  The English the checks understand is
 * the one cue table of pipeline/text/question_cues.c.
 */
#include "pipeline/generate/question_checks.h"

#include "pipeline/text/question_cues.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Rows of rows equal to an earlier one (as compact JSON); -T2S_ERR_NOMEM. */
static long repeated_rows(json_t *rows)
{
	size_t n = json_array_size(rows);
	if (n < 2)
		return 0;
	char **text = calloc(n, sizeof(*text));
	long repeated = 0;
	if (!text)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < n && repeated >= 0; i++)
		if (!(text[i] = json_dumps(json_array_get(rows, i), JSON_COMPACT | JSON_ENCODE_ANY)))
			repeated = -T2S_ERR_NOMEM;
	if (repeated == 0) {
		qsort(text, n, sizeof(*text), cmp_str);
		for (size_t i = 1; i < n; i++)
			repeated += strcmp(text[i - 1], text[i]) == 0;
	}
	for (size_t i = 0; i < n; i++)
		free(text[i]);
	free(text);
	return repeated;
}

static int rows_not_repeated(struct validation *v)
{
	bool joined = v->top_joined && v->top_multiplied;
	if ((!joined && !v->top_references) || v->top_distinct || v->top_grouped)
		return 0;
	const char *check = joined ? "rows_not_repeated" : "references_not_repeated";
	long repeated = repeated_rows(v->result.rows);
	if (repeated < 0)
		return (int)repeated;
	v->rows_repeated = repeated > 0;
	if (repeated > 0 && joined)
		return validation_add(v, 3, check, false, true,
				      "%ld of the %ld rows repeat an earlier row: the join repeats each row once per "
				      "matching row of the joined table; use SELECT DISTINCT if distinct things are "
				      "asked for", repeated, v->result.row_count);
	if (repeated > 0)
		return validation_add(v, 3, check, false, true,
				      "%ld of the %ld rows repeat an earlier row: the selected foreign keys name the "
				      "same thing once per referencing row; use SELECT DISTINCT if distinct things "
				      "are asked for", repeated, v->result.row_count);
	return validation_add(v, 3, check, true, true, joined ? "no row of the join repeats" : "no row repeats");
}

/* Groups counted or summed without saying which group each row is (blocking). */
static int groups_named(struct validation *v)
{
	long rows = v->result.row_count;
	if (!v->top_unnamed_groups || rows <= 1)
		return validation_add(v, 3, "groups_named", true, true, "each group's row says which group it is");
	return validation_add(v, 3, "groups_named", false, true,
			      "the result has %ld rows, one per group, but shows only aggregates: nothing says "
			      "which group each value belongs to; add the grouped column (or the group's name) "
			      "to the select list", rows);
}

/* The question's average, highest or lowest against the statement's avg() and ORDER BY ... LIMIT. */
static int scale_asked(const struct question_reading *q, struct validation *v)
{
	int rc = 0;
	if (q->asks_average)
		rc = validation_add(v, 3, "average_computed", v->averages, true, v->averages ?
				    "the statement computes or reads an average" :
				    "the question asks for an average, but the statement computes none: use avg() "
				    "of the quantity the average is asked of");
	if (rc < 0)
		return rc;
	if (q->asks_sort_desc != q->asks_sort_asc && (v->sorted_asc || v->sorted_desc)) {
		bool against = q->asks_sort_desc ? !v->sorted_desc : !v->sorted_asc;
		return validation_add(v, 3, "order_direction_asked", !against, true, against ?
				      "the question asks for the list in %s order, but ORDER BY sorts it %s: order %s" :
				      "ORDER BY sorts the way the question asks", q->asks_sort_desc ? "descending" :
				      "ascending", q->asks_sort_desc ? "ascending" : "descending",
				      q->asks_sort_desc ? "DESC" : "ASC");
	}
	if (q->asks_highest == q->asks_lowest || !(v->limited_asc || v->limited_desc))
		return 0;
	bool against = q->asks_highest ? !v->limited_desc : !v->limited_asc;
	if (!against)
		return validation_add(v, 3, "order_direction_asked", true, true,
				      "ORDER BY ... LIMIT runs the way the question asks");
	return validation_add(v, 3, "order_direction_asked", false, true,
			      "the question asks for the %s, but ORDER BY ... LIMIT keeps the %s rows: order %s",
			      q->asks_highest ? "highest / most" : "lowest / least",
			      q->asks_highest ? "lowest" : "highest", q->asks_highest ? "DESC" : "ASC");
}

int question_checks(const struct validate_context *cx, struct validation *v)
{
	if (!v->executed || !v->analysed)
		return 0;
	struct question_reading q;
	question_read(cx->question, &q);
	int rc = scale_asked(&q, v);
	if (rc < 0 || !v->top_known)
		return rc;
	if ((rc = rows_not_repeated(v)) < 0 || (rc = groups_named(v)) < 0 || !cx->question)
		return rc;
	long rows = v->result.row_count;
	if (q.asks_count && !q.asks_each && !v->top_grouped &&
	    (rc = validation_add(v, 3, "count_answered_by_one_row", rows <= 1, true, rows <= 1 ? "%ld row" :
				 "the question asks how many, but the result has %ld rows: answer with one count "
				 "(count(*), or sum() of a quantity), or GROUP BY if a count per group is meant",
				 rows)) < 0)
		return rc;
	if (q.asks_each && !v->top_grouped)
		rc = validation_add(v, 3, "each_answered_per_group", rows != 1, true, rows != 1 ? "%ld rows" :
				    "the question asks for something for each thing, but the result is one row "
				    "without GROUP BY: group the rows (GROUP BY) to give one row per thing",
				    rows);
	return rc;
}
