/*
 * describe.c - the describe stage (see describe.h): one run and its result.
 *
 * A run goes: resolve the overrides of the asked tables; for every table
 * that still needs generated text and has a model, the model phase
 * (describe_model.c: cache lookup, model calls on the worker pool, cache
 * store); finally assemble the items, override > model > metadata
 * (describe_metadata.c), item by item.
 *
 * Memory: everything a run allocates is malloc'd and either freed before
 * describe_run returns or handed over in the result.
 */
#include "pipeline/describe/describe_internal.h"

#include "common/clock.h"
#include "pipeline/models/stage_metrics.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char describe_source_model[] = "model";
const char describe_source_metadata[] = "metadata";
const char describe_source_override[] = "override";

/* ---- a run ---------------------------------------------------------------- */

int describe_push_error(struct describe_result *res, const char *table, const struct t2s_error *e)
{
	char **v = realloc(res->errors, (res->n_errors + 1) * sizeof(*v));
	struct strbuf sb;

	if (!v)
		return -T2S_ERR_NOMEM;
	res->errors = v;
	strbuf_init(&sb, 1024 + T2S_ERROR_MESSAGE_MAX);
	if (strbuf_addf(&sb, "%s: %s", table, e->message[0] ? e->message : t2s_code_title(e->code)) < 0 ||
	    !(v[res->n_errors] = strbuf_detach(&sb, NULL))) {
		strbuf_release(&sb);
		return -T2S_ERR_NOMEM;
	}
	res->n_errors++;
	return 0;
}

/* Deduplicated copy of the asked tables (all when none asked). */
static int collect_tables(struct run *r, const int *tables, size_t n, struct t2s_error *err)
{
	size_t want = tables ? n : r->s->n_tables;
	unsigned char *seen = calloc(r->s->n_tables + 1, 1);

	r->tables = malloc((want ? want : 1) * sizeof(int));
	if (!seen || !r->tables) {
		free(seen);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < want; i++) {
		int t = tables ? tables[i] : (int)i;
		if (t < 0 || (size_t)t >= r->s->n_tables) {
			free(seen);
			return t2s_error_set(err, T2S_ERR_INVALID, "table index %d out of range (0..%zu)", t,
					     r->s->n_tables);
		}
		if (!seen[t]) {
			seen[t] = 1;
			r->tables[r->n_tables++] = t;
		}
	}
	free(seen);
	return 0;
}

bool describe_override_target(const struct schema *s, const struct describe_override *ov, int *ret_table,
			      int *ret_column)
{
	if (!s || !ov || !ov->table || !ov->text || !*ov->text)
		return false;
	int t = schema_resolve_table(s, ov->table, SCHEMA_NAME_NOCASE, NULL, 0), c = -1;
	if (t < 0)
		return false;
	if (ov->column) {
		c = describe_column_index(&s->tables[t], ov->column, true);
		if (c < 0)
			c = describe_column_index(&s->tables[t], ov->column, false);
		if (c < 0)
			return false;
	}
	*ret_table = t;
	*ret_column = c;
	return true;
}

static int resolve_overrides(struct run *r, struct t2s_error *err)
{
	size_t total = 0;
	int *pos = malloc((r->s->n_tables + 1) * sizeof(int)); /* table index -> position in r->tables */

	r->ov_offset = malloc((r->n_tables + 1) * sizeof(size_t));
	if (!pos || !r->ov_offset) {
		free(pos);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < r->s->n_tables; i++)
		pos[i] = -1;
	for (size_t i = 0; i < r->n_tables; i++) {
		pos[r->tables[i]] = (int)i;
		r->ov_offset[i] = total;
		total += 1 + r->s->tables[r->tables[i]].n_columns;
	}
	r->ov_offset[r->n_tables] = total;
	r->ov = calloc(total ? total : 1, sizeof(*r->ov));
	if (!r->ov) {
		free(pos);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; r->o && i < r->o->n_overrides; i++) {
		int t, c;
		if (describe_override_target(r->s, &r->o->overrides[i], &t, &c) && pos[t] >= 0)
			r->ov[r->ov_offset[pos[t]] + (size_t)(c + 1)] = r->o->overrides[i].text;
	}
	free(pos);
	return 0;
}

/* True when every item of asked table i has an override (no model call needed). */
bool describe_fully_overridden(const struct run *r, size_t i)
{
	size_t n = 1 + r->s->tables[r->tables[i]].n_columns;

	for (size_t k = 0; k < n; k++)
		if (!r->ov[r->ov_offset[i] + k])
			return false;
	return true;
}

/* Append the item (table ti, column ci) with text copied from text or owned metadata. */
static int push_item(struct describe_result *res, int ti, int ci, const char *text, const char *source)
{
	char *copy = strdup(text);

	if (!copy)
		return -T2S_ERR_NOMEM;
	res->items[res->n_items++] = (struct describe_item){.table = ti, .column = ci, .text = copy, .source = source};
	return 0;
}

static int assemble(struct run *r, struct t2s_error *err)
{
	size_t total = r->ov_offset[r->n_tables];

	r->res.items = calloc(total ? total : 1, sizeof(*r->res.items));
	if (!r->res.items)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < r->n_tables; i++) {
		int ti = r->tables[i];
		for (int ci = -1; ci < (int)r->s->tables[ti].n_columns; ci++) {
			const char *ov = r->ov[r->ov_offset[i] + (size_t)(ci + 1)];
			const char *gen = describe_job_text(r, i, ci);
			int rc;
			if (ov) {
				rc = push_item(&r->res, ti, ci, ov, describe_source_override);
			} else if (gen) {
				rc = push_item(&r->res, ti, ci, gen, describe_source_model);
			} else {
				char *meta = describe_metadata_text(r->s, ti, ci);
				rc = meta ? push_item(&r->res, ti, ci, meta, describe_source_metadata) : -T2S_ERR_NOMEM;
				free(meta);
			}
			if (rc < 0)
				return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		}
	}
	return 0;
}

static void run_release(struct run *r)
{
	describe_jobs_free(r);
	free(r->ov);
	free(r->ov_offset);
	free(r->tables);
}

int describe_run(const struct schema *s, const int *tables, size_t n_tables, const struct describe_options *o,
		 struct describe_result *ret, struct t2s_error *err)
{
	struct run r = {.s = s, .o = o};
	double t0 = clock_now_ms();
	int rc;

	if (!s || !ret)
		return t2s_error_set(err, T2S_ERR_INVALID, "describe_run: no schema or result");
	rc = collect_tables(&r, tables, n_tables, err);
	if (rc == 0)
		rc = resolve_overrides(&r, err);
	if (rc == 0 && describe_jobs_new(&r) < 0)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	if (rc == 0 && o && o->model)
		rc = describe_model_phase(&r, err);
	if (rc == 0)
		rc = assemble(&r, err);
	run_release(&r);
	if (rc < 0) {
		describe_result_release(&r.res);
		return rc;
	}
	r.res.ms_total = clock_now_ms() - t0;
	stage_metrics_step("describe", "total", r.res.ms_total);
	*ret = r.res;
	return 0;
}

void describe_result_release(struct describe_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_items; i++)
		free(r->items[i].text);
	free(r->items);
	for (size_t i = 0; i < r->n_errors; i++)
		free(r->errors[i]);
	free(r->errors);
	memset(r, 0, sizeof(*r));
}
