/*
 * reply.h - the SQL in a model's answer.
 *
 * Order of preference: the first ```sql fenced block (tag case-insensitive);
 * else the first fenced block of any tag; else a bare statement: the text
 * from the first line that starts with SELECT or WITH (case-insensitive, after
 * optional "SQL:" / "SQLQuery:" labels) to the end of the answer or to the
 * first blank line followed by prose.  Prose around the SQL is ignored.
 * Trailing semicolons and whitespace are removed; several statements are
 * kept as they are, for validation to refuse (they are never executed).
 */
#ifndef T2S_GENERATE_REPLY_H
#define T2S_GENERATE_REPLY_H

#include <stddef.h>

/*
 * The sentinel of an answer saying the database cannot answer the question
 * (the default profile's system message offers it, prompt.c): the answer,
 * trimmed, begins with REPLY_UNANSWERABLE (that case) and holds no fence.
 */
#define REPLY_UNANSWERABLE "UNANSWERABLE:"

/*
 * Extract the SQL of answer.  Returns a malloc'd string the caller frees, or
 * NULL when the answer holds no SQL (or out of memory: *ret_nomem is then
 * set when ret_nomem is not NULL).
 */
char *reply_extract_sql(const char *answer, int *ret_nomem);

/*
 * When answer is the sentinel: 1, with its reason (whitespace folded, at
 * most size - 1 bytes, "" when none) in reason unless reason is NULL.  Else 0.
 */
int reply_unanswerable(const char *answer, char *reason, size_t size);

#endif
