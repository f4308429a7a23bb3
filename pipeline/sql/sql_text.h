/*
 * sql_text.h - lexical helpers on SQL text that need no parser: skipping
 * whitespace and comments, reading the leading keyword.
 */
#ifndef T2S_SQL_TEXT_H
#define T2S_SQL_TEXT_H

#include <stddef.h>

/* First character after whitespace, -- line comments and / * block * / comments. */
const char *sql_skip_space_and_comments(const char *p);

/* Copy the leading keyword (letters only, upper-cased) into buf; "" when none. */
void sql_leading_keyword(const char *sql, char *buf, size_t size);

#endif
