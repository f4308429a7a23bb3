/*
 * question_spans.c - see question_spans.h.
 */
#include "pipeline/text/question_spans.h"

#include "common/error.h"
#include "pipeline/text/dates.h"
#include "pipeline/text/numbers.h"
#include "pipeline/text/stopwords.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_WORDS 200
#define MAX_SPANS 400
#define MAX_NGRAM 4

struct word {
	const char *start;
	size_t len;
};

static bool is_stop(const struct word *w)
{
	return stopword_is(w->start, w->len, STOPWORD_VALUE_SPAN);
}

static bool is_number(const struct word *w)
{
	double ignored;
	return number_parse(w->start, w->len, &ignored);
}

/*
 * Words a dated span covers from words[i]: 3 ("May 1, 2009", "1 May 2009"),
 * 2 ("May 2009") or 1 ("2009-05-01", "25/12/2009"), the longest that the
 * date grammar accepts as written in a question; 0 when none does.
 */
static int date_words(const struct word *words, size_t n, size_t i)
{
	for (size_t k = 3; k >= 1; k--) {
		if (i + k > n)
			continue;
		const struct word *last = &words[i + k - 1];
		struct date_range ignored;
		if (date_parse(words[i].start, (size_t)(last->start + last->len - words[i].start), DATE_QUESTION_FORMS,
			       &ignored))
			return (int)k;
	}
	return 0;
}

static int push(struct span_list *l, enum span_kind kind, const char *text, size_t len, int first, int n)
{
	if (l->n >= MAX_SPANS || len == 0)
		return 0;
	for (size_t i = 0; i < l->n; i++) /* one span per distinct text */
		if (strlen(l->v[i].text) == len && strncmp(l->v[i].text, text, len) == 0)
			return 0;
	struct span *v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return -T2S_ERR_NOMEM;
	l->v = v;
	char *copy = strndup(text, len);
	if (!copy)
		return -T2S_ERR_NOMEM;
	v[l->n++] = (struct span){kind, copy, first, n};
	return 0;
}

/* Split into words: letters, digits and inner ' - / . characters. */
static size_t split_words(const char *q, struct word *words)
{
	size_t n = 0;
	const char *p = q;
	while (*p && n < MAX_WORDS) {
		while (*p && !isalnum((unsigned char)*p) && (unsigned char)*p < 0x80)
			p++;
		if (!*p)
			break;
		const char *start = p;
		while (*p && (isalnum((unsigned char)*p) || (unsigned char)*p >= 0x80 ||
			      ((*p == '\'' || *p == '-' || *p == '/' || *p == '.') && isalnum((unsigned char)p[1]))))
			p++;
		words[n++] = (struct word){start, (size_t)(p - start)};
	}
	return n;
}

static int quoted_spans(const char *q, struct span_list *l)
{
	int rc = 0;
	for (const char *p = q; *p && rc == 0; p++) {
		char open = *p;
		if (open != '"' && open != '\'')
			continue;
		/* An apostrophe inside a word (O'Brien, don't) does not open a quote. */
		if (open == '\'' && p > q && isalnum((unsigned char)p[-1]))
			continue;
		const char *close = strchr(p + 1, open);
		if (!close)
			break;
		size_t len = (size_t)(close - p - 1);
		if (len > 0 && len <= 200)
			rc = push(l, SPAN_QUOTED, p + 1, len, -1, 0);
		p = close;
	}
	return rc;
}

int question_spans(const char *question, struct span_list *ret)
{
	struct span_list l = {0};
	struct word words[MAX_WORDS];
	size_t n = split_words(question, words);
	int rc = quoted_spans(question, &l);
	/* Capitalised runs (skipping stop words like "What" at the start). */
	for (size_t i = 0; rc == 0 && i < n;) {
		size_t j = i;
		while (j < n && isupper((unsigned char)words[j].start[0]) && !(j == i && is_stop(&words[j])))
			j++;
		if (j > i) {
			rc = push(&l, SPAN_CAPITALISED, words[i].start, (size_t)(words[j - 1].start + words[j - 1].len - words[i].start),
				  (int)i, (int)(j - i));
			i = j;
		} else {
			i++;
		}
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int k = date_words(words, n, i);
		if (k > 0) {
			const struct word *last = &words[i + (size_t)k - 1];
			rc = push(&l, SPAN_DATE, words[i].start, (size_t)(last->start + last->len - words[i].start), (int)i, k);
		} else if (is_number(&words[i]))
			rc = push(&l, SPAN_NUMBER, words[i].start, words[i].len, (int)i, 1);
	}
	/* Word n-grams, longest first, not starting or ending with a stop word. */
	for (int len = MAX_NGRAM; rc == 0 && len >= 1; len--)
		for (size_t i = 0; rc == 0 && i + (size_t)len <= n; i++) {
			const struct word *a = &words[i], *b = &words[i + (size_t)len - 1];
			if (is_stop(a) || is_stop(b) || is_number(a) || (len == 1 && a->len < 2))
				continue;
			rc = push(&l, SPAN_NGRAM, a->start, (size_t)(b->start + b->len - a->start), (int)i, len);
		}
	if (rc < 0) {
		question_spans_release(&l);
		return rc;
	}
	*ret = l;
	return 0;
}

void question_spans_release(struct span_list *l)
{
	for (size_t i = 0; l && i < l->n; i++)
		free(l->v[i].text);
	if (l) {
		free(l->v);
		l->v = NULL;
		l->n = 0;
	}
}
