/*
 * pipeline_state.c - the entry points over the state store (see
 * pipeline.h): description overrides checked against the schema, examples
 * whose SQL is validated on the database before it is stored, and users'
 * feedback on answers.
 */
#include "pipeline/pipeline_internal.h"

#include "pipeline/sql/sql_view.h"

#include "common/metrics.h"

#include <pthread.h>
#include <string.h>

/* The state store, or -T2S_ERR_UNAVAILABLE naming why it could not be opened. */
static int store(struct pipeline *p, struct state_store **ret, struct t2s_error *err)
{
	*ret = p->state;
	if (!p->state)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "the state store is unavailable: %s", p->state_error);
	return 0;
}

/* Validation runs the statement read-only with at most one row. */
static struct exec_limits validation_limits(const struct pipeline *p)
{
	struct exec_limits lim = p->exec;
	lim.max_rows = 1;
	return lim;
}

/* ---- description overrides ------------------------------------------------------ */

int pipeline_overrides_list(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant,
			    struct state_overrides *ret, struct t2s_error *err)
{
	struct state_store *st;
	struct schema *view = NULL;
	int rc = store(p, &st, err);
	if (rc == 0)
		rc = state_store_overrides_list(st, db->cfg->name, ret, err);
	if (rc == 0 && grant && (rc = catalog_db_schema_granted(db, grant, &view, err)) == 0) {
		size_t kept = 0;
		for (size_t i = 0; i < ret->n; i++)
			if (schema_find_table(view, ret->items[i].table))
				ret->items[kept++] = ret->items[i];
		ret->n = kept;
		schema_unref(view);
	}
	return rc;
}

/* Entry i names a table of s by its exact API name (stored under it) and, when it has one, a column of it. */
static int check_override(const struct schema *s, const char *database, const struct pipeline_override *o, size_t i,
			  struct t2s_error *err)
{
	const struct schema_table *tab = schema_find_table(s, o->table);
	if (!tab)
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu]: no table '%.100s' in %s", i, o->table,
				     database);
	bool found = !o->column;
	for (size_t c = 0; o->column && c < tab->n_columns; c++)
		found |= strcmp(tab->columns[c].name, o->column) == 0;
	if (!found)
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu]: no column '%.100s' in table %s", i, o->column,
				     tab->api_name);
	return 0;
}

void pipeline_overrides_release(struct state_overrides *l)
{
	state_overrides_release(l);
}

void pipeline_examples_release(struct state_examples *l)
{
	state_examples_release(l);
}

void pipeline_feedbacks_release(struct state_feedbacks *l)
{
	state_feedbacks_release(l);
}

int pipeline_overrides_put(struct pipeline *p, struct catalog_db *db, const struct pipeline_override *items, size_t n,
			   struct state_overrides *ret, struct t2s_error *err)
{
	const char *database = db->cfg->name;
	struct state_store *st;
	struct schema *s = NULL;
	int rc = store(p, &st, err);
	if (rc == 0)
		rc = catalog_db_schema(db, &s, err);
	for (size_t i = 0; rc == 0 && i < n; i++) /* every entry is checked before any is applied */
		rc = check_override(s, database, &items[i], i, err);
	for (size_t i = 0; rc == 0 && i < n; i++) { /* o->table is the table's API name (checked above) */
		const struct pipeline_override *o = &items[i];
		if (o->text) {
			rc = state_store_override_put(st, database, o->table, o->column, o->text, err);
		} else if ((rc = state_store_override_delete(st, database, o->table, o->column, err)) ==
			   -T2S_ERR_NOT_FOUND) {
			rc = 0; /* removing what is not there */
			*err = (struct t2s_error){0};
		}
	}
	schema_unref(s);
	if (st && n > 0)
		pipeline_sync_state_changed(p, db); /* also after a failure part-way: earlier entries were stored */
	return rc < 0 ? rc : state_store_overrides_list(st, database, ret, err);
}

/* ---- examples --------------------------------------------------------------------- */

/*
 * Keep in l only the examples a caller with grant may see: those whose SQL
 * reads its tables alone (sql_view.h); total then counts only what is kept.
 */
static int examples_visible(struct catalog_db *db, const struct schema_grant *grant, struct state_examples *l,
			    struct t2s_error *err)
{
	if (!grant)
		return 0;
	struct schema *view;
	int rc = catalog_db_schema_granted(db, grant, &view, err);
	if (rc < 0)
		return rc;
	size_t kept = 0;
	for (size_t i = 0; i < l->n; i++)
		if (sql_reads_only_view(view, l->items[i].sql))
			l->items[kept++] = l->items[i];
	l->total = (int64_t)kept;
	l->n = kept;
	schema_unref(view);
	return 0;
}

int pipeline_examples_list(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant, long limit,
			   long offset, struct state_examples *ret, struct t2s_error *err)
{
	struct state_store *st;
	int rc = store(p, &st, err);
	if (rc == 0)
		rc = state_store_examples_list(st, db->cfg->name, limit, offset, ret, err);
	return rc < 0 ? rc : examples_visible(db, grant, ret, err);
}

int pipeline_example_get(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant, int64_t id,
			 struct state_examples *ret, struct t2s_error *err)
{
	struct state_store *st;
	*ret = (struct state_examples){0};
	int rc = store(p, &st, err);
	if (rc == 0)
		rc = state_store_example_get(st, db->cfg->name, id, ret, err);
	if (rc == 0)
		rc = examples_visible(db, grant, ret, err);
	if (rc == 0 && ret->n != 1)
		rc = t2s_error_set(err, T2S_ERR_NOT_FOUND, "no example with id %lld", (long long)id);
	return rc;
}

int pipeline_example_add(struct pipeline *p, struct catalog_db *db, const char *question, const char *sql,
			 struct state_examples *ret, struct t2s_error *err)
{
	struct state_store *st;
	struct exec_limits lim = validation_limits(p);
	int64_t id;
	*ret = (struct state_examples){0};
	int rc = store(p, &st, err);
	if (rc == 0)
		rc = exec_validate(db, sql, &lim, err);
	if (rc == 0)
		rc = state_store_example_add(st, db->cfg->name, question, sql, &id, err);
	if (rc == 0)
		pipeline_sync_state_changed(p, db);
	if (rc == 0 && (rc = state_store_example_get(st, db->cfg->name, id, ret, err)) == 0 && ret->n != 1)
		rc = t2s_error_set(err, T2S_ERR_INTERNAL, "stored example %lld not found", (long long)id);
	return rc;
}

int pipeline_example_delete(struct pipeline *p, struct catalog_db *db, int64_t id, struct t2s_error *err)
{
	struct state_store *st;
	int rc = store(p, &st, err);
	if (rc == 0 && (rc = state_store_example_delete(st, db->cfg->name, id, err)) == 0)
		pipeline_sync_state_changed(p, db);
	return rc;
}

/* ---- feedback --------------------------------------------------------------------- */

static struct metric_family *m_feedback, *m_rejected;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

static void register_metrics(void)
{
	static const char *const verdict[] = {"verdict", NULL};
	m_feedback = metrics_family("text2sqld_feedback_total",
				    "Feedback stored by verdict (correct ones became examples, wrong ones await review).",
				    METRIC_COUNTER, verdict, NULL, 0);
	m_rejected = metrics_family("text2sqld_feedback_rejected_total",
				    "Feedback marked correct whose SQL failed validation (not stored).", METRIC_COUNTER,
				    NULL, NULL, 0);
}

int pipeline_feedback_add(struct pipeline *p, struct catalog_db *db, const char *question, const char *sql,
			  bool correct, const char *note, struct state_feedbacks *ret, struct t2s_error *err)
{
	pthread_once(&metrics_once, register_metrics);
	struct state_store *st;
	int64_t id = 0, example_id = 0;
	*ret = (struct state_feedbacks){0};
	int rc = store(p, &st, err);
	if (rc == 0 && correct) {
		struct exec_limits lim = validation_limits(p);
		if ((rc = exec_validate(db, sql, &lim, err)) < 0 && err->code != T2S_ERR_UNAVAILABLE &&
		    err->code != T2S_ERR_TIMEOUT)
			metrics_add(m_rejected, NULL, 1);
	}
	if (rc == 0)
		rc = state_store_feedback_add(st, db->cfg->name, question, sql, correct, note, &id, &example_id, err);
	if (rc == 0)
		pipeline_sync_state_changed(p, db);
	if (rc == 0)
		rc = state_store_feedback_get(st, id, ret, err);
	if (rc == 0) {
		const char *verdict[] = {ret->items[0].correct ? "correct" : "wrong", NULL};
		metrics_add(m_feedback, verdict, 1);
	}
	return rc;
}

int pipeline_feedback_list(struct pipeline *p, const char *database, int correct, long limit, long offset,
			   struct state_feedbacks *ret, struct t2s_error *err)
{
	struct state_store *st;
	*ret = (struct state_feedbacks){0};
	int rc = store(p, &st, err);
	return rc < 0 ? rc : state_store_feedback_list(st, database, correct, limit, offset, ret, err);
}

int pipeline_feedback_get(struct pipeline *p, int64_t id, struct state_feedbacks *ret, struct t2s_error *err)
{
	struct state_store *st;
	*ret = (struct state_feedbacks){0};
	int rc = store(p, &st, err);
	return rc < 0 ? rc : state_store_feedback_get(st, id, ret, err);
}
