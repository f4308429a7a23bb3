/*
 * describe.c - the describe stage (see describe.h).
 *
 * A run goes: resolve the overrides of the asked tables; for every table
 * that still needs generated text and has a model, look its answer up in
 * the cache (one batched lookup), then send the misses to a small pool of
 * worker threads (each takes the next table, calls the model, parses the
 * answer); store the good answers in the cache (one batched store); finally
 * assemble the items, override > model > metadata, item by item.
 *
 * Memory: everything a run allocates is malloc'd and either freed before
 * describe_run returns or handed over in the result.
 */
#include "pipeline/describe/describe.h"

#include "common/clock.h"
#include "common/hash.h"
#include "common/strbuf.h"
#include "common/trace.h"
#include "common/utf8.h"
#include "pipeline/models/stage_metrics.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char describe_source_model[] = "model";
const char describe_source_metadata[] = "metadata";
const char describe_source_override[] = "override";

/* Bumped whenever the prompt or the cached form changes: old entries are never read again. */
#define DESCRIBE_PROMPT_VERSION "v1"
/* Bounds of what one description and one prompt may hold. */
#define SAMPLES_SHOWN 5
#define SAMPLE_MAX 40
#define COMMENT_MAX 300
#define NAMES_LISTED 6
#define NEIGHBOURS_MAX 8
#define NEIGHBOUR_COLUMNS_MAX 40
#define PROMPT_MAX (512u * 1024u)
#define META_MAX 4096u

/* ---- text helpers -------------------------------------------------------- */

/*
 * Append s[0..len) to sb with every run of white space or control characters
 * turned into one space and both ends trimmed, cut to at most max bytes on a
 * UTF-8 boundary ("..." marks a cut).  Appends nothing for blank text.
 */
static void add_clean(struct strbuf *sb, const char *s, size_t max)
{
	size_t start = sb->len;
	bool space = false;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c <= ' ' || c == 0x7f) {
			space = sb->len > start;
			continue;
		}
		if (space)
			strbuf_add(sb, " ", 1);
		space = false;
		strbuf_add(sb, s, 1);
	}
	if (sb->len - start > max) {
		size_t keep = utf8_prefix_len(sb->buf + start, sb->len - start, max > 3 ? max - 3 : max);
		sb->len = start + keep;
		sb->buf[sb->len] = '\0';
		strbuf_adds(sb, "...");
	}
}

/* Start a new sentence in sb: a space unless sb is empty. */
static void sentence_gap(struct strbuf *sb)
{
	if (sb->len)
		strbuf_add(sb, " ", 1);
}

/* End the sentence just written with '.' unless it ends in . ! or ?. */
static void sentence_end(struct strbuf *sb)
{
	if (sb->len && !strchr(".!?", sb->buf[sb->len - 1]))
		strbuf_add(sb, ".", 1);
}

/* A malloc'd cleaned copy of s capped at DESCRIBE_TEXT_MAX, NULL when blank or out of memory. */
static char *clean_dup(const char *s)
{
	struct strbuf sb;

	strbuf_init(&sb, DESCRIBE_TEXT_MAX + 8);
	add_clean(&sb, s, DESCRIBE_TEXT_MAX);
	if (sb.len == 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

/* The API name of the table a foreign key points at (schema.h). */
static void add_ref_table(struct strbuf *sb, const struct schema_foreign_key *fk)
{
	strbuf_adds(sb, fk->ref_api_name);
}

/* True when every sample parses wholly as a finite number; *lo and *hi get the extreme ones. */
static bool samples_numeric(const struct schema_column *c, size_t *lo, size_t *hi)
{
	double vlo = 0, vhi = 0;

	for (size_t i = 0; i < c->n_samples; i++) {
		const char *p = c->samples[i];
		char *end = NULL;
		if (!p || !*p || isspace((unsigned char)*p) || strpbrk(p, "xXpP"))
			return false;
		double v = strtod(p, &end);
		if (!end || *end || !isfinite(v))
			return false;
		if (i == 0 || v < vlo) {
			vlo = v;
			*lo = i;
		}
		if (i == 0 || v > vhi) {
			vhi = v;
			*hi = i;
		}
	}
	return c->n_samples >= 2 && vlo < vhi;
}

/* True when every sample starts with an ISO date (YYYY-MM-DD); *lo and *hi get the extreme ones. */
static bool samples_dates(const struct schema_column *c, size_t *lo, size_t *hi)
{
	for (size_t i = 0; i < c->n_samples; i++) {
		const char *p = c->samples[i];
		if (!p || strlen(p) < 10)
			return false;
		for (int k = 0; k < 10; k++)
			if (k == 4 || k == 7 ? p[k] != '-' : !isdigit((unsigned char)p[k]))
				return false;
		if (i == 0 || strcmp(p, c->samples[*lo]) < 0)
			*lo = i;
		if (i == 0 || strcmp(p, c->samples[*hi]) > 0)
			*hi = i;
	}
	return c->n_samples >= 2 && strcmp(c->samples[*lo], c->samples[*hi]) != 0;
}

/*
 * "Values such as a, b, c (sampled values range from 1 to 9)."  Samples are
 * cleaned (white space collapsed, cut at SAMPLE_MAX) and repeats after
 * cleaning are shown once.  The range is that of the samples only: the
 * introspector keeps the first few distinct values it meets, not the extremes
 * of the column, so the wording never claims more.
 */
static void add_samples(struct strbuf *sb, const struct schema_column *c)
{
	size_t shown = 0, lo = 0, hi = 0, seg_start[SAMPLES_SHOWN], seg_len[SAMPLES_SHOWN];

	for (size_t i = 0; i < c->n_samples && shown < SAMPLES_SHOWN; i++) {
		size_t before = sb->len, mark;
		bool repeat = false;
		if (!c->samples[i])
			continue;
		if (shown == 0) {
			sentence_gap(sb);
			strbuf_adds(sb, "Values such as ");
		} else {
			strbuf_adds(sb, ", ");
		}
		mark = sb->len;
		add_clean(sb, c->samples[i], SAMPLE_MAX);
		for (size_t k = 0; k < shown && !repeat; k++)
			repeat = seg_len[k] == sb->len - mark && memcmp(sb->buf + seg_start[k], sb->buf + mark, seg_len[k]) == 0;
		if (sb->len == mark || repeat) { /* blank or repeated: undo it and its separator */
			sb->len = before;
			sb->buf[sb->len] = '\0';
			continue;
		}
		seg_start[shown] = mark;
		seg_len[shown++] = sb->len - mark;
	}
	if (shown == 0)
		return;
	if (samples_numeric(c, &lo, &hi)) {
		strbuf_adds(sb, " (sampled values range from ");
		add_clean(sb, c->samples[lo], SAMPLE_MAX);
		strbuf_adds(sb, " to ");
		add_clean(sb, c->samples[hi], SAMPLE_MAX);
		strbuf_adds(sb, ")");
	} else if (samples_dates(c, &lo, &hi)) {
		strbuf_adds(sb, " (sampled dates range from ");
		add_clean(sb, c->samples[lo], SAMPLE_MAX);
		strbuf_adds(sb, " to ");
		add_clean(sb, c->samples[hi], SAMPLE_MAX);
		strbuf_adds(sb, ")");
	}
	strbuf_adds(sb, ".");
}

static bool in_list(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && strcmp(names[i], name) == 0)
			return true;
	return false;
}

/* Key roles of column c of table ti: primary key, foreign keys, references to it. */
static void add_key_roles(struct strbuf *sb, const struct schema *s, int ti, const struct schema_column *c)
{
	const struct schema_table *t = &s->tables[ti];

	if ((t->n_primary_key == 1 && strcmp(t->primary_key[0], c->name) == 0) ||
	    (t->n_primary_key == 0 && c->primary_key)) {
		sentence_gap(sb);
		strbuf_addf(sb, "Primary key of %s.", t->api_name);
	} else if (t->n_primary_key > 1 && in_list(t->primary_key, t->n_primary_key, c->name)) {
		sentence_gap(sb);
		strbuf_addf(sb, "Part of the primary key of %s (", t->api_name);
		for (size_t k = 0; k < t->n_primary_key; k++)
			strbuf_addf(sb, "%s%s", k ? ", " : "", t->primary_key[k]);
		strbuf_adds(sb, ").");
	}
	for (size_t f = 0; f < t->n_foreign_keys; f++) {
		const struct schema_foreign_key *fk = &t->foreign_keys[f];
		for (size_t k = 0; k < fk->n_columns; k++) {
			if (strcmp(fk->columns[k], c->name) != 0)
				continue;
			sentence_gap(sb);
			strbuf_adds(sb, fk->n_columns == 1 ? "Foreign key to " : "Part of a foreign key to ");
			add_ref_table(sb, fk);
			if (fk->ref_columns && fk->ref_columns[k])
				strbuf_addf(sb, ".%s", fk->ref_columns[k]);
			strbuf_adds(sb, ".");
		}
	}
	size_t listed = 0, more = 0;
	for (size_t o = 0; o < s->n_tables; o++) {
		const struct schema_table *ot = &s->tables[o];
		for (size_t f = 0; f < ot->n_foreign_keys; f++) {
			const struct schema_foreign_key *fk = &ot->foreign_keys[f];
			if (fk->ref_index != ti || !fk->ref_columns)
				continue;
			for (size_t k = 0; k < fk->n_columns; k++) {
				if (!fk->ref_columns[k] || strcmp(fk->ref_columns[k], c->name) != 0)
					continue;
				if (listed == NAMES_LISTED) {
					more++;
					continue;
				}
				if (listed++ == 0) {
					sentence_gap(sb);
					strbuf_adds(sb, "Referenced by ");
				} else {
					strbuf_adds(sb, ", ");
				}
				strbuf_addf(sb, "%s.%s", ot->api_name, fk->columns[k]);
			}
		}
	}
	if (more)
		strbuf_addf(sb, " and %zu more", more);
	if (listed)
		strbuf_adds(sb, ".");
}

static char *column_metadata(const struct schema *s, int ti, int ci)
{
	const struct schema_column *c = &s->tables[ti].columns[ci];
	struct strbuf sb;

	strbuf_init(&sb, META_MAX);
	if (c->comment) {
		add_clean(&sb, c->comment, COMMENT_MAX);
		sentence_end(&sb);
	}
	add_key_roles(&sb, s, ti, c);
	sentence_gap(&sb);
	if (c->type && *c->type) {
		strbuf_adds(&sb, "Type ");
		add_clean(&sb, c->type, 80);
	} else {
		strbuf_adds(&sb, "No declared type");
	}
	strbuf_adds(&sb, c->nullable ? "." : ", NOT NULL.");
	add_samples(&sb, c);
	return strbuf_detach(&sb, NULL);
}

static const char *kind_word(const char *kind)
{
	if (kind && strcmp(kind, "view") == 0)
		return "View";
	if (kind && strcmp(kind, "materialized_view") == 0)
		return "Materialized view";
	if (kind && strcmp(kind, "foreign_table") == 0)
		return "Foreign table";
	return "Table";
}

/* "References a (x) and b (y)." and "Referenced by c, d." for table ti. */
static void add_table_links(struct strbuf *sb, const struct schema *s, int ti)
{
	const struct schema_table *t = &s->tables[ti];
	size_t n = t->n_foreign_keys < NAMES_LISTED ? t->n_foreign_keys : NAMES_LISTED;

	for (size_t f = 0; f < n; f++) {
		const struct schema_foreign_key *fk = &t->foreign_keys[f];
		strbuf_adds(sb, f == 0 ? " References " : f + 1 == n ? " and " : ", ");
		add_ref_table(sb, fk);
		strbuf_adds(sb, " (");
		for (size_t k = 0; k < fk->n_columns; k++)
			strbuf_addf(sb, "%s%s", k ? ", " : "", fk->columns[k]);
		strbuf_adds(sb, ")");
	}
	if (t->n_foreign_keys > n)
		strbuf_addf(sb, " and %zu more", t->n_foreign_keys - n);
	if (n)
		strbuf_adds(sb, ".");

	size_t listed = 0, more = 0;
	for (size_t o = 0; o < s->n_tables; o++) {
		const struct schema_table *ot = &s->tables[o];
		bool refers = false;
		for (size_t f = 0; f < ot->n_foreign_keys && !refers; f++)
			refers = ot->foreign_keys[f].ref_index == ti;
		if (!refers || (int)o == ti)
			continue;
		if (listed == NAMES_LISTED) {
			more++;
			continue;
		}
		strbuf_adds(sb, listed++ == 0 ? " Referenced by " : ", ");
		strbuf_adds(sb, ot->api_name);
	}
	if (more)
		strbuf_addf(sb, " and %zu more", more);
	if (listed)
		strbuf_adds(sb, ".");
}

static char *table_metadata(const struct schema *s, int ti)
{
	const struct schema_table *t = &s->tables[ti];
	struct strbuf sb;

	strbuf_init(&sb, META_MAX);
	if (t->comment) {
		add_clean(&sb, t->comment, COMMENT_MAX);
		sentence_end(&sb);
	}
	sentence_gap(&sb);
	strbuf_addf(&sb, "%s with ", kind_word(t->kind));
	if (t->row_count >= 0)
		strbuf_addf(&sb, "%s%lld row%s and ", t->row_count_estimated ? "about " : "", t->row_count,
			    t->row_count == 1 ? "" : "s");
	strbuf_addf(&sb, "%zu column%s.", t->n_columns, t->n_columns == 1 ? "" : "s");
	if (t->n_primary_key == 1) {
		strbuf_addf(&sb, " Primary key %s.", t->primary_key[0]);
	} else if (t->n_primary_key > 1) {
		strbuf_adds(&sb, " Primary key (");
		for (size_t k = 0; k < t->n_primary_key; k++)
			strbuf_addf(&sb, "%s%s", k ? ", " : "", t->primary_key[k]);
		strbuf_adds(&sb, ").");
	}
	add_table_links(&sb, s, ti);
	return strbuf_detach(&sb, NULL);
}

char *describe_metadata_text(const struct schema *s, int table, int column)
{
	if (!s || table < 0 || (size_t)table >= s->n_tables || column < -1 ||
	    (column >= 0 && (size_t)column >= s->tables[table].n_columns))
		return NULL;
	char *raw = column < 0 ? table_metadata(s, table) : column_metadata(s, table, column);
	if (!raw || strlen(raw) <= DESCRIBE_TEXT_MAX)
		return raw;
	size_t keep = utf8_prefix_len(raw, strlen(raw), DESCRIBE_TEXT_MAX - 3);
	memcpy(raw + keep, "...", 4);
	return raw;
}

/* ---- the model prompt ---------------------------------------------------- */

/* One column line of the prompt: "- name TYPE, primary key, foreign key to x.y; samples: a, b". */
static void prompt_column(struct strbuf *sb, const struct schema *s, int ti, const struct schema_column *c)
{
	const struct schema_table *t = &s->tables[ti];

	strbuf_addf(sb, "- %s %s", c->name, c->type && *c->type ? c->type : "(no declared type)");
	if (in_list(t->primary_key, t->n_primary_key, c->name) || (t->n_primary_key == 0 && c->primary_key))
		strbuf_adds(sb, t->n_primary_key > 1 ? ", part of the primary key" : ", primary key");
	for (size_t f = 0; f < t->n_foreign_keys; f++) {
		const struct schema_foreign_key *fk = &t->foreign_keys[f];
		for (size_t k = 0; k < fk->n_columns; k++) {
			if (strcmp(fk->columns[k], c->name) != 0)
				continue;
			strbuf_adds(sb, ", foreign key to ");
			add_ref_table(sb, fk);
			if (fk->ref_columns && fk->ref_columns[k])
				strbuf_addf(sb, ".%s", fk->ref_columns[k]);
		}
	}
	if (!c->nullable)
		strbuf_adds(sb, ", NOT NULL");
	if (c->comment) {
		strbuf_adds(sb, "; comment: ");
		add_clean(sb, c->comment, COMMENT_MAX);
	}
	for (size_t i = 0, shown = 0; i < c->n_samples && shown < SAMPLES_SHOWN; i++) {
		if (!c->samples[i])
			continue;
		strbuf_adds(sb, shown++ ? " | " : "; sample values: ");
		add_clean(sb, c->samples[i], SAMPLE_MAX);
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
				add_ref_table(sb, fk);
				strbuf_addf(sb, ".%s\n", fk->ref_columns && fk->ref_columns[k] ? fk->ref_columns[k] : "?");
			}
		}
	}
}

static const char system_prompt[] =
	"You document relational database schemas for analysts who write SQL. You describe only what the "
	"names, types, keys and sample values shown support, in plain English, and answer with JSON only.";

/*
 * The user message for table ti: 0 and *ret_prompt (malloc'd, caller frees),
 * -T2S_ERR_NOMEM, or -T2S_ERR_INVALID when it would exceed PROMPT_MAX bytes
 * (absurdly long names or comments); err filled on failure.
 */
static int build_prompt(const struct schema *s, int ti, char **ret_prompt, struct t2s_error *err)
{
	const struct schema_table *t = &s->tables[ti];
	struct strbuf sb;

	/* The buffer may grow well past PROMPT_MAX so that an oversized prompt is seen, not cut. */
	strbuf_init(&sb, 4 * PROMPT_MAX);
	strbuf_addf(&sb, "Database: %s (%s)\n", s->database ? s->database : "", db_engine_name(s->engine));
	strbuf_addf(&sb, "%s: %s", kind_word(t->kind), t->api_name);
	if (t->row_count >= 0)
		strbuf_addf(&sb, " (%s%lld rows)", t->row_count_estimated ? "about " : "", t->row_count);
	strbuf_adds(&sb, "\n");
	if (t->comment) {
		strbuf_adds(&sb, "Comment: ");
		add_clean(&sb, t->comment, COMMENT_MAX);
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

static void free_columns(char **cols, size_t n)
{
	if (!cols)
		return;
	for (size_t i = 0; i < n; i++)
		free(cols[i]);
	free(cols);
}

/* Index of the column called name in t: exact match when exact, else case-insensitive; -1. */
static int column_index(const struct schema_table *t, const char *name, bool exact)
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
			int c = column_index(t, key, true);
			if (pass == 1 && c < 0) {
				c = column_index(t, key, false);
				if (c < 0) {
					unknown++;
					continue;
				}
			} else if ((pass == 0) != (c >= 0)) {
				continue;
			}
			if (out[c] || !json_is_string(v))
				continue;
			out[c] = clean_dup(json_string_value(v));
		}
	}
	v = json_object_get(root, "table");
	if (json_is_string(v) && strcasecmp(json_string_value(v), t->name) != 0 &&
	    strcasecmp(json_string_value(v), t->api_name) != 0)
		tsentence = clean_dup(json_string_value(v));
	json_decref(root);
	*ret_table = tsentence;
	*ret_columns = out;
	*ret_unknown = unknown;
	return 0;
}

/* The cached form of a parsed answer: {"table": ..., "columns": {...}} (malloc'd) or NULL. */
static char *answer_to_blob(const struct schema_table *t, const char *tsentence, char *const *cols)
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
static void cache_key(const struct schema *s, const struct model_endpoint *ep, int ti, char *buf, size_t size)
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

/* ---- one table's model job ----------------------------------------------- */

struct job {
	int table;
	char key[96];
	bool from_cache;
	bool called;
	int rc;               /* model_chat's result */
	int parse_rc;         /* describe_parse_answer's result (when rc == 0) */
	struct t2s_error err; /* of whichever failed */
	struct model_call_stats stats;
	char *tsentence;      /* parsed answer, owned */
	char **cols;
	int unknown;
};

struct pool {
	const struct schema *s;
	const struct model_endpoint *ep;
	struct trace_context trace; /* the caller's, adopted by the workers */
	struct job **jobs; /* jobs that need a model call */
	size_t n;
	atomic_size_t next;
};

static void run_job(const struct pool *p, struct job *j)
{
	struct model_message msgs[2] = {{"system", system_prompt}, {"user", NULL}};
	char *prompt = NULL, *answer = NULL;

	j->rc = build_prompt(p->s, j->table, &prompt, &j->err);
	if (j->rc < 0)
		return; /* not called */
	msgs[1].content = prompt;
	j->called = true;
	j->rc = model_chat(p->ep, msgs, 2, &answer, &j->stats, &j->err);
	free(prompt);
	if (j->rc == 0) {
		j->parse_rc = describe_parse_answer(p->s, j->table, answer, &j->tsentence, &j->cols, &j->unknown, &j->err);
		free(answer);
	}
}

static void *pool_worker(void *arg)
{
	struct pool *p = arg;

	trace_set(p->trace.traceparent); /* a thread of this request: its model calls carry the trace */
	for (;;) {
		size_t i = atomic_fetch_add(&p->next, 1);
		if (i >= p->n)
			return NULL;
		run_job(p, p->jobs[i]);
	}
}

/* Run every job with at most max_threads threads (the caller's own thread helps when none start). */
static void pool_run(struct pool *p, int max_threads)
{
	pthread_t threads[DESCRIBE_PARALLEL_MAX];
	size_t started = 0, want = p->n < (size_t)max_threads ? p->n : (size_t)max_threads;

	while (started < want && pthread_create(&threads[started], NULL, pool_worker, p) == 0)
		started++;
	if (started == 0)
		pool_worker(p);
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
}

/* ---- a run ---------------------------------------------------------------- */

struct run {
	const struct schema *s;
	const struct describe_options *o;
	int *tables;         /* asked tables, deduplicated */
	size_t n_tables;
	size_t *ov_offset;   /* per asked table: first slot in ov (table item, then columns) */
	const char **ov;     /* override text per item, or NULL */
	struct job *jobs;    /* per asked table */
	struct describe_result res;
};

static int push_error(struct describe_result *res, const char *table, const struct t2s_error *e)
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
		c = column_index(&s->tables[t], ov->column, true);
		if (c < 0)
			c = column_index(&s->tables[t], ov->column, false);
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
static bool fully_overridden(const struct run *r, size_t i)
{
	size_t n = 1 + r->s->tables[r->tables[i]].n_columns;

	for (size_t k = 0; k < n; k++)
		if (!r->ov[r->ov_offset[i] + k])
			return false;
	return true;
}

/* Look every model job up in the cache; hits are parsed into their jobs. */
static int cache_lookup(struct run *r, struct job **pending, size_t n)
{
	const char **keys = malloc((n ? n : 1) * sizeof(*keys));
	struct embed_cache_blob *blobs = calloc(n ? n : 1, sizeof(*blobs));
	int rc = 0;

	if (!keys || !blobs) {
		free(keys);
		free(blobs);
		return -T2S_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		keys[i] = pending[i]->key;
	rc = embed_cache_get_many(r->o->cache, keys, n, blobs, NULL);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct job *j = pending[i];
		char *text;
		if (!blobs[i].data)
			continue;
		text = malloc(blobs[i].len + 1);
		if (!text) {
			rc = -T2S_ERR_NOMEM;
			break;
		}
		memcpy(text, blobs[i].data, blobs[i].len);
		text[blobs[i].len] = '\0';
		/* A blob that no longer parses (corrupt, foreign) is a miss. */
		if (describe_parse_answer(r->s, j->table, text, &j->tsentence, &j->cols, &j->unknown, NULL) == 0) {
			j->from_cache = true;
			j->unknown = 0;
			r->res.cache_hits++;
		}
		free(text);
	}
	for (size_t i = 0; i < n; i++)
		free(blobs[i].data);
	free(blobs);
	free(keys);
	return rc;
}

/* Store the good fresh answers; cache trouble is ignored (the run does not depend on it). */
static void cache_store(struct run *r)
{
	const char **keys = malloc((r->n_tables ? r->n_tables : 1) * sizeof(*keys));
	struct embed_cache_blob *blobs = calloc(r->n_tables ? r->n_tables : 1, sizeof(*blobs));
	size_t n = 0;

	for (size_t i = 0; keys && blobs && i < r->n_tables; i++) {
		struct job *j = &r->jobs[i];
		if (!j->called || j->rc != 0 || j->parse_rc != 0)
			continue;
		char *text = answer_to_blob(&r->s->tables[j->table], j->tsentence, j->cols);
		if (!text || strlen(text) > EMBED_CACHE_BLOB_MAX) {
			free(text);
			continue;
		}
		keys[n] = j->key;
		blobs[n].data = text;
		blobs[n++].len = strlen(text);
	}
	if (n)
		embed_cache_put_many(r->o->cache, keys, blobs, n, NULL);
	for (size_t i = 0; blobs && i < n; i++)
		free(blobs[i].data);
	free(blobs);
	free(keys);
}

/* Calls the model for every asked table that needs it (cache first). */
static int model_phase(struct run *r, struct t2s_error *err)
{
	const struct model_endpoint *ep = r->o->model;
	struct job **pending = malloc((r->n_tables ? r->n_tables : 1) * sizeof(*pending));
	size_t n = 0, n_call = 0;
	double t0 = clock_now_ms();
	int rc = 0;

	if (!pending)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < r->n_tables; i++) {
		if (fully_overridden(r, i))
			continue;
		cache_key(r->s, ep, r->tables[i], r->jobs[i].key, sizeof(r->jobs[i].key));
		pending[n++] = &r->jobs[i];
	}
	if (r->o->cache && n)
		rc = cache_lookup(r, pending, n);
	for (size_t i = 0; i < n; i++)
		if (!pending[i]->from_cache)
			pending[n_call++] = pending[i];
	if (rc == 0 && n_call) {
		int par = r->o->max_parallel > 0 ? r->o->max_parallel : DESCRIBE_PARALLEL_DEFAULT;
		struct pool p = {.s = r->s, .ep = ep, .jobs = pending, .n = n_call};
		atomic_init(&p.next, 0);
		trace_get(&p.trace);
		pool_run(&p, par > DESCRIBE_PARALLEL_MAX ? DESCRIBE_PARALLEL_MAX : par);
	}
	for (size_t i = 0; rc == 0 && i < n_call; i++) {
		struct job *j = pending[i];
		if (!j->called) { /* no prompt: out of memory fails the run, an oversized one falls back */
			if (j->rc == -T2S_ERR_NOMEM) {
				rc = -T2S_ERR_NOMEM;
			} else {
				r->res.model_errors++;
				rc = push_error(&r->res, r->s->tables[j->table].api_name, &j->err);
			}
			continue;
		}
		int metric_rc = j->rc != 0 ? j->rc : j->parse_rc == -T2S_ERR_NOMEM ? 0 : j->parse_rc;
		stage_metrics_model_call("describe", metric_rc, &j->stats);
		r->res.model_calls++;
		r->res.prompt_tokens += j->stats.prompt_tokens;
		r->res.completion_tokens += j->stats.completion_tokens;
		if (j->rc == 0 && j->parse_rc == -T2S_ERR_NOMEM)
			rc = -T2S_ERR_NOMEM;
		else if (j->rc != 0 || j->parse_rc != 0) {
			r->res.model_errors++;
			rc = push_error(&r->res, r->s->tables[j->table].api_name, &j->err);
		} else {
			r->res.unknown_columns += j->unknown;
		}
	}
	if (n_call)
		stage_metrics_step("describe", "model", clock_now_ms() - t0);
	if (rc == 0 && r->o->cache)
		cache_store(r);
	free(pending);
	return rc < 0 ? t2s_error_set(err, (enum t2s_code)-rc, "out of memory") : 0;
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
		const struct job *j = &r->jobs[i];
		int ti = r->tables[i];
		bool model_ok = j->from_cache || (j->called && j->rc == 0 && j->parse_rc == 0);
		for (int ci = -1; ci < (int)r->s->tables[ti].n_columns; ci++) {
			const char *ov = r->ov[r->ov_offset[i] + (size_t)(ci + 1)];
			const char *gen = !model_ok ? NULL : ci < 0 ? j->tsentence : j->cols[ci];
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
	for (size_t i = 0; r->jobs && i < r->n_tables; i++) {
		free(r->jobs[i].tsentence);
		free_columns(r->jobs[i].cols, r->s->tables[r->jobs[i].table].n_columns);
	}
	free(r->jobs);
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
	if (rc == 0) {
		r.jobs = calloc(r.n_tables ? r.n_tables : 1, sizeof(*r.jobs));
		if (!r.jobs)
			rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		for (size_t i = 0; r.jobs && i < r.n_tables; i++)
			r.jobs[i].table = r.tables[i];
	}
	if (rc == 0 && o && o->model)
		rc = model_phase(&r, err);
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
