/*
 * reuse_answer.c - the job's one step that answers from a stored example
 * (generate_reuse, generate_internal.h): the evidence stage's examples,
 * best first, adapted to the question (reuse.h); the first close enough
 * whose SQL passes every blocking check of validation is the answer.
 */
#include "pipeline/generate/generate_internal.h"

#include "common/clock.h"
#include "pipeline/generate/reuse.h"
#include "pipeline/generate/trace.h"
#include "pipeline/generate/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double generate_reuse_threshold(const struct generate_env *env)
{
	return env->generate.primary ? env->options.reuse_min_similarity : env->options.reuse_min_similarity_no_model;
}

/* Validate sql (stolen) as the job's next try; true when every blocking check passed (it then stays). */
static int try_sql(struct generate_job *j, char *sql, bool *ret_ok, struct t2s_error *err)
{
	struct generate_try *t = &j->tries[j->n_tries];
	*t = (struct generate_try){.sql = sql};
	struct validate_context cx = {.db = j->rq->db, .schema = j->schema, .index = j->index,
				      .linked_table = j->view.in_view, .limits = j->exec, .question = j->rq->question};
	cx.limits.timeout_ms = generate_cut_to_deadline(j, cx.limits.timeout_ms);
	double t0 = clock_now_ms();
	int rc = validate_sql(&cx, sql, &t->v, err);
	j->ms_validate += clock_now_ms() - t0;
	*ret_ok = rc == 0 && t->v.failed < 0;
	if (*ret_ok) {
		j->n_tries++;
		return 0;
	}
	if (rc == 0)
		validation_release(&t->v);
	free(sql);
	*t = (struct generate_try){0};
	return rc;
}

int generate_reuse(struct generate_job *j, bool *ret_answered, struct t2s_error *err)
{
	*ret_answered = false;
	double min = generate_reuse_threshold(j->env);
	if (!j->evidence_ok || min > 1 || j->evidence.n_examples == 0)
		return 0;
	size_t nv = j->evidence.n_values;
	struct reuse_value *values = calloc(nv ? nv : 1, sizeof(*values));
	j->reuse = json_array();
	if (!values || !j->reuse) {
		free(values);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < nv; i++) {
		const struct evidence_value *v = &j->evidence.values[i];
		values[i] = (struct reuse_value){v->matched, v->value, v->table, v->column};
	}
	/* Every example adapted first, then tried most similar first. */
	size_t n = j->evidence.n_examples, order[64];
	struct reuse_result r[64];
	if (n > 64)
		n = 64;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		const struct evidence_example *e = &j->evidence.examples[i];
		r[i] = (struct reuse_result){0};
		snprintf(r[i].reason, sizeof(r[i].reason), "no stored SQL");
		if (rc == 0 && e->sql && e->question)
			rc = reuse_example(j->schema, j->index->wordnet, j->rq->question, values, nv, e->question, e->sql,
					   &r[i]);
		order[i] = i;
		for (size_t k = i; k > 0 && r[order[k]].similarity > r[order[k - 1]].similarity; k--) {
			size_t t = order[k];
			order[k] = order[k - 1], order[k - 1] = t;
		}
	}
	for (size_t o = 0; rc == 0 && o < n; o++) {
		size_t i = order[o];
		const struct evidence_example *e = &j->evidence.examples[i];
		double sim = round(r[i].similarity * 1000) / 1000;
		json_t *tried = json_pack("{s:I, s:f, s:O?}", "id", (json_int_t)e->id, "similarity", sim,
					  "substitutions", r[i].substitutions);
		if (*ret_answered)
			json_object_set_new(tried, "refused", json_string("a more similar example answered"));
		else if (!r[i].sql)
			json_object_set_new(tried, "refused", json_string(r[i].reason));
		else if (r[i].similarity < min)
			json_object_set_new(tried, "refused", json_string("not similar enough"));
		else {
			json_object_set_new(tried, "sql", json_string(r[i].sql));
			bool ok = false;
			rc = try_sql(j, r[i].sql, &ok, err);
			r[i].sql = NULL; /* stolen */
			if (rc == 0 && ok) {
				*ret_answered = true;
				j->example_id = e->id;
				j->generator = "example";
				j->confidence = sim;
			} else if (rc == 0) {
				json_object_set_new(tried, "refused", json_string("its SQL failed validation"));
			}
		}
		json_array_append_new(j->reuse, tried);
	}
	for (size_t i = 0; i < n; i++)
		reuse_result_release(&r[i]);
	free(values);
	if (rc == -T2S_ERR_NOMEM)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	return rc;
}
