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
/* After the tables are chosen: "director names", "the names of (the) studios": a text column that names
   things, beside "names" read as the table's naming column, is the names shown (the other is dropped). */
int bi_read_column_names(struct reader *rd);

/* The reading's helpers (builtin_read.c), shared with the rules of builtin_rows.c. */
bool bi_in_list(const char *w, const char *const *list);
/* phrase at word i, none of its words read yet or a name */
bool bi_at(const struct reader *rd, size_t i, const char *phrase);
/* words i .. i+n-1 are read */
void bi_mark(struct reader *rd, size_t i, size_t n);
/* word i carries no meaning of its own ("the", "of", "show") */
bool bi_filler(const struct reader *rd, size_t i);
/* the next word at or after i that is not unread filler */
size_t bi_next_word(const struct reader *rd, size_t i);
/* the unused mention starting at word i whose column is resolved, or NULL */
struct bi_mention *bi_column_at(struct reader *rd, size_t i);
bool bi_is_number_col(const struct reader *rd, struct bi_col c);

/*
 * m names the rows a count of groups counts: the main table's (no join), or the joined table's when
 * it refers to the main table by the join's key (then q->per_row: a count per row of the main table).
 */
bool bi_counted_rows(struct reader *rd, const struct bi_mention *m);
/* Another table keeps a count of table t's rows (a number column "number_of_hosts", "no_of_customers"), or t has a
   number column named as it is (faculty.faculty). */
bool bi_stored_count(const struct reader *rd, int t);
/* A verb form that is not also a noun ("made", "registered"; not "plays", "ranks"), nor one of a
   condition of its own ("contain", "exceed"). */
bool bi_relation_verb(const struct wordnet *wn, const char *w);
/* An adjective naming one end of a measure ("old", "expensive", "cheap"): the superlative adjectives'. */
bool bi_measure_adjective(const char *w);
/* Of a mention naming another table than the main one: the one candidate column of the main table
   (its key to that table, or a column spelling its name); table -1 when none or two. */
struct bi_col bi_main_column_named(const struct reader *rd, const struct bi_mention *m);
/*
 * "How many exhibitions has each artist had?": the counted (main) table refers to the table named after
 * "each", joined already: the count per row of that table, shown by its naming column.  The reading
 * turns round (that table main, the counted one joined); true when so read.
 */
bool bi_per_row_of_each(struct reader *rd, size_t j);
/* Unread verbs ("made", "teaches") between the two tables of a join: read as the key that joins them. */
int bi_read_relation_verbs(struct reader *rd);
/*
 * After the select list: a verb no other rule read ("the ships involved", "settlements made", "clients who
 * use") states the relation the tables already hold; read so, with the prepositions after it, unless it
 * shares a stem with a column of the reading's tables (it may name that column: read only when that
 * column is named next or already, "the describing content", "the investor that has invested") or spells
 * one with its particle ("logged in"), or follows an article or a number ("two affected regions").  Not
 * the question's first word.
 */
int bi_read_idle_verbs(struct reader *rd);
/* Last: "available" where no column says it ("available hotels"), and a preposition between the main
   table's name and the joined table's ("albums by the artist AC/DC"), read. */
int bi_read_idle_words(struct reader *rd);
/*
 * The words before the value at word `start` of column col: a verb sharing the column name's stem
 * ("located" for location, "produced" for product), and prepositions between, are read; returns the
 * first word of those (start when none).
 */
size_t bi_value_verb(struct reader *rd, size_t start, struct bi_col col);
/* w a form of a word of the column's name: a common beginning of 5 letters or more ("locat"), or w
   less "ed" / "ing" beginning the word ("opened": open_year). */
bool bi_shares_stem(const char *w, const char *name);
/* "races held after 2017", "campuses opened in 1958": the main table's one year column; 0, or 1 refused. */
int bi_read_year_verbs(struct reader *rd);
/* "students over 20 years old": the unit after a number compared with an age column, read. */
int bi_read_age_units(struct reader *rd);
/* "not from Spain", "not in 'Tokyo'": the index of the "not" before the prepositions before word b (the
   value, or the verb bi_value_verb read before it), or b when no "not" stands there. */
size_t bi_value_negation(const struct reader *rd, size_t b);
/*
 * "that do not have any <table>", "did not receive any <table>", "without <table>": read before the
 * tables are chosen (the negated table's name is not a name of the main reading); then placed: the
 * negated table refers to the main table by one foreign key.  0, or 1 refused.
 */
int bi_read_negated_table(struct reader *rd);
int bi_place_negated_table(struct reader *rd);
/* "the oldest", "the most recent": an ordering by the column the adjective measures (builtin_adjectives.c). */
int bi_read_superlative_adjectives(struct reader *rd);
/*
 * "France or Spain": value v joins the filter on its column that already holds a value when "or" alone
 * stands between them (c = 'a' OR c = 'b').  0 when joined, 1 when not.
 */
int bi_or_value(struct reader *rd, const struct bi_value *v, struct bi_col col);

/* The condition rules (builtin_conditions.c), run in builtin_read's order; 0, or 1 refused. */
int bi_read_having(struct reader *rd);
int bi_read_comparisons(struct reader *rd);
int bi_read_comparisons_before(struct reader *rd);
/* "entrepreneurs who requested more than 140000": a word no name reads sharing the stem of the main table's
   one number column so, a comparison and a number (no name after it). */
int bi_read_verb_comparisons(struct reader *rd);
int bi_read_values(struct reader *rd);
int bi_read_sex_words(struct reader *rd);
/* Add filter f to the reading; 1 refused (a second condition on its column, too many). */
int bi_add_filter(struct reader *rd, struct bi_filter f);
/* "the average" / "average" at word i (a comparison's other side): its word count, 0 when none. */
size_t bi_average_at(const struct reader *rd, size_t i);
/* "older than 25", "younger than average": the column WordNet gives as the adjective's attribute
   (builtin_adjectives.c); 0, or 1 refused. */
int bi_read_comparative_adjectives(struct reader *rd);
/* "whose name contains 'Swift'", "starting with A": col LIKE pattern (builtin_like.c); 0, or 1 refused. */
int bi_read_like(struct reader *rd);
/* w is a word of a comparison phrase ("than", "least"); w may stand between a column and its value ("is"). */
bool bi_comparison_word(const char *w);
bool bi_link_word(const char *w);
/* The shape of the reading and its confidence (builtin_shape.c); 0, or 1 refused. */
int bi_decide_shape(struct reader *rd);

/* Is w a whole word of one of the phrases of the NULL-ended phrase lists (each NULL-ended)? */
bool bi_word_of_phrases(const char *w, const char *const *const *lists);

/* builtin_order.c */

/* The words of an ordering or direction phrase at word i ("in descending order", "sorted by"), 0 when
   none starts there. */
size_t bi_order_phrase_at(const struct question_words *ws, size_t i);
/* Is w a word of an ordering or direction phrase (not a schema name's synonym)? */
bool bi_order_cue_word(const char *w);
/* "ordered by X", "in descending order of X", "ordered descending by X": the ordering; 0, or 1 refused. */
int bi_read_order(struct reader *rd);
/* A direction naming no column orders by the one column shown (read after the select list). */
int bi_read_bare_direction(struct reader *rd);
/* An ordering verb away from the ordering it asks for ("Sort the names ... in ascending order of X"). */
int bi_read_sort_verb(struct reader *rd);

#endif
