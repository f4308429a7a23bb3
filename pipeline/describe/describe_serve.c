/*
 * describe_serve.c - one /describe request end to end (see describe_serve.h).
 *
 * A request goes: names -> table indexes (deduplicated); overrides and, with
 * a model, the stored descriptions of this schema hash from the state store;
 * the stored descriptions sorted once by (table, column) so that each item
 * is found by binary search; tables not wholly covered by stored text and
 * overrides go to describe_run; the merged result is built in one array
 * sized up front; the tables the model has just described are stored.
 *
 * Ownership: the result under construction (struct serve.out) is the only
 * owner of what it holds.  The stage's result hands over its error list as
 * soon as it exists (its pointer is cleared at once), and its item texts are
 * moved one by one (each cleared as it moves), so whatever fails later,
 * releasing both results frees every allocation exactly once.
 */
#include "pipeline/describe/describe_serve.h"

#include "common/clock.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct serve {
	const struct describe_request *rq;
	const struct schema *s;
	int *tables; /* asked tables, deduplicated, in the order asked */
	size_t n_tables;
	struct state_overrides ov;               /* the database's overrides, from the store */
	struct describe_override *overrides;     /* the same, as the stage takes them */
	int *ov_target;                          /* per override: table index, column index (-2: none) */
	struct state_descriptions stored;        /* stored descriptions at this schema hash */
	const struct state_description **sorted; /* stored.items by (table, column), NULL first */
	bool *fresh;                             /* per asked table: described by the stage now */
	struct describe_result out;
};

static int nomem(struct t2s_error *err)
{
	return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
}

/* ---- names --------------------------------------------------------------- */

/* rq's names (or every table) as deduplicated indexes into s->tables. */
static int resolve_tables(struct serve *sv, struct t2s_error *err)
{
	const struct describe_request *rq = sv->rq;
	size_t n = rq->tables ? rq->n_tables : sv->s->n_tables;
	unsigned char *seen = calloc(sv->s->n_tables + 1, 1);

	sv->tables = malloc((n ? n : 1) * sizeof(*sv->tables));
	if (!seen || !sv->tables) {
		free(seen);
		return nomem(err);
	}
	for (size_t i = 0; i < n; i++) {
		if (rq->tables && !rq->tables[i]) {
			free(seen);
			return t2s_error_set(err, T2S_ERR_INVALID, "tables[%zu]: no table named '(not a string)'", i);
		}
		const struct schema_table *t = rq->tables ? schema_find_table(sv->s, rq->tables[i]) : &sv->s->tables[i];
		if (!t) {
			free(seen);
			return t2s_error_set(err, T2S_ERR_NOT_FOUND, "tables[%zu]: no table named '%.100s'", i,
					     rq->tables[i]);
		}
		size_t ti = (size_t)(t - sv->s->tables);
		if (!seen[ti]) {
			seen[ti] = 1;
			sv->tables[sv->n_tables++] = (int)ti;
		}
	}
	free(seen);
	return 0;
}

/* ---- what the state store holds ------------------------------------------- */

static int load_overrides(struct serve *sv, struct t2s_error *err)
{
	if (!sv->rq->state)
		return 0;
	int rc = state_store_overrides_list(sv->rq->state, sv->s->database, &sv->ov, err);
	if (rc == -T2S_ERR_UNAVAILABLE || rc == -T2S_ERR_TIMEOUT) {
		/* The store is down (it reopens by itself): describe from metadata and the model, and say so. */
		memset(&sv->ov, 0, sizeof(sv->ov));
		sv->out.state_unavailable = true;
		t2s_error_clear(err);
		return 0;
	}
	if (rc < 0 || sv->ov.n == 0)
		return rc;
	sv->overrides = calloc(sv->ov.n, sizeof(*sv->overrides));
	sv->ov_target = malloc(2 * sv->ov.n * sizeof(*sv->ov_target));
	if (!sv->overrides || !sv->ov_target)
		return nomem(err);
	for (size_t i = 0; i < sv->ov.n; i++) {
		sv->overrides[i] = (struct describe_override){sv->ov.items[i].table, sv->ov.items[i].column,
							      sv->ov.items[i].text};
		if (!describe_override_target(sv->s, &sv->overrides[i], &sv->ov_target[2 * i], &sv->ov_target[2 * i + 1]))
			sv->ov_target[2 * i] = sv->ov_target[2 * i + 1] = -2;
	}
	return 0;
}

/* Order of stored items: table, then column with the table's own item (NULL) first. */
static int cmp_key(const char *table_a, const char *column_a, const char *table_b, const char *column_b)
{
	int c = strcmp(table_a, table_b);
	if (c || column_a == column_b)
		return c;
	if (!column_a || !column_b)
		return column_a ? 1 : -1;
	return strcmp(column_a, column_b);
}

static int cmp_stored(const void *a, const void *b)
{
	const struct state_description *x = *(const struct state_description *const *)a;
	const struct state_description *y = *(const struct state_description *const *)b;
	return cmp_key(x->table, x->column, y->table, y->column);
}

/*
 * With a model, the stored descriptions of this schema hash, sorted.  A
 * store that cannot answer is treated as empty (the stage will describe).
 */
static int load_stored(struct serve *sv, struct t2s_error *err)
{
	struct t2s_error ignored;
	if (!sv->rq->model || !sv->rq->state ||
	    state_store_descriptions_get_all(sv->rq->state, sv->s->database, sv->s->hash, &sv->stored, &ignored) < 0 ||
	    sv->stored.n == 0)
		return 0;
	sv->sorted = malloc(sv->stored.n * sizeof(*sv->sorted));
	if (!sv->sorted)
		return nomem(err);
	for (size_t i = 0; i < sv->stored.n; i++)
		sv->sorted[i] = &sv->stored.items[i];
	qsort(sv->sorted, sv->stored.n, sizeof(*sv->sorted), cmp_stored);
	return 0;
}

/* The stored item of (table, column) (column NULL: the table's own), or NULL. */
static const struct state_description *stored_item(const struct serve *sv, const char *table, const char *column)
{
	size_t lo = 0, hi = sv->sorted ? sv->stored.n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_key(sv->sorted[mid]->table, sv->sorted[mid]->column, table, column);
		if (c == 0)
			return sv->sorted[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The describe stage's static source string for a stored one. */
static const char *stored_source(const struct state_description *d)
{
	return strcmp(d->source, describe_source_model) == 0 ? describe_source_model : describe_source_metadata;
}

/* ---- one asked table served from the store -------------------------------- */

/*
 * Fill ov_text[0..1+n_columns) with the override text of table ti (slot 0)
 * and of each column, by the stage's own matching rule (later ones win).
 */
static void table_overrides(const struct serve *sv, int ti, const char **ov_text)
{
	for (size_t i = 0; i < sv->ov.n; i++)
		if (sv->ov_target[2 * i] == ti)
			ov_text[sv->ov_target[2 * i + 1] + 1] = sv->overrides[i].text;
}

/* True when every item of table ti has an override or a stored text. */
static bool wholly_stored(const struct serve *sv, int ti, const char **ov_text)
{
	const struct schema_table *t = &sv->s->tables[ti];
	for (int c = -1; c < (int)t->n_columns; c++)
		if (!ov_text[c + 1] && !stored_item(sv, t->api_name, c < 0 ? NULL : t->columns[c].name))
			return false;
	return true;
}

/* Append the items of wholly stored table ti: override, else stored text. */
static int push_stored(struct serve *sv, int ti, const char **ov_text)
{
	const struct schema_table *t = &sv->s->tables[ti];
	for (int c = -1; c < (int)t->n_columns; c++) {
		const struct state_description *d = stored_item(sv, t->api_name, c < 0 ? NULL : t->columns[c].name);
		const char *ov = ov_text[c + 1];
		char *copy = strdup(ov ? ov : d->text);
		if (!copy)
			return -T2S_ERR_NOMEM;
		sv->out.items[sv->out.n_items++] = (struct describe_item){
			.table = ti, .column = c, .text = copy, .source = ov ? describe_source_override : stored_source(d)};
	}
	sv->out.cache_hits++;
	return 0;
}

/* ---- the merge ------------------------------------------------------------ */

/* Mark the asked tables that stored text and overrides do not wholly cover. */
static int pick_fresh(struct serve *sv, int **ret_todo, size_t *ret_n, struct t2s_error *err)
{
	size_t max_cols = 0, n = 0;
	for (size_t i = 0; i < sv->n_tables; i++)
		if (sv->s->tables[sv->tables[i]].n_columns > max_cols)
			max_cols = sv->s->tables[sv->tables[i]].n_columns;
	const char **ov_text = malloc((max_cols + 1) * sizeof(*ov_text));
	int *todo = malloc((sv->n_tables ? sv->n_tables : 1) * sizeof(*todo));
	sv->fresh = calloc(sv->n_tables ? sv->n_tables : 1, sizeof(*sv->fresh));
	if (!ov_text || !todo || !sv->fresh) {
		free(ov_text);
		free(todo);
		return nomem(err);
	}
	for (size_t i = 0; i < sv->n_tables; i++) {
		int ti = sv->tables[i];
		if (sv->sorted) {
			memset(ov_text, 0, (sv->s->tables[ti].n_columns + 1) * sizeof(*ov_text));
			table_overrides(sv, ti, ov_text);
		}
		sv->fresh[i] = !sv->sorted || !wholly_stored(sv, ti, ov_text);
		if (sv->fresh[i])
			todo[n++] = ti;
	}
	free(ov_text);
	*ret_todo = todo;
	*ret_n = n;
	return 0;
}

/*
 * Take over what the stage's result reports (counters, errors) into out;
 * fresh no longer owns its errors afterwards.
 */
static void take_report(struct describe_result *out, struct describe_result *fresh)
{
	out->model_calls = fresh->model_calls;
	out->model_errors = fresh->model_errors;
	out->cache_hits = fresh->cache_hits;
	out->unknown_columns = fresh->unknown_columns;
	out->prompt_tokens = fresh->prompt_tokens;
	out->completion_tokens = fresh->completion_tokens;
	out->errors = fresh->errors;
	out->n_errors = fresh->n_errors;
	fresh->errors = NULL;
	fresh->n_errors = 0;
}

/* Items in the order asked: fresh tables' items moved from fresh, the others from the store. */
static int merge(struct serve *sv, struct describe_result *fresh, struct t2s_error *err)
{
	size_t total = 0, cursor = 0, max_cols = 0;
	for (size_t i = 0; i < sv->n_tables; i++) {
		size_t nc = sv->s->tables[sv->tables[i]].n_columns;
		total += 1 + nc;
		max_cols = nc > max_cols ? nc : max_cols;
	}
	sv->out.items = calloc(total ? total : 1, sizeof(*sv->out.items));
	const char **ov_text = malloc((max_cols + 1) * sizeof(*ov_text));
	if (!sv->out.items || !ov_text) {
		free(ov_text);
		return nomem(err);
	}
	for (size_t i = 0; i < sv->n_tables; i++) {
		int ti = sv->tables[i];
		size_t n = 1 + sv->s->tables[ti].n_columns;
		if (sv->fresh[i]) {
			assert(cursor + n <= fresh->n_items && fresh->items[cursor].table == ti);
			for (size_t k = 0; k < n; k++, cursor++) {
				sv->out.items[sv->out.n_items++] = fresh->items[cursor];
				fresh->items[cursor].text = NULL; /* moved */
			}
			continue;
		}
		memset(ov_text, 0, n * sizeof(*ov_text));
		table_overrides(sv, ti, ov_text);
		if (push_stored(sv, ti, ov_text) < 0) {
			free(ov_text);
			return nomem(err);
		}
	}
	free(ov_text);
	return 0;
}

/*
 * Tables the model described just now go to the state store whole (their
 * columns the model left out keep their metadata text and source), so a
 * restart without Redis serves them without model calls.  Overrides are not
 * stored here.  Failures are ignored: the answer does not depend on them.
 */
static void persist(const struct serve *sv)
{
	const struct describe_result *r = &sv->out;
	if (!sv->rq->state || r->n_items == 0)
		return;
	struct state_description *items = calloc(r->n_items, sizeof(*items));
	size_t n = 0, pos = 0;
	int model_table = -1;
	for (size_t i = 0; items && i < r->n_items; i++) {
		const struct describe_item *it = &r->items[i];
		const struct schema_table *t = &sv->s->tables[it->table];
		if (it->column < 0) {
			bool fresh = sv->fresh[pos++];
			model_table = fresh && strcmp(it->source, describe_source_model) == 0 ? it->table : -1;
		}
		if (it->table != model_table || strcmp(it->source, describe_source_override) == 0)
			continue;
		items[n++] = (struct state_description){t->api_name, it->column < 0 ? NULL : t->columns[it->column].name,
							it->text, it->source};
	}
	struct t2s_error ignored;
	if (n &&
	    state_store_descriptions_put_many(sv->rq->state, sv->s->database, sv->s->hash, items, n, &ignored) < 0) {
		/* Best effort (see above): the answer does not depend on it; an unstored table is described again. */
	}
	free(items);
}

static void serve_release(struct serve *sv)
{
	free(sv->tables);
	free(sv->overrides);
	free(sv->ov_target);
	state_overrides_release(&sv->ov);
	free(sv->sorted);
	state_descriptions_release(&sv->stored);
	free(sv->fresh);
	describe_result_release(&sv->out);
}

int describe_serve(const struct describe_request *rq, struct describe_result *ret, struct t2s_error *err)
{
	if (!rq || !rq->schema || !ret || (rq->tables && rq->n_tables == 0))
		return t2s_error_set(err, T2S_ERR_INVALID, "describe_serve: no schema, no result or no table named");
	struct serve sv = {.rq = rq, .s = rq->schema};
	struct describe_result fresh = {0};
	int *todo = NULL;
	size_t n_todo = 0;
	double t0 = clock_now_ms();
	int rc = resolve_tables(&sv, err);
	if (rc == 0)
		rc = load_overrides(&sv, err);
	if (rc == 0)
		rc = load_stored(&sv, err);
	if (rc == 0)
		rc = pick_fresh(&sv, &todo, &n_todo, err);
	if (rc == 0 && n_todo) {
		struct describe_options o = {.model = rq->model, .cache = rq->cache, .max_parallel = rq->max_parallel,
					     .workers = rq->workers, .overrides = sv.overrides, .n_overrides = sv.ov.n};
		rc = describe_run(sv.s, todo, n_todo, &o, &fresh, err);
		if (rc == 0)
			take_report(&sv.out, &fresh);
	}
	if (rc == 0)
		rc = merge(&sv, &fresh, err);
	describe_result_release(&fresh);
	free(todo);
	if (rc == 0) {
		persist(&sv);
		sv.out.ms_total = clock_now_ms() - t0;
		*ret = sv.out;
		memset(&sv.out, 0, sizeof(sv.out)); /* handed over */
	}
	serve_release(&sv);
	return rc;
}
