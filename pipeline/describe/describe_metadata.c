/*
 * describe_metadata.c - the fallback descriptions composed from metadata
 * alone (comments, types, keys, references, sampled values), and the text
 * helpers the prompt reuses.  See describe_metadata_text in describe.h.
 */
#include "pipeline/describe/describe_internal.h"

#include "common/utf8.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES_LISTED 6
#define META_MAX 4096u

/* ---- text helpers -------------------------------------------------------- */

/*
 * Append s[0..len) to sb with every run of white space or control characters
 * turned into one space and both ends trimmed, cut to at most max bytes on a
 * UTF-8 boundary ("..." marks a cut).  Appends nothing for blank text.
 */
void describe_add_clean(struct strbuf *sb, const char *s, size_t max)
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
char *describe_clean_dup(const char *s)
{
	struct strbuf sb;

	strbuf_init(&sb, DESCRIBE_TEXT_MAX + 8);
	describe_add_clean(&sb, s, DESCRIBE_TEXT_MAX);
	if (sb.len == 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

/* The API name of the table a foreign key points at (schema.h). */
void describe_add_ref_table(struct strbuf *sb, const struct schema_foreign_key *fk)
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
		describe_add_clean(sb, c->samples[i], SAMPLE_MAX);
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
		describe_add_clean(sb, c->samples[lo], SAMPLE_MAX);
		strbuf_adds(sb, " to ");
		describe_add_clean(sb, c->samples[hi], SAMPLE_MAX);
		strbuf_adds(sb, ")");
	} else if (samples_dates(c, &lo, &hi)) {
		strbuf_adds(sb, " (sampled dates range from ");
		describe_add_clean(sb, c->samples[lo], SAMPLE_MAX);
		strbuf_adds(sb, " to ");
		describe_add_clean(sb, c->samples[hi], SAMPLE_MAX);
		strbuf_adds(sb, ")");
	}
	strbuf_adds(sb, ".");
}

/* Key roles of column c of table ti: primary key, foreign keys, references to it. */
static void add_key_roles(struct strbuf *sb, const struct schema *s, int ti, const struct schema_column *c)
{
	const struct schema_table *t = &s->tables[ti];

	if (c->primary_key && t->n_primary_key <= 1) { /* schema_finish marks the columns the key lists */
		sentence_gap(sb);
		strbuf_addf(sb, "Primary key of %s.", t->api_name);
	} else if (c->primary_key) {
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
			describe_add_ref_table(sb, fk);
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
		describe_add_clean(&sb, c->comment, COMMENT_MAX);
		sentence_end(&sb);
	}
	add_key_roles(&sb, s, ti, c);
	sentence_gap(&sb);
	if (c->type && *c->type) {
		strbuf_adds(&sb, "Type ");
		describe_add_clean(&sb, c->type, 80);
	} else {
		strbuf_adds(&sb, "No declared type");
	}
	strbuf_adds(&sb, c->nullable ? "." : ", NOT NULL.");
	add_samples(&sb, c);
	return strbuf_detach(&sb, NULL);
}

const char *describe_kind_word(const char *kind)
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
		describe_add_ref_table(sb, fk);
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
		describe_add_clean(&sb, t->comment, COMMENT_MAX);
		sentence_end(&sb);
	}
	sentence_gap(&sb);
	strbuf_addf(&sb, "%s with ", describe_kind_word(t->kind));
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
