/*
 * link_llm.c - LLM table linking: the candidate tables shown to the link
 * model in shuffled orders, one concurrent call per shuffle, and each
 * answer parsed into candidate tables and votes.
 */
#include "pipeline/link/link_internal.h"

#include "common/clock.h"
#include "common/strbuf.h"
#include "common/workers.h"
#include "pipeline/models/stage_metrics.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LINK_MAX_SHUFFLES 16

struct shuffle_job {
	const struct run *r;
	const struct model_endpoint *ep;
	const char *question;
	const int *candidates;
	size_t n_candidates;
	unsigned seed;
	/* results */
	int rc;
	struct t2s_error err;
	char *answer;
	struct model_call_stats stats;
};

static unsigned next_rand(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

static char *build_prompt(const struct shuffle_job *job)
{
	const struct schema *s = job->r->s;
	struct strbuf sb;
	strbuf_init(&sb, 4u << 20);
	int *order = malloc((job->n_candidates ? job->n_candidates : 1) * sizeof(*order));
	if (!order)
		return NULL;
	memcpy(order, job->candidates, job->n_candidates * sizeof(*order));
	unsigned state = job->seed;
	for (size_t i = job->n_candidates; i > 1; i--) { /* Fisher-Yates */
		size_t j = next_rand(&state) % i;
		int tmp = order[i - 1];
		order[i - 1] = order[j];
		order[j] = tmp;
	}
	strbuf_adds(&sb, "Tables of the database, with their columns:\n");
	for (size_t i = 0; i < job->n_candidates; i++) {
		const struct schema_table *t = &s->tables[order[i]];
		strbuf_addf(&sb, "- %s(", t->api_name);
		for (size_t c = 0; c < t->n_columns; c++)
			strbuf_addf(&sb, "%s%s", c ? ", " : "", t->columns[c].name);
		strbuf_adds(&sb, ")\n");
	}
	strbuf_adds(&sb, "Foreign keys:\n");
	for (size_t i = 0; i < job->n_candidates; i++) {
		const struct schema_table *t = &s->tables[order[i]];
		for (size_t f = 0; f < t->n_foreign_keys; f++)
			for (size_t k = 0; k < t->foreign_keys[f].n_columns; k++)
				strbuf_addf(&sb, "- %s.%s = %s.%s\n", t->api_name, t->foreign_keys[f].columns[k],
					    t->foreign_keys[f].ref_api_name, t->foreign_keys[f].ref_columns[k]);
	}
	strbuf_addf(&sb, "Question: %s\n", job->question);
	strbuf_adds(&sb, "List every table needed to write the SQL query that answers the question, including "
			 "tables needed only to join others. Answer with a JSON array of table names and nothing else.");
	free(order);
	return strbuf_detach(&sb, NULL);
}

/* Shuffle i of the jobs array arg (a task of workers_for, which carries the request's trace). */
static void shuffle_task(void *arg, size_t i)
{
	struct shuffle_job *job = (struct shuffle_job *)arg + i;
	char *prompt = build_prompt(job);
	if (!prompt) {
		job->rc = t2s_error_set(&job->err, T2S_ERR_NOMEM, "out of memory");
		return;
	}
	struct model_message msgs[2] = {
		{"system", "You are an expert database engineer. You pick the tables a SQL query needs."},
		{"user", prompt},
	};
	job->rc = model_chat(job->ep, msgs, 2, &job->answer, &job->stats, &job->err);
	free(prompt);
}

/* Trim spaces, quotes, backticks, brackets and list bullets from both ends, in place. */
static char *trim_name(char *p)
{
	while (*p && (isspace((unsigned char)*p) || strchr("\"'`[*-", *p)))
		p++;
	size_t n = strlen(p);
	while (n && (isspace((unsigned char)p[n - 1]) || strchr("\"'`].,;", p[n - 1])))
		p[--n] = '\0';
	return p;
}

static int add_unknown(char ***unknown, size_t *n, const char *name)
{
	if (!*name || *n >= 64)
		return 0;
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*unknown)[i], name) == 0)
			return 0;
	char **v = realloc(*unknown, (*n + 1) * sizeof(*v));
	if (!v)
		return -T2S_ERR_NOMEM;
	*unknown = v;
	v[*n] = strndup(name, 200);
	if (!v[*n])
		return -T2S_ERR_NOMEM;
	(*n)++;
	return 0;
}

static int take_name(const struct schema *s, const int *candidates, size_t n_candidates, const char *name,
		     int *ret_tables, size_t *ret_n, char ***unknown, size_t *n_unknown)
{
	/* its API name exactly; else its API name or "schema.table" ignoring case; else its bare name */
	int t = schema_resolve_table(s, name, SCHEMA_NAME_BARE, candidates, n_candidates);
	if (t < 0)
		return add_unknown(unknown, n_unknown, name);
	for (size_t i = 0; i < *ret_n; i++)
		if (ret_tables[i] == t)
			return 0;
	if (*ret_n < n_candidates)
		ret_tables[(*ret_n)++] = t;
	return 0;
}

int link_parse_answer(const struct schema *s, const int *candidates, size_t n_candidates, const char *answer,
		      int *ret_tables, size_t *ret_n, char ***ret_unknown, size_t *ret_n_unknown)
{
	*ret_n = 0;
	*ret_unknown = NULL;
	*ret_n_unknown = 0;
	int rc = 0;
	/* Preferred form: a JSON array of strings somewhere in the answer. */
	const char *open = strchr(answer, '[');
	const char *close = open ? strrchr(answer, ']') : NULL;
	if (open && close && close > open) {
		json_t *arr = json_loadb(open, (size_t)(close - open + 1), 0, NULL);
		if (json_is_array(arr)) {
			size_t i;
			json_t *v;
			json_array_foreach(arr, i, v) {
				if (json_is_string(v) && rc == 0)
					rc = take_name(s, candidates, n_candidates, json_string_value(v), ret_tables, ret_n,
						       ret_unknown, ret_n_unknown);
			}
			json_decref(arr);
			return rc;
		}
		json_decref(arr);
	}
	/* Otherwise names separated by commas or new lines. */
	char *copy = strdup(answer);
	if (!copy)
		return -T2S_ERR_NOMEM;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ",\n", &save); tok && rc == 0; tok = strtok_r(NULL, ",\n", &save)) {
		char *name = trim_name(tok);
		if (*name && strlen(name) <= 128 && !strchr(name, ' '))
			rc = take_name(s, candidates, n_candidates, name, ret_tables, ret_n, ret_unknown, ret_n_unknown);
	}
	free(copy);
	return rc;
}

int link_with_model(struct run *r, const struct link_request *rq, const struct model_endpoint *ep,
		    struct link_result *res, struct t2s_error *err)
{
	double t0 = clock_now_ms();
	size_t n_tables = r->s->n_tables;
	int *order = link_rank(r->table_score, n_tables);
	if (!order)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	size_t n_candidates = n_tables < (size_t)r->p->llm_max_tables ? n_tables : (size_t)r->p->llm_max_tables;
	int shuffles = r->p->shuffles < 1 ? 1 : r->p->shuffles > LINK_MAX_SHUFFLES ? LINK_MAX_SHUFFLES : r->p->shuffles;
	struct shuffle_job jobs[LINK_MAX_SHUFFLES];
	unsigned seed = 0;
	for (const char *q = rq->question; *q; q++)
		seed = seed * 31u + (unsigned char)*q;
	for (int i = 0; i < shuffles; i++)
		jobs[i] = (struct shuffle_job){.r = r, .ep = ep, .question = rq->question, .candidates = order,
					       .n_candidates = n_candidates, .seed = seed + 7919u * (unsigned)i};
	workers_for(r->p->workers, (size_t)shuffles, shuffle_task, jobs, shuffles);
	int rc = 0, ok = 0;
	int *answer_tables = malloc((n_candidates ? n_candidates : 1) * sizeof(int));
	if (!answer_tables)
		rc = -T2S_ERR_NOMEM;
	for (int i = 0; i < shuffles; i++) {
		struct shuffle_job *job = &jobs[i];
		stage_metrics_model_call("link", job->rc, &job->stats);
		res->model_calls++;
		res->prompt_tokens += job->stats.prompt_tokens;
		res->completion_tokens += job->stats.completion_tokens;
		if (job->rc < 0) {
			res->model_errors++;
			if (ok == 0) {
				*err = job->err;
				r->llm_http_status = job->stats.http_status;
			}
			continue;
		}
		ok++;
		size_t n = 0, n_unknown = 0;
		char **unknown = NULL;
		if (rc == 0)
			rc = link_parse_answer(r->s, order, n_candidates, job->answer, answer_tables, &n, &unknown, &n_unknown);
		for (size_t k = 0; k < n; k++) {
			r->table_votes[answer_tables[k]]++;
			r->table_reason[answer_tables[k]] |= LINK_BY_LLM;
		}
		for (size_t k = 0; k < n_unknown; k++) {
			if (rc == 0)
				rc = add_unknown(&res->unknown_names, &res->n_unknown, unknown[k]);
			free(unknown[k]);
		}
		free(unknown);
		free(job->answer);
	}
	res->shuffles = shuffles;
	res->answers = r->answers = ok;
	free(answer_tables);
	free(order);
	res->ms_llm = clock_now_ms() - t0;
	stage_metrics_step("link", "llm", res->ms_llm);
	if (rc < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	return ok ? 0 : -(int)err->code;
}
