/*
 * builtin_like.c - the built-in generator's text patterns: "whose name
 * contains 'Swift'", "titles that start with A", "emails ending with the
 * string 'edu'", "have the substring 'ALA' in their names" read as
 * col LIKE '%Swift%' / 'A%' / '%edu' (builtin_sql.c writes ILIKE on
 * PostgreSQL: SQLite's LIKE ignores ASCII case, and so does the reading).
 * The text is the question's own spelling: quoted, or one word after
 * "the word" / "the letter" / "the string", or a single letter.
 */
#include "pipeline/builtin/builtin_internal.h"
#include "pipeline/builtin/builtin_reader.h"

#include <ctype.h>
#include <string.h>

static const struct {
	const char *phrase;
	bool lead, trail; /* '%' before / after the text */
	bool kind_needed; /* only with "the word" / "the substring" ... after it ("has the substring") */
} CUES[] = {
	{"contains", true, true, false},       {"contain", true, true, false},      {"containing", true, true, false},
	{"include", true, true, false},        {"includes", true, true, false},     {"including", true, true, false},
	{"has", true, true, true},             {"have", true, true, true},          {"with", true, true, true},
	{"starts with", false, true, false},   {"start with", false, true, false},  {"starting with", false, true, false},
	{"begins with", false, true, false},   {"begin with", false, true, false},  {"beginning with", false, true, false},
	{"ends with", true, false, false},     {"end with", true, false, false},    {"ending with", true, false, false},
};
/* What the text is called between the cue and it ("contains the word 'Bank'"). */
static const char *const KIND[] = {"word", "letter", "string", "substring", "phrase", "characters", "character",
				   "prefix", "suffix", "text", "term", NULL};
/* Between a column's name and the cue ("whose name contains", "title that starts with"). */
static const char *const BETWEEN[] = {"that", "which", "is", "are", NULL};

static bool quote_at(const char *q, size_t at, size_t *len)
{
	static const char *const QUOTES[] = {"\"", "'", "\xe2\x80\x9c", "\xe2\x80\x9d", "\xe2\x80\x98", "\xe2\x80\x99",
					     NULL};
	for (const char *const *k = QUOTES; *k; k++)
		if (strncmp(q + at, *k, strlen(*k)) == 0) {
			*len = strlen(*k);
			return true;
		}
	return false;
}

/*
 * The text at word p: quoted (up to the closing quote), or one word when kind is set or it is a single
 * letter.  Copies it into out (as the question spells it) and returns how many words it covers; 0 when
 * none or it holds a LIKE wildcard.
 */
static size_t pattern_text(const struct reader *rd, size_t p, bool kind, char *out, size_t cap)
{
	const char *q = rd->in->question;
	const struct question_words *ws = &rd->r.ws;
	size_t from = ws->at[p], to = ws->end[p], k = p, ql = 0;
	if (q[from] == '\'') { /* 'Ha', 'Trading Policy': the quotes are inside the words */
		from++;
		while (k < ws->n && !(q[ws->end[k] - 1] == '\'' && ws->end[k] - 1 > ws->at[p]) && k - p < 6)
			k++;
		if (k >= ws->n || k - p >= 6)
			return 0;
		to = ws->end[k] - 1;
	} else if (from > 0 && (quote_at(q, from - 1, &ql) || (from >= 3 && quote_at(q, from - 3, &ql) && ql == 3))) {
		while (k < ws->n && !quote_at(q, ws->end[k], &ql) && k - p < 6)
			k++;
		if (k >= ws->n || k - p >= 6)
			return 0;
		to = ws->end[k];
	} else if (!kind && !(to - from == 1 && isalpha((unsigned char)q[from]))) {
		return 0;
	}
	if (to <= from || to - from >= cap)
		return 0;
	memcpy(out, q + from, to - from);
	out[to - from] = '\0';
	if (strpbrk(out, "%_\\"))
		return 0;
	return k - p + 1;
}

/* The unused text column named at word i, or NULL. */
static struct bi_mention *text_column_at(struct reader *rd, size_t i)
{
	struct bi_mention *m = i < rd->r.ws.n && rd->r.mention_at[i] >= 0 ? &rd->r.mentions[rd->r.mention_at[i]] : NULL;
	if (!m || m->used || m->col.table < 0 || bi_is_number_col(rd, m->col))
		return NULL;
	return m;
}

enum bi_verdict bi_read_like(struct reader *rd)
{
	for (size_t i = 0; i < rd->r.ws.n; i++)
		for (size_t c = 0; c < sizeof(CUES) / sizeof(CUES[0]); c++) {
			if (!bi_at(rd, i, CUES[c].phrase))
				continue;
			size_t n = question_phrase_words(CUES[c].phrase), p = i + n;
			bool kind = false;
			if (p < rd->r.ws.n && bi_in_list(rd->r.ws.w[p], (const char *const[]){"the", "a", NULL}))
				p++;
			size_t kind_at = p;
			if (p < rd->r.ws.n && bi_in_list(rd->r.ws.w[p], KIND)) {
				kind = true;
				p++;
			}
			if (p >= rd->r.ws.n || (CUES[c].kind_needed && !kind) || rd->read[p])
				continue;
			struct bi_filter f = {.op = "LIKE", .start = (int)p};
			size_t k = 0;
			if (CUES[c].lead)
				f.pattern[k++] = '%';
			size_t words = pattern_text(rd, p, kind, f.pattern + k, sizeof(f.pattern) - k - 1);
			if (!words)
				continue;
			k = strlen(f.pattern);
			if (CUES[c].trail)
				f.pattern[k++] = '%';
			f.pattern[k] = '\0';
			f.end = (int)(p + words);
			/* the column: named before the cue, or "in their names" after the text */
			size_t b = i;
			while (b > 0 && !rd->read[b - 1] && bi_in_list(rd->r.ws.w[b - 1], BETWEEN))
				b--;
			struct bi_mention *m = NULL;
			if (b > 0 && rd->r.mention_at[b - 1] >= 0) {
				struct bi_mention *before = &rd->r.mentions[rd->r.mention_at[b - 1]];
				m = text_column_at(rd, (size_t)before->start);
			}
			size_t after = p + words, tail = 0;
			/* "artists that have 'a' in their names": the column after; "publishers have 'Murray' in their
			   names" (a column before): whose names? */
			if (after + 1 < rd->r.ws.n && strcmp(rd->r.ws.w[after], "in") == 0) {
				size_t j = after + 1;
				if (j < rd->r.ws.n && bi_in_list(rd->r.ws.w[j], (const char *const[]){"their", "its", "the", NULL}))
					j++;
				struct bi_mention *in = text_column_at(rd, j);
				if (in && m)
					return bi_refuse(rd, "unread_like", "'%s': two columns may hold the text", CUES[c].phrase);
				if (in) {
					m = in;
					tail = j - after;
				}
			}
			/* "publishers whose name contains": the name of a column's thing, not of the table's rows */
			if (m && b >= 2 && m->start == (int)b - 1 && strcmp(rd->r.ws.w[m->start - 1], "whose") == 0 &&
			    rd->r.mention_at[m->start - 2] >= 0 && rd->r.mentions[rd->r.mention_at[m->start - 2]].col.table >= 0)
				m = NULL;
			if (!m)
				return bi_refuse(rd, "unread_like", "'%s': the built-in does not see which column holds the text",
					      CUES[c].phrase);
			/* "the word": a kind of text, though WordNet gives it as a synonym of a column's name */
			if (kind && rd->r.mention_at[kind_at] >= 0 && rd->r.mentions[rd->r.mention_at[kind_at]].synonym)
				rd->r.mentions[rd->r.mention_at[kind_at]].used = true;
			f.col = m->col;
			m->used = true;
			enum bi_verdict rc = bi_add_filter(rd, f);
			if (rc)
				return rc;
			bi_mark(rd, b, p + words - b);
			bi_mark(rd, after, tail);
			break;
		}
	return 0;
}
