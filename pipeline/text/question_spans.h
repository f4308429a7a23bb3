/*
 * question_spans.h - the parts of a question that may name database values:
 * quoted strings, capitalised spans, word n-grams (up to 4 words, not
 * starting or ending with a stop word), numbers and dates.  Stop words,
 * numbers and dates follow the one list and grammars of pipeline/text
 * (stopwords.h STOPWORD_VALUE_SPAN, numbers.h, dates.h DATE_QUESTION_FORMS),
 * so every number or date span is one the value index's range lookup
 * understands.  The evidence stage looks each span up in the value index
 * (strings) or by column range (numbers and dates).
 */
#ifndef T2S_EVIDENCE_SPANS_H
#define T2S_EVIDENCE_SPANS_H

#include "common/contract.h"

#include <stddef.h>

enum span_kind { SPAN_QUOTED, SPAN_CAPITALISED, SPAN_NGRAM, SPAN_NUMBER, SPAN_DATE };

struct span {
	enum span_kind kind;
	char *text; /* as written in the question (quotes removed) */
	int first_word, n_words;
};

struct span_list {
	struct span *v;
	size_t n;
};

/* Spans of question, most specific first (quoted, capitalised, dates, numbers, longer n-grams). 0 or -T2S_ERR_NOMEM. */
T2S_MUST_CHECK
int question_spans(const char *question, struct span_list *ret);
void question_spans_release(struct span_list *l);

#endif
