/*
 * describe.c - the describe stage (see describe.h): the driver of one run.
 *
 * A run goes: resolve the overrides of the asked tables
 * (describe_overrides.c); for every table
 * that still needs generated text and has a model, the model phase
 * (describe_model.c: cache lookup, model calls on the worker pool, cache
 * store); finally assemble the items, override > model > metadata
 * (describe_metadata.c), item by item, into the result (describe_result.c
 * holds what the steps add to it and its release).
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

/* ---- a run ---------------------------------------------------------------- */

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
		rc = describe_resolve_overrides(&r, err);
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
