/*
 * describe_prompt.c - the describe model's prompt for one table, the
 * parsing of its answer (describe_parse_answer in describe.h), and the
 * answer's cached form and cache key.
 */
#include "pipeline/describe/describe_internal.h"

#include "common/hash.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Bumped whenever the prompt or the cached form changes: old entries are never read again. */
#define DESCRIBE_PROMPT_VERSION "v1"
#define NEIGHBOURS_MAX 8
#define NEIGHBOUR_COLUMNS_MAX 40
#define PROMPT_MAX (512u * 1024u)

/* ---- the model prompt ---------------------------------------------------- */

/* One column line of the prompt: "- name TYPE, primary key, foreign key to x.y; samples: a, b". */
static void prompt_column(struct strbuf *sb, const struct schema *s, int ti, const struct schema_column *c)
{
	const struct schema_table *t = &s->tables[ti];

	strbuf_addf(sb, "- %s %s", c->name, c->type && *c->type ? c->type : "(no declared type)");
	if (c->primary_key) /* schema_finish marks the columns the key lists */
		strbuf_adds(sb, t->n_primary_key > 1 ? ", part of the primary key" : ", primary key");
	for (size_t f = 0; f < t->n_foreign_keys; f++) {
		const struct schema_foreign_key *fk = &t->foreign_keys[f];
		for (size_t k = 0; k < fk->n_columns; k++) {
			if (strcmp(fk->columns[k], c->name) != 0)
				continue;
			strbuf_adds(sb, ", foreign key to ");
			describe_add_ref_table(sb, fk);
			if (fk->ref_columns && fk->ref_columns[k])
				strbuf_addf(sb, ".%s", fk->ref_columns[k]);
		}
	}
	if (!c->nullable)
		strbuf_adds(sb, ", NOT NULL");
	if (c->comment) {
		strbuf_adds(sb, "; comment: ");
		describe_add_clean(sb, c->comment, COMMENT_MAX);
	}
	for (size_t i = 0, shown = 0; i < c->n_samples && shown < SAMPLES_SHOWN; i++) {
		if (!c->samples[i])
			continue;
		strbuf_adds(sb, shown++ ? " | " : "; sample values: ");
		describe_add_clean(sb, c->samples[i], SAMPLE_MAX);
	}
	strbuf_adds(sb, "\n");
}

/* Neighbouring tables of ti (joined by a foreign key either way) with their columns and joins. */
static void prompt_neighbours(struct strbuf *sb, const struct schema *s, int ti)
{
	const struct schema_table *t = &s->tables[ti];
	size_t listed = 0;

	for (size_t o = 0; o < s->n_tables && listed < NEIGHBOURS_MAX; o++) {
		const struct schema_table *ot = &s->tables[o];
		bool linked = false;
		if ((int)o == ti)
			continue;
		for (size_t f = 0; f < t->n_foreign_keys && !linked; f++)
			linked = t->foreign_keys[f].ref_index == (int)o;
		for (size_t f = 0; f < ot->n_foreign_keys && !linked; f++)
			linked = ot->foreign_keys[f].ref_index == ti;
		if (!linked)
			continue;
		if (listed++ == 0)
			strbuf_adds(sb, "Neighbouring tables (joined to it by foreign keys):\n");
		strbuf_addf(sb, "- %s(", ot->api_name);
		for (size_t c = 0; c < ot->n_columns && c < NEIGHBOUR_COLUMNS_MAX; c++)
			strbuf_addf(sb, "%s%s", c ? ", " : "", ot->columns[c].name);
		if (ot->n_columns > NEIGHBOUR_COLUMNS_MAX)
			strbuf_adds(sb, ", ...");
		strbuf_adds(sb, ")\n");
	}
}

static void prompt_foreign_keys(struct strbuf *sb, const struct schema *s, int ti)
{
	bool any = false;

	for (size_t o = 0; o < s->n_tables; o++) {
		const struct schema_table *ot = &s->tables[o];
		for (size_t f = 0; f < ot->n_foreign_keys; f++) {
			const struct schema_foreign_key *fk = &ot->foreign_keys[f];
			if ((int)o != ti && fk->ref_index != ti)
				continue;
			for (size_t k = 0; k < fk->n_columns; k++) {
				if (!any)
					strbuf_adds(sb, "Foreign keys:\n");
				any = true;
				strbuf_addf(sb, "- %s.%s = ", ot->api_name, fk->columns[k]);
				describe_add_ref_table(sb, fk);
				strbuf_addf(sb, ".%s\n", fk->ref_columns && fk->ref_columns[k] ? fk->ref_columns[k] : "?");
			}
		}
	}
}

const char describe_system_prompt[] =
	"You document relational database schemas for analysts who write SQL. You describe only what the "
	"names, types, keys and sample values shown support, in plain English, and answer with JSON only.";

/*
 * The user message for table ti: 0 and *ret_prompt (malloc'd, caller frees),
 * -T2S_ERR_NOMEM, or -T2S_ERR_INVALID when it would exceed PROMPT_MAX bytes
 * (absurdly long names or comments); err filled on failure.
 */
int describe_build_prompt(const struct schema *s, int ti, char **ret_prompt, struct t2s_error *err)
{
	const struct schema_table *t = &s->tables[ti];
	struct strbuf sb;

	/* The buffer may grow well past PROMPT_MAX so that an oversized prompt is seen, not cut. */
	strbuf_init(&sb, 4 * PROMPT_MAX);
	strbuf_addf(&sb, "Database: %s (%s)\n", s->database ? s->database : "", s->engine->name);
	strbuf_addf(&sb, "%s: %s", describe_kind_word(t->kind), t->api_name);
	if (t->row_count >= 0)
		strbuf_addf(&sb, " (%s%lld rows)", t->row_count_estimated ? "about " : "", t->row_count);
	strbuf_adds(&sb, "\n");
	if (t->comment) {
		strbuf_adds(&sb, "Comment: ");
		describe_add_clean(&sb, t->comment, COMMENT_MAX);
		strbuf_adds(&sb, "\n");
	}
	strbuf_adds(&sb, "Columns (name, type, keys, sample values):\n");
	for (size_t c = 0; c < t->n_columns && c < DESCRIBE_MODEL_MAX_COLUMNS; c++)
		prompt_column(&sb, s, ti, &t->columns[c]);
	prompt_foreign_keys(&sb, s, ti);
	prompt_neighbours(&sb, s, ti);
	strbuf_adds(&sb,
		    "\nWrite one sentence saying what a row of this table represents, and for each column one "
		    "sentence saying what it holds and how it relates to other tables. Do not invent facts that "
		    "the schema and samples do not support. Use each column name exactly as written above. "
		    "Answer with strict JSON and nothing else, in this form:\n"
		    "{\"table\": \"<one sentence about the table>\", \"columns\": {\"<column name>\": "
		    "\"<one sentence>\"}}\n");
	if (sb.len > PROMPT_MAX) {
		strbuf_release(&sb);
		return t2s_error_set(err, T2S_ERR_INVALID, "describe prompt would exceed %u bytes", PROMPT_MAX);
	}
	*ret_prompt = strbuf_detach(&sb, NULL);
	return *ret_prompt ? 0 : t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
}

/* ---- parsing the answer -------------------------------------------------- */

/* Index of the column called name in t: exact match when exact, else case-insensitive; -1. */
int describe_column_index(const struct schema_table *t, const char *name, bool exact)
{
	for (size_t c = 0; c < t->n_columns; c++)
		if (exact ? strcmp(t->columns[c].name, name) == 0 : strcasecmp(t->columns[c].name, name) == 0)
			return (int)c;
	return -1;
}

int describe_parse_answer(const struct schema *s, int table, const char *answer, char **ret_table,
			  char ***ret_columns, int *ret_unknown, struct t2s_error *err)
{
	const struct schema_table *t;
	const char *open, *close;
	json_t *root, *cols, *v;
	json_error_t jerr;
	const char *key;
	char **out;
	char *tsentence = NULL;
	int unknown = 0;

	if (!s || table < 0 || (size_t)table >= s->n_tables || !answer)
		return t2s_error_set(err, T2S_ERR_INVALID, "describe_parse_answer: bad arguments");
	t = &s->tables[table];
	open = strchr(answer, '{');
	close = strrchr(answer, '}');
	if (!open || !close || close < open)
		return t2s_error_set(err, T2S_ERR_UPSTREAM, "describe model answer holds no JSON object");
	root = json_loadb(open, (size_t)(close - open + 1), JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(root)) {
		json_decref(root);
		return t2s_error_set(err, T2S_ERR_UPSTREAM, "describe model answer is not valid JSON: %s", jerr.text);
	}
	cols = json_object_get(root, "columns");
	if (!json_is_object(cols)) {
		json_decref(root);
		return t2s_error_set(err, T2S_ERR_UPSTREAM, "describe model answer has no \"columns\" object");
	}
	out = calloc(t->n_columns ? t->n_columns : 1, sizeof(*out));
	if (!out) {
		json_decref(root);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	/* Exact names first, so that "id" and "ID" both present map to their own columns. */
	for (int pass = 0; pass < 2; pass++) {
		json_object_foreach(cols, key, v) {
			int c = describe_column_index(t, key, true);
			if (pass == 1 && c < 0) {
				c = describe_column_index(t, key, false);
				if (c < 0) {
					unknown++;
					continue;
				}
			} else if ((pass == 0) != (c >= 0)) {
				continue;
			}
			if (out[c] || !json_is_string(v))
				continue;
			out[c] = describe_clean_dup(json_string_value(v));
		}
	}
	v = json_object_get(root, "table");
	if (json_is_string(v) && strcasecmp(json_string_value(v), t->name) != 0 &&
	    strcasecmp(json_string_value(v), t->api_name) != 0)
		tsentence = describe_clean_dup(json_string_value(v));
	json_decref(root);
	*ret_table = tsentence;
	*ret_columns = out;
	*ret_unknown = unknown;
	return 0;
}

/* The cached form of a parsed answer: {"table": ..., "columns": {...}} (malloc'd) or NULL. */
char *describe_answer_to_blob(const struct schema_table *t, const char *tsentence, char *const *cols)
{
	json_t *root = json_object(), *jc = json_object();
	char *text = NULL;

	if (!root || !jc)
		goto out;
	if (tsentence && json_object_set_new(root, "table", json_string(tsentence)) != 0)
		goto out;
	for (size_t c = 0; c < t->n_columns; c++)
		if (cols[c] && json_object_set_new(jc, t->columns[c].name, json_string(cols[c])) != 0)
			goto out;
	if (json_object_set(root, "columns", jc) == 0)
		text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
out:
	json_decref(jc);
	json_decref(root);
	return text;
}

/* "describe:v1:" + SHA-256 of (database, schema hash, model, table) into buf. */
void describe_cache_key(const struct schema *s, const struct model_endpoint *ep, int ti, char *buf, size_t size)
{
	const struct schema_table *t = &s->tables[ti];
	char hex[SHA256_HEX_LEN + 1];
	struct strbuf sb;

	strbuf_init(&sb, (size_t)1 << 20);
	strbuf_addf(&sb, "%s\x1f%s\x1f%s\x1f%s\x1f%s", s->database ? s->database : "", s->hash,
		    ep->model ? ep->model : "", t->schema ? t->schema : "", t->name);
	hash_sha256_hex(sb.buf, sb.len, hex);
	strbuf_release(&sb);
	snprintf(buf, size, "describe:%s:%s", DESCRIBE_PROMPT_VERSION, hex);
}
