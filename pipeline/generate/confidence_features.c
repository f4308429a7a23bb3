/*
 * confidence_features.c - the answer scorer's features (confidence.h) read
 * off a finished job: the final statement's validation, its parse (the
 * project's analyzer), its result, the other first-round candidates'
 * results and clauses, the built-in generator's cross-check, the
 * corrections.  A helper of the job (it calls no step); the driver calls
 * it once the answer is chosen.
 */
#include "pipeline/generate/confidence_features.h"

#include "pipeline/generate/vote.h"
#include "pipeline/sql/sql_analyze.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Which feature a failing check sets; checks not listed count only in CF_FAIL_ERRORS / _WARNINGS. */
static const struct {
	const char *check;
	enum confidence_feature feature;
} CHECK_FEATURES[] = {
	{"names_resolve", CF_FAIL_NAMES},
	{"executes", CF_FAIL_NAMES},
	{"tables_joined", CF_FAIL_JOINS},
	{"joins_follow_schema_graph", CF_FAIL_JOINS},
	{"group_by_consistent", CF_FAIL_GROUPING},
	{"groups_named", CF_FAIL_GROUPING},
	{"aggregate_not_repeated", CF_FAIL_AGGREGATES},
	{"aggregates_placed_legally", CF_FAIL_AGGREGATES},
	{"aggregate_of_numbers", CF_FAIL_AGGREGATES},
	{"set_operands_not_aggregates", CF_FAIL_AGGREGATES},
	{"result_not_empty", CF_FAIL_EMPTY},
	{"first_value_meaningful", CF_FAIL_EMPTY},
	{"rows_not_all_null", CF_FAIL_EMPTY},
	{"rows_not_repeated", CF_FAIL_REPEATS},
	{"references_not_repeated", CF_FAIL_REPEATS},
	{"row_count_plausible", CF_FAIL_ROW_COUNT},
	{"order_limit_meaningful", CF_FAIL_ROW_COUNT},
	{"average_computed", CF_FAIL_QUESTION},
	{"count_answered_by_one_row", CF_FAIL_QUESTION},
	{"each_answered_per_group", CF_FAIL_QUESTION},
	{"order_direction_asked", CF_FAIL_QUESTION},
	{"tables_linked", CF_FAIL_LINKED},
};

static double capped(double x, double cap)
{
	return (x > cap ? cap : x) / cap;
}

static void validation_features(const struct validation *v, double f[CONFIDENCE_FEATURES])
{
	int errors = 0, warnings = 0;
	for (size_t k = 0; k < v->n_checks; k++) {
		const struct validation_check *c = &v->checks[k];
		if (c->ok)
			continue;
		if (c->blocking)
			errors++;
		else
			warnings++;
		for (size_t m = 0; m < sizeof(CHECK_FEATURES) / sizeof(CHECK_FEATURES[0]); m++)
			if (strcmp(c->check, CHECK_FEATURES[m].check) == 0)
				f[CHECK_FEATURES[m].feature] = 1;
	}
	f[CF_FAIL_ERRORS] = capped(errors, 3);
	f[CF_FAIL_WARNINGS] = capped(warnings, 3);
}

static void shape_features(const struct sql_analysis *a, double f[CONFIDENCE_FEATURES])
{
	size_t relations = 0;
	for (size_t k = 0; k < a->n_tables; k++)
		relations += !a->tables[k].is_derived && !a->tables[k].is_cte;
	f[CF_RELATIONS] = capped(relations > 1 ? (double)relations - 1 : 0, 3);
	f[CF_NESTED] = capped(a->n_blocks > 1 ? (double)a->n_blocks - 1 : 0, 2);
	for (size_t b = 0; b < a->n_blocks; b++) {
		const struct sql_block *k = &a->blocks[b];
		if (k->set_op != SQL_SET_NONE)
			f[CF_SET_OPERATION] = 1;
		if (k->has_group_by)
			f[CF_GROUPED] = 1;
		if (k->has_aggregate_in_select)
			f[CF_AGGREGATE] = 1;
		if (k->is_distinct && k->parent < 0)
			f[CF_DISTINCT] = 1;
	}
	for (size_t c = 0; c < a->n_columns; c++) {
		if (a->columns[c].clause == SQL_IN_HAVING)
			f[CF_HAVING] = 1;
		if (a->columns[c].clause == SQL_IN_WHERE || a->columns[c].clause == SQL_IN_HAVING)
			f[CF_FILTERS] = 1;
	}
	if (a->n_string_literals)
		f[CF_FILTERS] = 1;
	f[CF_ORDERED] = a->has_order_by;
	f[CF_LIMITED] = a->has_limit;
}

static void result_features(const struct exec_result *r, double f[CONFIDENCE_FEATURES])
{
	f[CF_ROWS_ZERO] = r->row_count == 0;
	f[CF_ROWS_ONE] = r->row_count == 1;
	f[CF_ROWS_LOG] = fmin(1.0, log1p((double)(r->row_count > 0 ? r->row_count : 0)) / 10.0);
}

static size_t question_words(const char *q)
{
	size_t n = 0;
	for (const char *p = q ? q : ""; *p;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		n++;
		while (*p && !isspace((unsigned char)*p))
			p++;
	}
	return n;
}

/* The clauses compared between candidates: their column names (FROM: relation names). */
enum { CL_SELECT, CL_FROM, CL_WHERE, CL_GROUP, CL_ORDER, CLAUSES };

/* One clause's names, lower-cased, sorted, without repeats. */
struct clause_names {
	char **names;
	size_t n;
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void clause_names_release(struct clause_names c[CLAUSES])
{
	for (int k = 0; k < CLAUSES; k++) {
		for (size_t i = 0; i < c[k].n; i++)
			free(c[k].names[i]);
		free(c[k].names);
		c[k] = (struct clause_names){0};
	}
}

static int clause_push(struct clause_names *c, const char *name, size_t cap)
{
	if (!name || c->n >= cap)
		return 0;
	char *s = strdup(name);
	if (!s)
		return -1;
	for (char *p = s; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	c->names[c->n++] = s;
	return 0;
}

static void clause_sort_unique(struct clause_names *c)
{
	if (c->n < 2)
		return;
	qsort(c->names, c->n, sizeof(char *), cmp_names);
	size_t w = 1;
	for (size_t i = 1; i < c->n; i++) {
		if (strcmp(c->names[i], c->names[w - 1]) == 0)
			free(c->names[i]);
		else
			c->names[w++] = c->names[i];
	}
	c->n = w;
}

/* The clause names of the analysed statement a; 0, or -1 when memory runs out (c is then empty). */
static int clause_names_from(const struct sql_analysis *a, struct clause_names c[CLAUSES])
{
	memset(c, 0, sizeof(struct clause_names) * CLAUSES);
	size_t cap = a->n_columns + a->n_tables;
	int rc = 0;
	for (int k = 0; k < CLAUSES && rc == 0; k++)
		if (!(c[k].names = calloc(cap ? cap : 1, sizeof(char *))))
			rc = -1;
	for (size_t t = 0; t < a->n_tables && rc == 0; t++)
		if (!a->tables[t].is_derived && !a->tables[t].is_cte)
			rc = clause_push(&c[CL_FROM], a->tables[t].name, cap);
	for (size_t i = 0; i < a->n_columns && rc == 0; i++) {
		const struct sql_column_ref *col = &a->columns[i];
		int k = col->clause == SQL_IN_SELECT			       ? CL_SELECT
			: col->clause == SQL_IN_WHERE || col->clause == SQL_IN_HAVING ? CL_WHERE
			: col->clause == SQL_IN_GROUP_BY			       ? CL_GROUP
			: col->clause == SQL_IN_ORDER_BY			       ? CL_ORDER
										       : -1;
		if (k >= 0)
			rc = clause_push(&c[k], col->name, cap);
	}
	if (rc < 0) {
		clause_names_release(c);
		return -1;
	}
	for (int k = 0; k < CLAUSES; k++)
		clause_sort_unique(&c[k]);
	return 0;
}

/* The clause names of sql; 0, or -1 when it does not parse or memory runs out (c is then empty). */
static int clause_names_of(const char *sql, enum sql_dialect d, struct clause_names c[CLAUSES])
{
	struct sql_analysis a;
	memset(c, 0, sizeof(struct clause_names) * CLAUSES);
	if (!sql || sql_analyze(sql, d, &a, NULL) < 0)
		return -1;
	int rc = clause_names_from(&a, c);
	sql_analysis_release(&a);
	return rc;
}

static bool clause_equal(const struct clause_names *a, const struct clause_names *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->names[i], b->names[i]) != 0)
			return false;
	return true;
}

/* A candidate's voice in the weighted share, as the vote weighs it (vote.h). */
static double vote_weight(const struct generate_try *t)
{
	return t->v.failed < 0 ? 1.0 : VOTE_FLAGGED_WEIGHT;
}

/*
 * How the first-round candidates' results split: the answer's share, plain
 * and weighted, the margin over the largest other class, and the number
 * of classes.
 */
static void result_agreement(const struct generate_job *j, const struct generate_try *final,
			     double f[CONFIDENCE_FEATURES])
{
	const struct generate_try *ran[MAX_TRIES];
	int klass[MAX_TRIES];
	size_t n = 0, same = 0;
	double w_same = 0, w_all = 0;
	for (size_t i = 0; i < j->n_tries; i++)
		if (j->tries[i].round == 0 && j->tries[i].sql && j->tries[i].v.executed)
			ran[n++] = &j->tries[i];
	int classes = 0, other_best = 0;
	for (size_t i = 0; i < n; i++)
		klass[i] = -1;
	for (size_t i = 0; i < n; i++) {
		bool mine = generate_same_result(ran[i], final);
		same += mine;
		w_all += vote_weight(ran[i]);
		w_same += mine ? vote_weight(ran[i]) : 0;
		if (klass[i] >= 0)
			continue;
		klass[i] = classes++;
		int size = 1;
		for (size_t k = i + 1; k < n; k++)
			if (klass[k] < 0 && generate_same_result(ran[i], ran[k])) {
				klass[k] = klass[i];
				size++;
			}
		if (!mine && size > other_best)
			other_best = size;
	}
	f[CF_CANDIDATES] = n > 1;
	f[CF_VOTE_SHARE] = n ? (double)same / (double)n : 1.0;
	f[CF_VOTE_UNANIMOUS] = n > 1 && same == n;
	f[CF_VOTE_WEIGHTED] = w_all > 0 ? w_same / w_all : 1.0;
	f[CF_VOTE_MARGIN] = n ? ((double)same - (double)other_best) / (double)n : 1.0;
	f[CF_RESULT_CLASSES] = n > 1 ? (double)classes / (double)n : 0.0;
}

/*
 * Clause agreement: for each other first-round candidate, the share of the
 * clauses (SELECT, FROM, WHERE, GROUP BY, ORDER BY) naming the same columns
 * (tables) as the answer's; their mean (1 without another candidate).  a is
 * the answer's analysis, NULL when it does not parse.
 */
static void clause_agreement(const struct generate_job *j, const struct generate_try *final,
			     const struct sql_analysis *a, enum sql_dialect d, double f[CONFIDENCE_FEATURES])
{
	size_t compared = 0, others = 0;
	double clause_sum = 0;
	struct clause_names mine[CLAUSES];
	f[CF_CLAUSE_AGREEMENT] = 1.0;
	for (size_t i = 0; i < j->n_tries; i++)
		others += j->tries[i].round == 0 && j->tries[i].sql && &j->tries[i] != final;
	if (!others || !a || clause_names_from(a, mine) < 0)
		return;
	for (size_t i = 0; i < j->n_tries; i++) {
		const struct generate_try *t = &j->tries[i];
		if (t->round != 0 || !t->sql || t == final)
			continue;
		struct clause_names theirs[CLAUSES];
		double agree = 0;
		if (clause_names_of(t->sql, d, theirs) == 0) {
			for (int k = 0; k < CLAUSES; k++)
				agree += clause_equal(&mine[k], &theirs[k]);
			clause_names_release(theirs);
		}
		clause_sum += agree / CLAUSES;
		compared++;
	}
	clause_names_release(mine);
	if (compared)
		f[CF_CLAUSE_AGREEMENT] = clause_sum / (double)compared;
}

void confidence_features_of(const struct generate_job *j, const struct generate_try *final, enum sql_dialect d,
			    double f[CONFIDENCE_FEATURES])
{
	memset(f, 0, sizeof(double) * CONFIDENCE_FEATURES);
	validation_features(&final->v, f);
	struct sql_analysis a;
	bool parsed = final->sql && sql_analyze(final->sql, d, &a, NULL) == 0;
	if (parsed)
		shape_features(&a, f);
	if (final->v.executed)
		result_features(&final->v.result, f);
	f[CF_QUESTION_WORDS] = capped((double)question_words(j->rq->question), 40);
	f[CF_BUILTIN_AGREES] = j->crosscheck == GENERATE_CROSSCHECK_AGREES;
	f[CF_BUILTIN_DIFFERS] = j->crosscheck == GENERATE_CROSSCHECK_DIFFERS;
	result_agreement(j, final, f);
	clause_agreement(j, final, parsed ? &a : NULL, d, f);
	if (parsed)
		sql_analysis_release(&a);
	f[CF_CORRECTED] = final->round > 0;
	f[CF_CORRECTIONS] = capped((double)(j->corrections ? json_array_size(j->corrections) : 0), 3);
	if (final->logprob_tokens > 0) {
		f[CF_LOGPROB_PRESENT] = 1;
		f[CF_LOGPROB_MEAN] = exp(final->logprob_sum / (double)final->logprob_tokens);
	}
}

json_t *confidence_features_json(const double f[CONFIDENCE_FEATURES])
{
	json_t *o = json_object();
	for (int k = 0; o && k < CONFIDENCE_FEATURES; k++)
		json_object_set_new(o, confidence_feature_names[k], json_real(round(f[k] * 10000) / 10000));
	return o;
}
