/*
 * evidence.c - the evidence stage (see evidence.h).
 */
#include "pipeline/evidence/evidence.h"

#include "common/clock.h"
#include "common/contract.h"
#include "common/strbuf.h"
#include "pipeline/sql/sql_view.h"
#include "pipeline/text/question_spans.h"
#include "pipeline/text/lexicon.h"
#include "pipeline/models/stage_metrics.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LOOKUPS_PER_SPAN 8
#define MAX_CANDIDATES 256
#define RANGE_COLUMNS 3     /* range items per number or date */
#define RANGE_CANDIDATES 64 /* columns considered for them */
#define MODEL_PAIRS_MAX 10
#define DOMAIN_ITEMS_MAX 5
#define PROMPT_SCHEMA_MAX (48u << 10)

struct candidate {
	int table, column;
	const char *value; /* owned by the value index */
	char *matched;
	double score;
};

struct run {
	struct catalog_db *db;
	const struct schema *s;
	struct column_index *li;
	const struct evidence_options *o;
	float *qvec;   /* lexical vector of the question */
	char **qwords; /* its normalised words (embed_lexical_words) */
	const char *question;
	struct candidate cand[MAX_CANDIDATES];
	size_t n_cand;
	struct evidence_result *res;
};

/* How well a column fits the question, 0..1 (lexical cosine of its document). */
static double column_context(const struct run *r, int table, int column)
{
	size_t flat = r->li->table_first_column[table] + (size_t)column;
	double s = column_index_lexical_score(r->li, flat, r->qvec);
	return s < 0 ? 0 : s > 1 ? 1 : s;
}

static double span_weight(enum span_kind k, int n_words)
{
	switch (k) {
	case SPAN_QUOTED: return 1.0;
	case SPAN_CAPITALISED: return 0.95;
	default: return n_words > 1 ? 0.9 : 0.8;
	}
}

/* True when a word of the column's name (3+ letters) is in the question ("region north america"). */
static bool column_named(const struct run *r, int table, int column)
{
	size_t flat = r->li->table_first_column[table] + (size_t)column;
	for (char **cw = r->li->column_words[flat]; cw && *cw; cw++)
		for (char **qw = r->qwords; strlen(*cw) >= 3 && qw && *qw; qw++)
			if (strcmp(*cw, *qw) == 0)
				return true;
	return false;
}

static int add_candidate(struct run *r, const struct value_match *m, const char *span, double weight)
{
	/* The column the question names wins over another holding the same value. */
	double context = 0.5 * column_context(r, m->table, m->column) + (column_named(r, m->table, m->column) ? 0.5 : 0);
	double score = m->score * weight * (0.8 + 0.2 * context);
	for (size_t i = 0; i < r->n_cand; i++) {
		struct candidate *c = &r->cand[i];
		if (c->table == m->table && c->column == m->column && strcmp(c->value, m->value) == 0) {
			if (score > c->score) {
				char *copy = strdup(span);
				if (!copy)
					return -T2S_ERR_NOMEM;
				free(c->matched);
				c->matched = copy;
				c->score = score;
			}
			return 0;
		}
	}
	if (r->n_cand >= MAX_CANDIDATES)
		return 0;
	char *copy = strdup(span);
	if (!copy)
		return -T2S_ERR_NOMEM;
	r->cand[r->n_cand++] = (struct candidate){m->table, m->column, m->value, copy, score};
	return 0;
}

static int push_item(struct evidence_result *res, const char *kind, const char *source, char *text)
{
	if (!text)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < res->n_items; i++)
		if (strcmp(res->items[i].text, text) == 0) {
			free(text);
			return 0;
		}
	struct evidence_item *v = realloc(res->items, (res->n_items + 1) * sizeof(*v));
	if (!v) {
		free(text);
		return -T2S_ERR_NOMEM;
	}
	res->items = v;
	v[res->n_items++] = (struct evidence_item){kind, text, source};
	return 0;
}

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* 'It''s' style SQL literal of a value (malloc'd). */
static char *sql_literal(const char *v)
{
	struct strbuf sb;
	strbuf_init(&sb, 1 << 16);
	strbuf_adds(&sb, "'");
	for (const char *p = v; *p; p++)
		strbuf_adds(&sb, *p == '\'' ? "''" : (char[2]){*p, '\0'});
	strbuf_adds(&sb, "'");
	return strbuf_detach(&sb, NULL);
}

static int lookup_spans(struct run *r, struct value_index *vi, const struct span_list *spans)
{
	int rc = 0;
	struct value_match m[LOOKUPS_PER_SPAN];
	for (size_t i = 0; rc == 0 && i < spans->n; i++) {
		const struct span *sp = &spans->v[i];
		if (sp->kind == SPAN_NUMBER || sp->kind == SPAN_DATE) {
			struct value_column_ref cols[RANGE_CANDIDATES];
			size_t n = 0;
			if (value_index_range_columns(vi, sp->text, cols, RANGE_CANDIDATES, &n) < 0)
				continue;
			/* Keys are identifiers, not quantities: "1" is not a value of an id column. */
			size_t kept = 0;
			for (size_t k = 0; k < n; k++)
				if (!r->s->tables[cols[k].table].columns[cols[k].column].key)
					cols[kept++] = cols[k];
			n = kept;
			/* The columns the question's words fit best come first. */
			for (size_t a = 1; a < n; a++)
				for (size_t b = a; b > 0 && column_context(r, cols[b].table, cols[b].column) >
							  column_context(r, cols[b - 1].table, cols[b - 1].column); b--) {
					struct value_column_ref tmp = cols[b];
					cols[b] = cols[b - 1];
					cols[b - 1] = tmp;
				}
			for (size_t k = 0; k < n && k < RANGE_COLUMNS && rc == 0; k++) {
				const struct value_column_info *ci = value_index_column(vi, cols[k].table, cols[k].column);
				const struct schema_table *t = &r->s->tables[cols[k].table];
				rc = push_item(r->res, "value", "range",
					       format("%s.%s holds values from %s to %s; %s falls in that range", t->api_name,
						      t->columns[cols[k].column].name, ci && ci->min_text ? ci->min_text : "?",
						      ci && ci->max_text ? ci->max_text : "?", sp->text));
			}
			/* Numbers stored as text ("Year" TEXT) are in the value index too: fall through. */
		}
		size_t n = 0;
		struct t2s_error ignored;
		if (value_index_lookup(vi, sp->text, r->o->min_score, LOOKUPS_PER_SPAN, m, &n, &ignored) < 0)
			continue;
		bool exact_only = sp->kind == SPAN_NUMBER || sp->kind == SPAN_DATE; /* 2014 is not 2015 */
		for (size_t k = 0; k < n && rc == 0; k++)
			if (!exact_only || strcmp(m[k].how, "exact") == 0 || strcmp(m[k].how, "case") == 0)
				rc = add_candidate(r, &m[k], sp->text, span_weight(sp->kind, sp->n_words));
	}
	/* Values a word names without spelling them: "French" -> France, "female" -> F (value_index.h). */
	char **words = NULL;
	if (rc == 0 && r->li->wordnet && embed_lexical_words(r->question, EMBED_WORDS_NO_STEM, &words, NULL) < 0)
		rc = -T2S_ERR_NOMEM;
	for (char **w = words; rc == 0 && w && *w; w++) {
		size_t n = value_index_word_values(vi, r->li->wordnet, *w, m, LOOKUPS_PER_SPAN);
		for (size_t k = 0; k < n && rc == 0; k++)
			rc = add_candidate(r, &m[k], *w, span_weight(SPAN_NGRAM, 1));
	}
	free(words);
	return rc;
}

static int cmp_candidates(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->table != y->table ? x->table - y->table : x->column - y->column;
}

/* Confirm a value on the live database; on success it becomes a result value. */
static int confirm(struct run *r, int table, int column, const char *value, const char *matched, double score,
		   const char *source)
{
	struct evidence_result *res = r->res;
	for (size_t i = 0; i < res->n_values; i++)
		if (res->values[i].table == table && res->values[i].column == column &&
		    strcasecmp(res->values[i].value, value) == 0)
			return 0;
	struct value_probe_result probe;
	struct t2s_error ignored;
	res->probes++;
	if (value_probe_run(r->db, r->s, table, column, value, r->o->probe_timeout_ms, &probe, &ignored) < 0)
		return 0; /* unconfirmed: left out */
	if (probe.n_rows == 0) {
		value_probe_result_release(&probe);
		return 0;
	}
	struct evidence_value *v = realloc(res->values, (res->n_values + 1) * sizeof(*v));
	char *stored = strdup(probe.rows[0]), *m = strdup(matched);
	if (!v || !stored || !m) {
		if (v)
			res->values = v;
		free(stored);
		free(m);
		value_probe_result_release(&probe);
		return -T2S_ERR_NOMEM;
	}
	res->values = v;
	v[res->n_values++] = (struct evidence_value){table, column, stored, m, score, source, probe};
	const struct schema_table *t = &r->s->tables[table];
	char *lit = sql_literal(stored);
	int rc = lit ? push_item(res, "value", source, format("%s.%s = %s", t->api_name, t->columns[column].name, lit))
		     : -T2S_ERR_NOMEM;
	free(lit);
	return rc;
}

static int confirm_candidates(struct run *r)
{
	qsort(r->cand, r->n_cand, sizeof(r->cand[0]), cmp_candidates);
	int rc = 0;
	/* Probe at most twice as many as will be returned: a stale index entry costs one probe. */
	for (size_t i = 0; rc == 0 && i < r->n_cand && (int)r->res->n_values < r->o->max_values &&
			   i < (size_t)(2 * r->o->max_values);
	     i++)
		rc = confirm(r, r->cand[i].table, r->cand[i].column, r->cand[i].value, r->cand[i].matched, r->cand[i].score,
			     "value_index");
	return rc;
}

/* ---- flag columns -------------------------------------------------------- */

static const char *const flag_values[] = {"t", "f", "y", "n", "yes", "no", "true", "false", NULL};

static bool is_flag_value(const char *v)
{
	for (const char *const *f = flag_values; *f; f++)
		if (strcasecmp(v, *f) == 0)
			return true;
	return false;
}

/*
 * A yes/no column ("IsOfficial" holding 'T' and 'F') is named by a word of
 * its name ("official languages"), not by its values: when the question
 * uses that word, both stored flag values are offered, the question's
 * polarity deciding which comes first is left to the generator.
 */
static int flag_columns(struct run *r, char **qwords)
{
	int rc = 0;
	for (size_t t = 0; rc == 0 && t < r->s->n_tables; t++)
		for (size_t c = 0; rc == 0 && c < r->s->tables[t].n_columns; c++) {
			const struct schema_column *col = &r->s->tables[t].columns[c];
			if (col->n_samples == 0 || col->n_samples > 2)
				continue;
			bool flags = true;
			for (size_t k = 0; k < col->n_samples; k++)
				flags &= is_flag_value(col->samples[k]);
			if (!flags)
				continue;
			bool named = false;
			char **cw = r->li->column_words[r->li->table_first_column[t] + c];
			for (; cw && *cw && !named; cw++)
				for (char **qw = qwords; strlen(*cw) >= 4 && *qw && !named; qw++)
					named = strcmp(*qw, *cw) == 0;
			for (size_t k = 0; named && rc == 0 && k < col->n_samples; k++)
				rc = confirm(r, (int)t, (int)c, col->samples[k], col->name, 0.75, "flag");
		}
	return rc;
}

/* ---- synonyms ------------------------------------------------------------ */

#define EVIDENCE_SYNONYM_SENSES 2 /* WordNet senses of a question word looked at */

struct synonym_ctx {
	struct run *r;
	int rc;
};

/* "youngest" -> columns whose name holds one of the entry's attribute words. */
static void synonym_entry(const char *word, const char *adds, void *arg)
{
	struct synonym_ctx *x = arg;
	const struct schema *s = x->r->s;
	int found = 0;
	for (size_t t = 0; t < s->n_tables && x->rc == 0 && found < 3; t++)
		for (size_t c = 0; c < s->tables[t].n_columns && x->rc == 0 && found < 3; c++) {
			size_t flat = x->r->li->table_first_column[t] + c;
			for (char **cw = x->r->li->column_words[flat]; cw && *cw && found < 3; cw++) {
				size_t n = strlen(*cw);
				const char *p = strstr(adds, *cw);
				if (n < 3 || !p || (p > adds && p[-1] != ' ') || (p[n] && p[n] != ' ') ||
				    strncmp(*cw, word, n) == 0)
					continue; /* the column says the word itself: a mention, not a synonym */
				x->rc = push_item(x->r->res, "synonym", "lexicon",
						  format("'%s' refers to %s.%s", word, s->tables[t].api_name,
							 s->tables[t].columns[c].name));
				found++;
				break;
			}
		}
}

/* ---- model step (SEED) --------------------------------------------------- */

static char *model_prompt(const struct run *r, const char *question)
{
	struct strbuf sb;
	strbuf_init(&sb, PROMPT_SCHEMA_MAX + 8192);
	strbuf_adds(&sb, "Database tables and columns:\n");
	for (size_t t = 0; t < r->s->n_tables && sb.len < PROMPT_SCHEMA_MAX; t++) {
		const struct schema_table *tab = &r->s->tables[t];
		strbuf_addf(&sb, "- %s(", tab->api_name);
		for (size_t c = 0; c < tab->n_columns; c++)
			strbuf_addf(&sb, "%s%s", c ? ", " : "", tab->columns[c].name);
		strbuf_adds(&sb, ")\n");
	}
	strbuf_addf(&sb, "Question: %s\n", question);
	strbuf_adds(&sb, "Which database values does the question refer to, and in which column? Spell columns as "
			 "table.column exactly as listed. Also give short domain knowledge needed to write the SQL "
			 "(e.g. what a term means in this schema). Answer with strict JSON only: {\"schema-value-pair\": "
			 "[{\"schema\": \"table.column\", \"value\": \"...\"}], \"knowledge\": [\"...\"]}");
	return strbuf_detach(&sb, NULL);
}

/*
 * "table.column" to indexes, the table by its API name ("schema.table"
 * outside public) and both case-insensitively; false when unknown or when
 * two tables' columns match that way (a bare name shared across schemas is
 * not guessed at).
 */
static bool resolve_column(const struct schema *s, const char *name, int *ret_t, int *ret_c)
{
	const char *dot = strrchr(name, '.');
	int found_t = -1, found_c = -1;
	if (!dot)
		return false;
	for (size_t t = 0; t < s->n_tables; t++) {
		const struct schema_table *tab = &s->tables[t];
		if (strlen(tab->api_name) != (size_t)(dot - name) ||
		    strncasecmp(tab->api_name, name, (size_t)(dot - name)) != 0)
			continue;
		for (size_t c = 0; c < tab->n_columns; c++)
			if (strcasecmp(tab->columns[c].name, dot + 1) == 0) {
				if (found_t >= 0 && (found_t != (int)t || found_c != (int)c))
					return false;
				found_t = (int)t;
				found_c = (int)c;
			}
	}
	if (found_t < 0)
		return false;
	*ret_t = found_t;
	*ret_c = found_c;
	return true;
}

static int model_step(struct run *r, const char *question)
{
	double t0 = clock_now_ms();
	char *prompt = model_prompt(r, question);
	if (!prompt)
		return -T2S_ERR_NOMEM;
	struct model_message msgs[2] = {
		{"system", "You are a database expert who links questions to stored values. Answer with JSON only."},
		{"user", prompt},
	};
	char *answer = NULL;
	struct model_call_stats st = {0};
	struct t2s_error err;
	int mrc = model_chat(r->o->model, msgs, 2, &answer, &st, &err);
	free(prompt);
	stage_metrics_model_call("evidence", mrc, &st);
	r->res->model_calls++;
	r->res->prompt_tokens += st.prompt_tokens;
	r->res->completion_tokens += st.completion_tokens;
	int rc = 0;
	if (mrc < 0) {
		r->res->model_errors++;
	} else {
		const char *open = strchr(answer, '{'), *close = strrchr(answer, '}');
		json_t *root = open && close > open ? json_loadb(open, (size_t)(close - open + 1), JSON_REJECT_DUPLICATES, NULL)
						    : NULL;
		if (!json_is_object(root))
			r->res->model_errors++;
		json_t *pairs = json_object_get(root, "schema-value-pair"), *knowledge = json_object_get(root, "knowledge");
		for (size_t i = 0; rc == 0 && json_is_array(pairs) && i < json_array_size(pairs) && i < MODEL_PAIRS_MAX; i++) {
			json_t *p = json_array_get(pairs, i);
			const char *col = json_string_value(json_object_get(p, "schema"));
			json_t *val = json_object_get(p, "value");
			int t, c;
			char num[64];
			const char *text = json_string_value(val);
			if (json_is_number(val)) {
				snprintf(num, sizeof(num), "%g", json_number_value(val));
				text = num;
			}
			if (col && text && *text && strlen(text) <= VALUE_PROBE_MAX_VALUE_LEN && resolve_column(r->s, col, &t, &c))
				rc = confirm(r, t, c, text, text, 0.7, "model");
		}
		for (size_t i = 0; rc == 0 && json_is_array(knowledge) && i < json_array_size(knowledge) && i < DOMAIN_ITEMS_MAX;
		     i++) {
			const char *k = json_string_value(json_array_get(knowledge, i));
			if (k && *k && strlen(k) <= 300)
				rc = push_item(r->res, "domain", "model", strdup(k));
		}
		json_decref(root);
		free(answer);
	}
	r->res->ms_model = clock_now_ms() - t0;
	return rc;
}

/* ---- examples ------------------------------------------------------------ */

static int similar_examples(struct run *r, struct state_store *st, const char *question)
{
	(void)question;
	if (!st || r->o->max_examples <= 0)
		return 0;
	double t0 = clock_now_ms();
	struct state_examples all;
	struct t2s_error ignored;
	bool view = schema_is_view(r->s); /* a caller limited to some tables: only examples reading them */
	if (state_store_examples_all(st, r->s->database, view, &all, &ignored) < 0)
		return 0;
	unsigned dim = r->li->lexical.dim;
	float *v = malloc(dim * sizeof(float));
	int rc = v ? 0 : -T2S_ERR_NOMEM;
	for (size_t i = 0; rc == 0 && i < all.n; i++) {
		if (NEVER(embed_lexical_vector(&r->li->lexical, all.items[i].question, v) < 0)) {
			rc = -T2S_ERR_INTERNAL; /* the index's embedder is always fitted */
			break;
		}
		double score = embed_cosine(v, r->qvec, dim);
		if (score <= 0.1)
			continue;
		/* Keep the best max_examples, sorted, by insertion. */
		struct evidence_result *res = r->res;
		size_t pos = res->n_examples;
		while (pos > 0 && res->examples[pos - 1].score < score)
			pos--;
		if ((int)pos >= r->o->max_examples)
			continue;
		if (view && !sql_reads_only_view(r->s, all.items[i].sql))
			continue;
		if ((int)res->n_examples < r->o->max_examples) {
			struct evidence_example *e = realloc(res->examples, (res->n_examples + 1) * sizeof(*e));
			if (!e) {
				rc = -T2S_ERR_NOMEM;
				break;
			}
			res->examples = e;
			res->n_examples++;
		} else {
			free(res->examples[res->n_examples - 1].question);
		}
		memmove(&res->examples[pos + 1], &res->examples[pos], (res->n_examples - 1 - pos) * sizeof(res->examples[0]));
		res->examples[pos] = (struct evidence_example){all.items[i].id, strdup(all.items[i].question), NULL, score};
	}
	free(v);
	state_examples_release(&all);
	/* Only the kept few need their SQL. */
	for (size_t i = 0; rc == 0 && i < r->res->n_examples; i++) {
		struct state_examples one;
		if (state_store_example_get(st, r->s->database, r->res->examples[i].id, &one, &ignored) == 0) {
			if (one.n == 1)
				r->res->examples[i].sql = strdup(one.items[0].sql);
			state_examples_release(&one);
		}
	}
	r->res->ms_examples = clock_now_ms() - t0;
	return rc;
}

void evidence_options_init(struct evidence_options *o)
{
	*o = (struct evidence_options){
		.max_values = 5,
		.min_score = 0.8,
		.probe_timeout_ms = VALUE_PROBE_TIMEOUT_DEFAULT_MS,
		.max_examples = 3,
		.model = NULL,
		.report_index_fallback = true,
	};
}

int evidence_run(struct catalog_db *db, struct value_index *vi, struct column_index *li, struct state_store *st,
		 const char *question, const struct evidence_options *o, struct evidence_result *ret,
		 struct t2s_error *err)
{
	double t0 = clock_now_ms();
	struct evidence_result res = {.partial = vi == NULL};
	if (li->remote_failure && o->report_index_fallback)
		fallback_add(res.fallbacks, &res.n_fallbacks, "embed", li->remote_failure,
			     "models.embed failed while the linking index was built (%.200s): it holds lexical vectors only "
			     "until it is rebuilt",
			     li->remote_failure_detail);
	struct run r = {.db = db, .s = li->schema, .li = li, .o = o, .question = question, .res = &res};
	struct span_list spans = {0};
	r.qvec = malloc(li->lexical.dim * sizeof(float));
	int rc = r.qvec ? question_spans(question, &spans) : -T2S_ERR_NOMEM;
	if (rc == 0 && embed_lexical_words(question, 0, &r.qwords, NULL) < 0)
		rc = -T2S_ERR_NOMEM;
	if (rc == 0 && NEVER(embed_lexical_vector(&li->lexical, question, r.qvec) < 0))
		rc = -T2S_ERR_INTERNAL; /* the index's embedder is always fitted */
	if (rc == 0 && vi)
		rc = lookup_spans(&r, vi, &spans);
	res.ms_lookup = clock_now_ms() - t0;
	double tp = clock_now_ms();
	if (rc == 0)
		rc = flag_columns(&r, r.qwords); /* few, and never found by value lookups */
	if (rc == 0)
		rc = confirm_candidates(&r);
	res.ms_probe = clock_now_ms() - tp;
	struct synonym_ctx sx = {&r, 0};
	if (rc == 0) {
		lexicon_each(li->wordnet, question, EVIDENCE_SYNONYM_SENSES, synonym_entry, &sx);
		rc = sx.rc;
	}
	if (rc == 0 && o->model)
		rc = model_step(&r, question);
	if (rc == 0)
		rc = similar_examples(&r, st, question);
	for (size_t i = 0; i < r.n_cand; i++)
		free(r.cand[i].matched);
	question_spans_release(&spans);
	free(r.qwords);
	free(r.qvec);
	if (rc < 0) {
		evidence_result_release(&res);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory gathering evidence");
	}
	res.ms_total = clock_now_ms() - t0;
	stage_metrics_step("evidence", "lookup", res.ms_lookup);
	stage_metrics_step("evidence", "probe", res.ms_probe);
	stage_metrics_step("evidence", "total", res.ms_total);
	*ret = res;
	return 0;
}

void evidence_result_release(struct evidence_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_values; i++) {
		free(r->values[i].value);
		free(r->values[i].matched);
		value_probe_result_release(&r->values[i].probe);
	}
	for (size_t i = 0; i < r->n_items; i++)
		free(r->items[i].text);
	for (size_t i = 0; i < r->n_examples; i++) {
		free(r->examples[i].question);
		free(r->examples[i].sql);
	}
	free(r->values);
	free(r->items);
	free(r->examples);
	memset(r, 0, sizeof(*r));
}
