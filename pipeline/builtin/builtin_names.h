/*
 * builtin_names.h - the question's words as the built-in generator reads
 * them, and where they name the schema (tables, columns) or a stored value.
 * Internal to pipeline/builtin/.
 */
#ifndef T2S_BUILTIN_NAMES_H
#define T2S_BUILTIN_NAMES_H

#include "pipeline/builtin/builtin_internal.h"

#define BI_NAME_WORDS 8
#define BI_MAX_MENTIONS 48
#define BI_MAX_VALUES 8

/* A span naming a table and/or columns (every column of that name, in any table). */
struct bi_mention {
	int start, len;
	int table;             /* a table of that name, or -1 */
	bool table_ambiguous;  /* several tables share the name */
	struct bi_col cands[BI_MAX_CANDIDATES];
	int n_cands;
	bool too_many;         /* more columns share the name than BI_MAX_CANDIDATES */
	struct bi_col col;     /* resolved column (table -1: the mention names the table) */
	bool used;
	bool dropped;          /* its words are a cue phrase's ("in descending order"): not a name */
	bool synonym;          /* read through a WordNet synonym of the word */
	bool named_only;       /* read through linking's related words: only columns of tables named otherwise */
};

/* A span holding a stored value. */
struct bi_value {
	int start, len;
	const struct evidence_value *v;
	bool used;
	bool skip;             /* another value on the same words is the one read */
};

struct bi_words {
	const bool *tables_read; /* schema.n_tables flags: the tables whose names are read; NULL: every table */
	struct question_words ws;
	char stem[QUESTION_MAX_WORDS][QUESTION_MAX_WORD];
	bool is_number[QUESTION_MAX_WORDS];
	double number[QUESTION_MAX_WORDS];
	int mention_at[QUESTION_MAX_WORDS]; /* index into mentions, or -1 */
	struct bi_mention mentions[BI_MAX_MENTIONS];
	size_t n_mentions;
	struct bi_value values[BI_MAX_VALUES];
	size_t n_values;
};

/* Is table t among those whose names are read? */
static inline bool bi_table_read(const struct bi_words *r, size_t t)
{
	return !r->tables_read || r->tables_read[t];
}

/* The singular, possessive-free form of a lower-case word (out: QUESTION_MAX_WORD bytes). */
void bi_stem(const char *w, char *out);
/* A schema name's words, lower-cased and stemmed; their count, or -1 when more than max. */
int bi_name_words(const char *name, char out[][QUESTION_MAX_WORD], int max);
/* Split question into r's words, stems and numbers. */
void bi_split(const char *question, struct bi_words *r);
/*
 * "full name", "forename", "family name", "surname" said as the first and last name the schema's
 * columns spell ("first and last name", "first name", "last name"), unless a column is so named.
 */
void bi_person_names(const struct schema *s, struct bi_words *r);
/* Does one of the name's words (lower-cased, stemmed: bi_name_words) equal one of words (NULL-ended)? */
bool bi_name_has_word(const char *name, const char *const *words);
/* The one column naming a table's rows: ending in "name" (not a key), else in "title"; -1 when none
   or two. */
int bi_naming_column(const struct schema_table *tb);
/* After the synonyms: "faculty members" ("members" joins the table's name before it) and "telephone
   number" (the compound's tail joins its head's mention, a synonym of phone). */
void bi_extend_compounds(struct bi_words *r);
/* Mention k is no name after all: dropped, its words unmentioned. */
void bi_drop_mention(struct bi_words *r, int k);
/* Mention k covers the word before it too (unmentioned; "alcoholic drink", "gymnastics athletes"). */
void bi_extend_mention_back(struct bi_words *r, int k);
/* Longest spans naming a table or columns; -1 when there are too many. */
int bi_find_mentions(const struct schema *s, struct bi_words *r) __attribute__((warn_unused_result));
/* The longest span from `at` naming a table or columns of the tables read, as bi_find_mentions finds it
   (len 0: none); r is not changed. */
struct bi_mention bi_mention_from(const struct schema *s, const struct bi_words *r, size_t at);
/* Add column (table, column) to m's candidates; -1 when they are full. */
int bi_add_candidate(struct bi_mention *m, int table, int column);
/*
 * Every column of the tables read whose name, whole or without the table's name in front, is `want`
 * words long: added to m when match(those words, ctx) says so.
 */
void bi_add_columns_named(const struct schema *s, const struct bi_words *r, int want,
			  bool (*match)(char words[][QUESTION_MAX_WORD], const void *ctx), const void *ctx,
			  struct bi_mention *m);
/* builtin_synonyms.c */

/*
 * The word at `at` (no mention, not a number) read through WordNet or linking's related words, the
 * first reading that works: its British spelling said the American way ("programmes": program); the
 * one table name, or else the column names, that are a WordNet synonym or base form of it whole (or a
 * compound synonym's head: "mountaineer", mountain climber; "curriculum", course of study); a noun's
 * synonym as if the question said it instead ("telephone": customer_phone); then the schema words rw
 * stands in for it (the one table-name word, the column-name words that are not also a table's): said
 * instead over a name of several words, whole, or said instead alone ("information for all projects":
 * project_details).  A column read through rw is kept only by bi_keep_named_tables.  Adds the mention
 * and returns 1, 0 when none or several are, -1 when the mentions are full.
 */
int bi_synonym_mention(const struct schema *s, const struct wordnet *wn, const struct related_words *rw,
		       struct bi_words *r, size_t at);
/*
 * Words at and at + 1 read as a two-word column name (without the table's name in front) when each says
 * the schema's word or is a WordNet synonym or base form of it ("tour dates" for visit_date; "begin day"
 * for start_date), or a word rw stands in for it ("issue day" for issue_date), and not both say it; a
 * one-word column mention on the second word gives way.  Adds the mention and
 * returns 1; 0 when none; -1 when the mentions are full.
 */
int bi_synonym_pair_mention(const struct schema *s, const struct wordnet *wn, const struct related_words *rw,
			    struct bi_words *r, size_t at);
/*
 * Words at and at + 1 read as one WordNet collocation ("alcoholic drink", "starting point"; the second
 * word may be plural): a synonym of it said instead, a synonym of several words that is a name whole
 * ("last names": family_name), or the schema word rw stands in for it, read on the second word (whose
 * one-word column mention gives way) and covering both.  1, 0 or -1 as above.
 */
int bi_synonym_compound_mention(const struct schema *s, const struct wordnet *wn, const struct related_words *rw,
				struct bi_words *r, size_t at);
/*
 * After the synonyms: a column mention read through linking's related words keeps only the columns of
 * tables the question names ("ids and information for all projects": the details of projects), when it
 * names a table; with none left it is dropped and its words are unread.
 */
void bi_keep_named_tables(struct bi_words *r);
/* w a form of a word of the column's name: a common beginning of 5 letters or more ("locat"), or w
   less "ed" / "ing" beginning the word ("opened": open_year). */
bool bi_shares_stem(const char *w, const char *name);
/* Spans holding a value of ev (not numbers, not schema names, not a verb written in lower case where the
   value is stored capitalised: "belong", 'Belong'); wn may be NULL.  0 or -T2S_ERR_NOMEM. */
int bi_find_values(const struct evidence_result *ev, const struct wordnet *wn, struct bi_words *r)
	__attribute__((warn_unused_result));

#endif
