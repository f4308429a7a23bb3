/*
 * prompt.c - rendering the generator's prompt in each profile, within the
 * token budget (see prompt.h).
 *
 * Budget trimming renders the whole prompt, and while it is over budget
 * drops the next droppable item (lowest-scoring column, then the last
 * example, the oldest turn, then sample values) and renders again.  Prompts
 * hold tens of columns, so the repeated rendering costs microseconds and
 * keeps one rendering path for measuring and for output.
 */
#include "pipeline/generate/prompt.h"

#include "common/strbuf.h"
#include "common/tokens.h"
#include "pipeline/generate/reply.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PROMPT_MAX_BYTES (8u << 20)
/* The default profile's offer of the sentinel (reply.h); lite-sql keeps its trained format. */
#define UNANSWERABLE_NOTE \
	" If no query over this database can answer it (the question is about something else), reply only " \
	REPLY_UNANSWERABLE " and the reason in one sentence."
#define SAMPLE_MAX_LEN 40

long prompt_estimate_tokens(const char *text)
{
	return tokens_estimate(text); /* the service's one estimate (common/tokens.h) */
}

/* What the dialect notes cover; PostgreSQL's quoting and grouping rules are always noted. */
enum note { NOTE_DATES = 1, NOTE_RATIOS = 2, NOTE_STRINGS = 4 };

/*
 * Dialect notes where the prompt needs them: string comparison case when
 * the question compares values, dates when a shown column holds them, ratios
 * when asked.  Returns 0 with nothing written when none applies.
 */
static int add_dialect_notes(struct strbuf *sb, const struct db_engine *engine, unsigned notes)
{
	if (!engine->prompt_notes.always && !notes)
		return 0;
	int rc = strbuf_adds(sb, "\n### Notes\n");
	if (rc == 0 && engine->prompt_notes.always)
		rc = strbuf_adds(sb, engine->prompt_notes.always);
	if (rc == 0 && (notes & NOTE_STRINGS))
		rc = strbuf_adds(sb, engine->prompt_notes.strings);
	if (rc == 0 && (notes & NOTE_DATES))
		rc = strbuf_adds(sb, engine->prompt_notes.dates);
	if (rc == 0 && (notes & NOTE_RATIOS))
		rc = strbuf_adds(sb, engine->prompt_notes.ratios);
	return rc;
}

/* ---- identifiers and literals -------------------------------------------- */

static int add_ident(struct strbuf *sb, const struct db_engine *engine, const char *s)
{
	if (db_engine_plain_name(engine, s, DB_NAME_PROMPT))
		return strbuf_adds(sb, s);
	const char q = engine->quote;
	int rc = strbuf_add(sb, &q, 1);
	for (const char *p = s; rc == 0 && *p; p++) {
		rc = strbuf_add(sb, p, 1);
		if (rc == 0 && *p == q)
			rc = strbuf_add(sb, p, 1); /* doubled inside the quotes */
	}
	return rc ? rc : strbuf_add(sb, &q, 1);
}

/* The table's name as SQL: schema-qualified outside the engine's home schema (SQLite's main, PostgreSQL's public). */
static int add_table_name(struct strbuf *sb, const struct schema *s, const struct schema_table *t)
{
	int rc = 0;
	if (db_engine_qualifies(s->engine, t->schema)) {
		rc = add_ident(sb, s->engine, t->schema);
		if (rc == 0)
			rc = strbuf_adds(sb, ".");
	}
	return rc ? rc : add_ident(sb, s->engine, t->name);
}

/* A sample as an SQL literal: numbers bare, text quoted, long text cut. */
static int add_sample(struct strbuf *sb, const char *v)
{
	char *end;
	size_t n = strlen(v);
	if (n && n < 30 && (strtod(v, &end), *end == '\0') && !isspace((unsigned char)v[0]))
		return strbuf_adds(sb, v);
	int rc = strbuf_adds(sb, "'");
	size_t i = 0;
	for (; rc == 0 && v[i] && i < SAMPLE_MAX_LEN; i++) {
		if (v[i] == '\n' || v[i] == '\r')
			rc = strbuf_adds(sb, " ");
		else
			rc = v[i] == '\'' ? strbuf_adds(sb, "''") : strbuf_add(sb, &v[i], 1);
	}
	/* Do not cut inside a UTF-8 sequence. */
	while (rc == 0 && v[i] && ((unsigned char)v[i] & 0xC0) == 0x80)
		rc = strbuf_add(sb, &v[i++], 1);
	if (rc == 0 && v[i])
		rc = strbuf_adds(sb, "...");
	return rc ? rc : strbuf_adds(sb, "'");
}

/* One line of text without newlines (descriptions may hold them). */
static int add_oneline(struct strbuf *sb, const char *text)
{
	int rc = 0;
	for (const char *p = text; rc == 0 && *p; p++)
		rc = strbuf_add(sb, *p == '\n' || *p == '\r' ? " " : p, 1);
	return rc;
}

/* ---- what is shown ------------------------------------------------------- */

struct view {
	bool *column_on;   /* per input column */
	size_t examples, history_first;
	bool samples;
};

/* Is table t among the prompt's tables? */
static bool table_shown(const struct prompt_input *in, int t)
{
	for (size_t i = 0; i < in->n_tables; i++)
		if (in->tables[i].table == t)
			return true;
	return false;
}

/* Does foreign key fk of table t link column c of t to column rc of table rt? */
static bool fk_links(const struct schema *s, int t, int c, int rt, int rcol)
{
	const struct schema_table *st = &s->tables[t];
	for (size_t f = 0; f < st->n_foreign_keys; f++) {
		const struct schema_foreign_key *fk = &st->foreign_keys[f];
		if (fk->ref_index != rt || fk->n_columns != 1)
			continue;
		const char *ref = fk->ref_columns && fk->ref_columns[0] ? fk->ref_columns[0] : NULL;
		if (strcmp(fk->columns[0], st->columns[c].name) == 0 &&
		    (!ref || strcmp(ref, s->tables[rt].columns[rcol].name) == 0))
			return true;
	}
	return false;
}

/* A join the CREATE TABLE statements already show as a foreign key. */
static bool join_declared(const struct prompt_input *in, const struct prompt_join *j)
{
	return fk_links(in->schema, j->left_table, j->left_column, j->right_table, j->right_column) ||
	       fk_links(in->schema, j->right_table, j->right_column, j->left_table, j->left_column);
}

static bool contains_word_ci(const char *text, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = text; *p; p++)
		if (strncasecmp(p, word, n) == 0 && (p == text || !isalpha((unsigned char)p[-1])))
			return true;
	return false;
}

/* Which notes beyond quoting and case the prompt needs: dates when a shown column holds them, ratios when asked. */
static unsigned needed_notes(const struct prompt_input *in, const struct view *v)
{
	unsigned notes = 0;
	for (size_t i = 0; i < in->n_columns && !(notes & NOTE_DATES); i++) {
		if (!v->column_on[i])
			continue;
		const struct schema_column *c = &in->schema->tables[in->columns[i].table].columns[in->columns[i].column];
		const char *x = c->n_samples ? c->samples[0] : "";
		bool iso = strlen(x) >= 10 && isdigit((unsigned char)x[0]) && isdigit((unsigned char)x[3]) && x[4] == '-' &&
			   isdigit((unsigned char)x[5]) && x[7] == '-';
		if (c->type_class == SCHEMA_TYPE_DATE || iso)
			notes |= NOTE_DATES;
	}
	/* String comparisons: values found for the question, or the user's evidence naming some. */
	if (in->n_evidence || in->user_evidence || strchr(in->question, '\'') || strchr(in->question, '"'))
		notes |= NOTE_STRINGS;
	static const char *const ratio_words[] = {"percent", "ratio", "proportion", "fraction", "share", NULL};
	for (const char *const *w = ratio_words; *w; w++)
		if (contains_word_ci(in->question, *w))
			notes |= NOTE_RATIOS;
	return notes;
}

/* ---- default profile ----------------------------------------------------- */

/* One line inside CREATE TABLE: its definition and an optional comment. */
struct table_line {
	struct strbuf def, comment;
};

static int column_line(struct table_line *l, const struct prompt_input *in, const struct view *v,
		       const struct schema_table *t, const struct prompt_column *pc)
{
	const struct schema *s = in->schema;
	const struct schema_column *c = &t->columns[pc->column];
	int rc = add_ident(&l->def, s->engine, c->name);
	if (rc == 0 && c->type && *c->type)
		rc = strbuf_addf(&l->def, " %s", c->type);
	if (rc == 0 && t->n_primary_key == 1 && c->primary_key)
		rc = strbuf_adds(&l->def, " PRIMARY KEY");
	const char *desc = pc->description ? pc->description : c->comment;
	if (rc == 0 && desc)
		rc = add_oneline(&l->comment, desc);
	/* Key values (ids) and plain numbers say little the type does not; text shows its spelling. */
	if (rc == 0 && v->samples && !pc->key && !schema_column_is_number(c) && in->sample_values > 0 && c->n_samples > 0) {
		rc = strbuf_adds(&l->comment, desc ? "; e.g. " : "e.g. ");
		for (size_t k = 0; rc == 0 && k < c->n_samples && k < (size_t)in->sample_values; k++) {
			if (k)
				rc = strbuf_adds(&l->comment, ", ");
			if (rc == 0)
				rc = add_sample(&l->comment, c->samples[k]);
		}
	}
	return rc;
}

static int identifier_list(struct strbuf *sb, const struct db_engine *engine, const char *const *names, size_t n)
{
	int rc = strbuf_adds(sb, "(");
	for (size_t k = 0; rc == 0 && k < n; k++) {
		if (k)
			rc = strbuf_adds(sb, ", ");
		if (rc == 0)
			rc = add_ident(sb, engine, names[k] ? names[k] : "?");
	}
	return rc ? rc : strbuf_adds(sb, ")");
}

static int foreign_key_line(struct table_line *l, const struct schema *s, const struct schema_foreign_key *fk)
{
	int rc = strbuf_adds(&l->def, "FOREIGN KEY ");
	if (rc == 0)
		rc = identifier_list(&l->def, s->engine, fk->columns, fk->n_columns);
	if (rc == 0)
		rc = strbuf_adds(&l->def, " REFERENCES ");
	if (rc == 0 && fk->ref_schema && strcmp(fk->ref_schema, "public") != 0 && strcmp(fk->ref_schema, "main") != 0) {
		rc = add_ident(&l->def, s->engine, fk->ref_schema);
		if (rc == 0)
			rc = strbuf_adds(&l->def, ".");
	}
	if (rc == 0)
		rc = add_ident(&l->def, s->engine, fk->ref_table);
	if (rc == 0 && fk->ref_columns && fk->ref_columns[0])
		rc = identifier_list(&l->def, s->engine, fk->ref_columns, fk->n_columns);
	return rc;
}

/*
 * CREATE TABLE of one linked table: its shown columns, a composite primary
 * key, its foreign keys; the comma of each line goes before its comment.
 */
static int render_create_table(struct strbuf *sb, const struct prompt_input *in, const struct view *v,
			       const struct prompt_table *pt)
{
	const struct schema *s = in->schema;
	const struct schema_table *t = &s->tables[pt->table];
	size_t cap = t->n_columns + t->n_foreign_keys + 1, n = 0;
	struct table_line *lines = calloc(cap, sizeof(*lines));
	if (!lines)
		return -T2S_ERR_NOMEM;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < in->n_columns && n < cap; i++) {
		const struct prompt_column *pc = &in->columns[i];
		if (pc->table != pt->table || !v->column_on[i])
			continue;
		strbuf_init(&lines[n].def, PROMPT_MAX_BYTES);
		strbuf_init(&lines[n].comment, PROMPT_MAX_BYTES);
		rc = column_line(&lines[n++], in, v, t, pc);
	}
	if (rc == 0 && t->n_primary_key > 1 && n < cap) {
		strbuf_init(&lines[n].def, PROMPT_MAX_BYTES);
		strbuf_init(&lines[n].comment, PROMPT_MAX_BYTES);
		rc = strbuf_adds(&lines[n].def, "PRIMARY KEY ");
		if (rc == 0)
			rc = identifier_list(&lines[n].def, s->engine, t->primary_key, t->n_primary_key);
		n++;
	}
	for (size_t f = 0; rc == 0 && f < t->n_foreign_keys && n < cap; f++) {
		if (!table_shown(in, t->foreign_keys[f].ref_index))
			continue; /* a key into a table the model is not shown */
		strbuf_init(&lines[n].def, PROMPT_MAX_BYTES);
		strbuf_init(&lines[n].comment, PROMPT_MAX_BYTES);
		rc = foreign_key_line(&lines[n++], s, &t->foreign_keys[f]);
	}
	if (rc == 0 && pt->description) {
		rc = strbuf_adds(sb, "-- ");
		if (rc == 0)
			rc = add_oneline(sb, pt->description);
		if (rc == 0)
			rc = strbuf_adds(sb, "\n");
	}
	if (rc == 0)
		rc = strbuf_adds(sb, "CREATE TABLE ");
	if (rc == 0)
		rc = add_table_name(sb, s, t);
	if (rc == 0)
		rc = strbuf_adds(sb, " (\n");
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = strbuf_addf(sb, "  %s%s%s%s\n", lines[i].def.buf, i + 1 < n ? "," : "",
				 lines[i].comment.len ? " -- " : "", lines[i].comment.buf);
	if (rc == 0)
		rc = strbuf_adds(sb, ");\n");
	for (size_t i = 0; i < n; i++) {
		strbuf_release(&lines[i].def);
		strbuf_release(&lines[i].comment);
	}
	free(lines);
	return rc;
}

static int render_join(struct strbuf *sb, const struct schema *s, const struct prompt_join *j)
{
	const struct schema_table *l = &s->tables[j->left_table], *r = &s->tables[j->right_table];
	int rc = add_table_name(sb, s, l);
	if (rc == 0)
		rc = strbuf_adds(sb, ".");
	if (rc == 0)
		rc = add_ident(sb, s->engine, l->columns[j->left_column].name);
	if (rc == 0)
		rc = strbuf_adds(sb, " = ");
	if (rc == 0)
		rc = add_table_name(sb, s, r);
	if (rc == 0)
		rc = strbuf_adds(sb, ".");
	if (rc == 0)
		rc = add_ident(sb, s->engine, r->columns[j->right_column].name);
	return rc;
}

static int render_pairs(struct strbuf *sb, const char *heading, const struct prompt_pair *pairs, size_t first,
			size_t end)
{
	if (first >= end)
		return 0;
	int rc = strbuf_adds(sb, heading);
	for (size_t i = first; rc == 0 && i < end; i++)
		rc = strbuf_addf(sb, "-- Question: %s\n%s;\n", pairs[i].question, pairs[i].sql);
	return rc;
}

static int render_default(const struct prompt_input *in, const struct view *v, struct strbuf *user)
{
	const struct schema *s = in->schema;
	int rc = strbuf_addf(user, "### Database (%s)\n", s->engine->dialect);
	for (size_t i = 0; rc == 0 && i < in->n_tables; i++)
		rc = render_create_table(user, in, v, &in->tables[i]);
	/* The scaffold: its foreign keys are in the CREATE TABLEs, the inferred joins listed here. */
	bool heading = false;
	for (size_t i = 0; rc == 0 && i < in->n_joins; i++) {
		if (join_declared(in, &in->joins[i]))
			continue;
		if (!heading)
			rc = strbuf_adds(user, "\n### Joins between these tables\n");
		heading = true;
		if (rc == 0)
			rc = render_join(user, s, &in->joins[i]);
		if (rc == 0)
			rc = strbuf_adds(user, "\n");
	}
	if (rc == 0 && (in->n_evidence || in->user_evidence)) {
		rc = strbuf_adds(user, "\n### Evidence (values are spelled exactly as stored)\n");
		if (rc == 0 && in->user_evidence)
			rc = strbuf_addf(user, "- %s\n", in->user_evidence);
		for (size_t i = 0; rc == 0 && i < in->n_evidence; i++)
			rc = strbuf_addf(user, "- %s\n", in->evidence[i]);
	}
	if (rc == 0)
		rc = render_pairs(user, "\n### Examples\n", in->examples, 0, v->examples);
	if (rc == 0)
		rc = render_pairs(user, "\n### Conversation so far (the question may refer to it)\n", in->history,
				  v->history_first, in->n_history);
	if (rc == 0)
		rc = add_dialect_notes(user, s->engine, needed_notes(in, v));
	if (rc == 0)
		rc = strbuf_addf(user, "\n### Question\n%s\nAnswer with one %s SELECT in a ```sql fence.\n", in->question,
				 s->engine->dialect);
	return rc;
}

/* ---- lite-sql profile ---------------------------------------------------- */

static int render_lite(const struct prompt_input *in, const struct view *v, struct strbuf *user)
{
	const struct schema *s = in->schema;
	int rc = strbuf_addf(user, "### Question\n%s\n### Database\n-- Tables and Columns\n", in->question);
	for (size_t ti = 0; rc == 0 && ti < in->n_tables; ti++) {
		const struct schema_table *t = &s->tables[in->tables[ti].table];
		for (size_t i = 0; rc == 0 && i < in->n_columns; i++) {
			const struct prompt_column *pc = &in->columns[i];
			if (pc->table != in->tables[ti].table || !v->column_on[i])
				continue;
			const struct schema_column *c = &t->columns[pc->column];
			rc = add_table_name(user, s, t);
			if (rc == 0)
				rc = strbuf_addf(user, ".%s = {%s", c->name, c->type && *c->type ? c->type : "text");
			if (rc == 0 && c->primary_key)
				rc = strbuf_adds(user, ", primary_key");
			if (rc == 0 && v->samples && in->sample_values > 0 && c->n_samples > 0) {
				rc = strbuf_adds(user, ", values (");
				for (size_t k = 0; rc == 0 && k < c->n_samples && k < (size_t)in->sample_values; k++) {
					if (k)
						rc = strbuf_adds(user, ", ");
					if (rc == 0)
						rc = add_sample(user, c->samples[k]);
				}
				if (rc == 0)
					rc = strbuf_adds(user, ")");
			}
			if (rc == 0 && pc->description) {
				rc = strbuf_adds(user, ", ");
				if (rc == 0)
					rc = add_oneline(user, pc->description);
			}
			if (rc == 0 && c->comment) {
				rc = strbuf_adds(user, ", ");
				if (rc == 0)
					rc = add_oneline(user, c->comment);
			}
			if (rc == 0)
				rc = strbuf_adds(user, "}\n");
		}
	}
	if (rc == 0)
		rc = strbuf_adds(user, "-- Foreign Keys\n");
	for (size_t i = 0; rc == 0 && i < in->n_joins; i++) {
		rc = render_join(user, s, &in->joins[i]);
		if (rc == 0)
			rc = strbuf_adds(user, "\n");
	}
	if (rc == 0)
		rc = strbuf_adds(user, "-- Evidence\n");
	if (rc == 0 && in->user_evidence)
		rc = strbuf_addf(user, "%s\n", in->user_evidence);
	for (size_t i = 0; rc == 0 && i < in->n_evidence; i++)
		rc = strbuf_addf(user, "%s\n", in->evidence[i]);
	(void)v;
	return rc;
}

/* ---- building within the budget ----------------------------------------- */

static bool lite_profile(const struct prompt_input *in)
{
	return in->profile && strcmp(in->profile, "lite-sql") == 0;
}

static int render(const struct prompt_input *in, const struct view *v, char **ret_system, char **ret_user,
		  long *ret_tokens)
{
	struct strbuf user;
	strbuf_init(&user, PROMPT_MAX_BYTES);
	int rc = lite_profile(in) ? render_lite(in, v, &user) : render_default(in, v, &user);
	if (rc < 0) {
		strbuf_release(&user);
		return rc;
	}
	char *system = NULL;
	if (!lite_profile(in)) {
		if (asprintf(&system,
			     "You write one correct read-only %s query that answers the question, "
			     "using only the tables and columns shown.%s",
			     in->schema->engine->dialect, UNANSWERABLE_NOTE) < 0)
			system = NULL;
		if (!system) {
			strbuf_release(&user);
			return -T2S_ERR_NOMEM;
		}
	}
	*ret_user = strbuf_detach(&user, NULL);
	if (!*ret_user) {
		free(system);
		return -T2S_ERR_NOMEM;
	}
	*ret_system = system;
	*ret_tokens = prompt_estimate_tokens(system) + prompt_estimate_tokens(*ret_user);
	return 0;
}

/* Turn off the lowest-scoring droppable column still shown; false when none is left. */
static bool drop_one_column(const struct prompt_input *in, struct view *v)
{
	ssize_t worst = -1;
	for (size_t i = 0; i < in->n_columns; i++) {
		const struct prompt_column *c = &in->columns[i];
		if (!v->column_on[i] || c->key || c->keep)
			continue;
		if (worst < 0 || c->score < in->columns[worst].score)
			worst = (ssize_t)i;
	}
	if (worst < 0)
		return false;
	v->column_on[worst] = false;
	return true;
}

/* One step of trimming, in the documented order; false when nothing is left to drop. */
static bool trim_step(const struct prompt_input *in, struct view *v, struct prompt_output *o)
{
	if (drop_one_column(in, v)) {
		o->columns_dropped++;
		return true;
	}
	if (v->examples > 0) {
		v->examples--;
		o->examples_dropped++;
		return true;
	}
	if (v->history_first < in->n_history) {
		v->history_first++;
		o->history_dropped++;
		return true;
	}
	if (v->samples) {
		v->samples = false;
		o->samples_dropped = true;
		return true;
	}
	return false;
}

static int check_input(const struct prompt_input *in, struct t2s_error *err)
{
	const struct schema *s = in->schema;
	if (in->profile && strcmp(in->profile, "default") != 0 && !lite_profile(in))
		return t2s_error_set(err, T2S_ERR_INVALID, "unknown prompt profile '%s'", in->profile);
	for (size_t i = 0; i < in->n_tables; i++)
		if (in->tables[i].table < 0 || (size_t)in->tables[i].table >= s->n_tables)
			return t2s_error_set(err, T2S_ERR_INVALID, "prompt table out of range");
	for (size_t i = 0; i < in->n_columns; i++) {
		const struct prompt_column *c = &in->columns[i];
		if (c->table < 0 || (size_t)c->table >= s->n_tables || c->column < 0 ||
		    (size_t)c->column >= s->tables[c->table].n_columns)
			return t2s_error_set(err, T2S_ERR_INVALID, "prompt column out of range");
	}
	for (size_t i = 0; i < in->n_joins; i++) {
		const struct prompt_join *j = &in->joins[i];
		if (j->left_table < 0 || (size_t)j->left_table >= s->n_tables || j->right_table < 0 ||
		    (size_t)j->right_table >= s->n_tables || j->left_column < 0 ||
		    (size_t)j->left_column >= s->tables[j->left_table].n_columns || j->right_column < 0 ||
		    (size_t)j->right_column >= s->tables[j->right_table].n_columns)
			return t2s_error_set(err, T2S_ERR_INVALID, "prompt join out of range");
	}
	return 0;
}

int prompt_build(const struct prompt_input *in, struct prompt_output *ret, struct t2s_error *err)
{
	int rc = check_input(in, err);
	if (rc < 0)
		return rc;
	struct prompt_output o = {0};
	struct view v = {.examples = in->n_examples, .history_first = 0, .samples = true};
	v.column_on = malloc((in->n_columns ? in->n_columns : 1) * sizeof(bool));
	if (!v.column_on)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory building the prompt");
	for (size_t i = 0; i < in->n_columns; i++)
		v.column_on[i] = true;
	o.budget_tokens = in->context_tokens > 0 ? in->context_tokens - (in->answer_tokens > 0 ? in->answer_tokens : 0) : 0;
	for (;;) {
		char *system = NULL, *user = NULL;
		long tokens = 0;
		if ((rc = render(in, &v, &system, &user, &tokens)) < 0) {
			free(v.column_on);
			return t2s_error_set(err, -rc, "out of memory building the prompt");
		}
		bool fits = o.budget_tokens <= 0 || tokens <= o.budget_tokens;
		if (fits || !trim_step(in, &v, &o)) {
			o.system = system;
			o.user = user;
			o.estimated_tokens = tokens;
			o.over_budget = !fits;
			break;
		}
		free(system);
		free(user);
	}
	for (size_t i = 0; i < in->n_columns; i++)
		o.columns_shown += v.column_on[i];
	o.examples_shown = v.examples;
	o.history_shown = in->n_history - v.history_first;
	o.column_shown = v.column_on;
	*ret = o;
	return 0;
}

void prompt_output_release(struct prompt_output *o)
{
	if (!o)
		return;
	free(o->system);
	free(o->user);
	free(o->column_shown);
	memset(o, 0, sizeof(*o));
}
