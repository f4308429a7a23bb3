/*
 * builtin_reader.h - the state of one reading (builtin_read.c), shared with
 * the choice of its tables (builtin_tables.c).  Internal to pipeline/builtin/.
 */
#ifndef T2S_BUILTIN_READER_H
#define T2S_BUILTIN_READER_H

#include "pipeline/builtin/builtin_names.h"

struct reader {
	const struct builtin_input *in;
	const struct schema *s;
	struct bi_words r;
	bool read[QUESTION_MAX_WORDS]; /* words a rule has read */
	struct bi_query *q;
	struct bi_refusal *why;
};

/* Fill the refusal (code static, reason formatted) and return 1. */
int bi_refuse(struct reader *rd, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Choose the main table (and at most one table a foreign key joins to it) that
 * holds every name and value of the question, and resolve each name to its
 * column there; 0, or 1 refused.
 */
int bi_choose_tables(struct reader *rd);

#endif
