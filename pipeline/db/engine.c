/*
 * engine.c - what the engines' tables share (see engine.h): the reserved
 * words of SQLite and PostgreSQL in one list, and the rules for writing a
 * name bare or schema-qualified.
 *
 * The list is the union of the two lists the SQL writer (the built-in
 * generator) and the prompt kept before: the SQL writer quotes every word
 * either engine reserves, the prompt the core words it always quoted
 * ("with" only there).  Quoting a word in one and not the other changes
 * neither's output from before.
 */
#include "pipeline/db/engine.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define S (1u << DB_NAME_SQL)
#define P (1u << DB_NAME_PROMPT)

const struct db_reserved_word db_sql_reserved_words[] = {
	{"all", S | P}, {"and", S | P}, {"as", S | P}, {"asc", S | P}, {"between", S | P}, {"by", S | P},
	{"case", S | P}, {"check", S | P}, {"collate", S}, {"column", S}, {"constraint", S}, {"create", S | P},
	{"cross", S}, {"current_date", S}, {"current_time", S}, {"current_timestamp", S}, {"default", S | P},
	{"delete", S}, {"desc", S | P}, {"distinct", S | P}, {"do", S}, {"drop", S}, {"else", S | P},
	{"end", S | P}, {"except", S}, {"exists", S}, {"foreign", S}, {"from", S | P}, {"full", S},
	{"group", S | P}, {"having", S | P}, {"in", S | P}, {"index", S | P}, {"inner", S}, {"insert", S},
	{"intersect", S}, {"into", S}, {"is", S | P}, {"join", S | P}, {"key", S | P}, {"left", S},
	{"like", S | P}, {"limit", S | P}, {"natural", S}, {"not", S | P}, {"null", S | P}, {"offset", S},
	{"on", S | P}, {"or", S | P}, {"order", S | P}, {"outer", S}, {"primary", S | P}, {"references", S | P},
	{"right", S}, {"select", S | P}, {"set", S}, {"table", S | P}, {"then", S | P}, {"to", S | P},
	{"union", S | P}, {"unique", S | P}, {"update", S}, {"user", S | P}, {"using", S}, {"values", S | P},
	{"when", S | P}, {"where", S | P}, {"window", S}, {"with", P},
	{NULL, 0},
};

bool db_engine_plain_name(const struct db_engine *e, const char *name, enum db_name_use use)
{
	if (!name[0] || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
		return false;
	for (const char *p = name; *p; p++) {
		if (!isalnum((unsigned char)*p) && *p != '_')
			return false;
		if (e->folds_case && isupper((unsigned char)*p))
			return false;
	}
	for (const struct db_reserved_word *r = e->reserved; r->word; r++)
		if ((r->uses & (1u << use)) && strcasecmp(name, r->word) == 0)
			return false;
	return true;
}

bool db_engine_qualifies(const struct db_engine *e, const char *schema)
{
	return schema && e->home_schema && strcmp(schema, e->home_schema) != 0;
}
