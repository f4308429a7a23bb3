/*
 * builtin_reader.h - one reading of a question by the built-in generator: its
 * state (struct reader), the rules and phases that read it, and the reader's
 * primitives every rule calls (builtin_read.c, the folder's bottom).
 * Internal to pipeline/builtin/.
 *
 * A reading runs in named phases (builtin_phases.c names them, in order, and
 * checks what holds between them): lexing (builtin_lex.c: words, names,
 * values, synonyms; after it the mention list is frozen), tables
 * (builtin_tables.c), cues (builtin_cues.c), conditions
 * (builtin_conditions.c), relations (builtin_relations.c), the select list
 * (builtin_select.c), the last words (builtin_relations.c) and the shape
 * (builtin_shape.c).  Each phase is an ordered table of rules; a rule reads
 * words by claiming them (bi_mark: the rule's name is kept per word, the
 * claims the built-in's result reports) and fills the query, or refuses.
 *
 * Calls go one way: the phase files call the primitives (builtin_read.c) and
 * the helpers of the files below them (builtin_rows.c, builtin_names.c, ...);
 * no primitive calls a rule, and only builtin_phases.c names the phases.
 */
#ifndef T2S_BUILTIN_READER_H
#define T2S_BUILTIN_READER_H

#include "pipeline/builtin/builtin_names.h"

#include <assert.h>

/*
 * Invariants between phases, in the style of SQLite's ALWAYS / NEVER: x is expected to hold (or not);
 * checked by assert() in builds with assertions, and still evaluated (and so still guarding the code
 * after it) in builds without them.
 */
#ifdef NDEBUG
#define BI_ALWAYS(x) (x)
#define BI_NEVER(x) (x)
#else
#define BI_ALWAYS(x) ((x) ? 1 : (assert(0 && #x), 0))
#define BI_NEVER(x) ((x) ? (assert(0 && #x), 1) : 0)
#endif

struct reader {
	const struct builtin_input *in;
	const struct schema *s;
	struct bi_words r;
	bool read[QUESTION_MAX_WORDS];          /* words a rule has read */
	const char *claim[QUESTION_MAX_WORDS];  /* the rule that read each word first (static), or NULL */
	const char *reserved[QUESTION_MAX_WORDS]; /* the later rule a word is kept for (static), or NULL */
	const char *rule;                       /* the rule running now (static): bi_mark and bi_refuse name it */
	struct bi_query *q;
	struct bi_refusal *why;
};

/* What a rule returns: the reading goes on, or the question is refused (rd->why filled by bi_refuse). */
enum bi_verdict {
	BI_GOES_ON = 0,
	BI_REFUSED = 1,
	BI_OUT_OF_MEMORY = -1, /* the lexer's: the reading stops with -T2S_ERR_NOMEM */
};

/* A rule of a phase: its name (the claims' and refusals' name for it) and its reading. */
struct bi_rule {
	const char *name;
	enum bi_verdict (*read)(struct reader *rd);
};

/* A phase: its name and its rules, run in this order. */
struct bi_phase {
	const char *name;
	const struct bi_rule *rules;
	size_t n_rules;
};

/* The phases' rule tables (each in its own file; builtin_phases.c runs them in order). */
extern const struct bi_phase bi_lex_phase;       /* builtin_lex.c */
extern const struct bi_phase bi_table_phase;     /* builtin_tables.c */
extern const struct bi_phase bi_cue_phase;       /* builtin_cues.c */
extern const struct bi_phase bi_condition_phase; /* builtin_conditions.c */
extern const struct bi_phase bi_relation_phase;  /* builtin_relations.c */
extern const struct bi_phase bi_select_phase;    /* builtin_select.c */
extern const struct bi_phase bi_last_phase;      /* builtin_relations.c: words no other rule read */
extern const struct bi_phase bi_shape_phase;     /* builtin_shape.c */

/* Every phase, in the order the reading runs them (builtin_phases.c); *n their count.  For the corpus test. */
const struct bi_phase *const *bi_phases(size_t *n);

/* ---- the reader's primitives (builtin_read.c) ------------------------------------------ */

/* Fill the refusal (code static, reason formatted, the running rule's name) and return BI_REFUSED. */
enum bi_verdict bi_refuse(struct reader *rd, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), warn_unused_result));
bool bi_in_list(const char *w, const char *const *list);
/* Is w a whole word of one of the phrases of the NULL-ended phrase lists (each NULL-ended)? */
bool bi_word_of_phrases(const char *w, const char *const *const *lists);
/* phrase at word i, none of its words read yet or a name */
bool bi_at(const struct reader *rd, size_t i, const char *phrase);
/* words i .. i+n-1 are read, claimed by the running rule (a word's first claim stays) */
void bi_mark(struct reader *rd, size_t i, size_t n);
/* word i carries no meaning of its own ("the", "of", "show") */
bool bi_filler(const struct reader *rd, size_t i);
bool bi_filler_word(const char *w);
/* the next word at or after i that is not unread filler */
size_t bi_next_word(const struct reader *rd, size_t i);
/* the unused mention starting at word i whose column is resolved, or NULL */
struct bi_mention *bi_column_at(struct reader *rd, size_t i);
bool bi_is_number_col(const struct reader *rd, struct bi_col c);
/* Add filter f to the reading; BI_REFUSED when a second condition on its column, or too many. */
enum bi_verdict bi_add_filter(struct reader *rd, struct bi_filter f) __attribute__((warn_unused_result));
/* "the average" / "average" at word i (a comparison's other side): its word count, 0 when none. */
size_t bi_average_at(const struct reader *rd, size_t i);

/* ---- helpers of the phase files, each below the files that call it ---------------------- */

/* builtin_rows.c: rows counted per row of another table. */

/*
 * m names the rows a count of groups counts: the main table's (no join), or the joined table's when
 * it refers to the main table by the join's key (then q->per_row: a count per row of the main table).
 */
bool bi_counted_rows(struct reader *rd, const struct bi_mention *m);
/* Another table keeps a count of table t's rows (a number column "number_of_hosts", "no_of_customers"), or t has a
   number column named as it is (faculty.faculty). */
bool bi_stored_count(const struct reader *rd, int t);
/* Of a mention naming another table than the main one: the one candidate column of the main table
   (its key to that table, or a column spelling its name); table -1 when none or two. */
struct bi_col bi_main_column_named(const struct reader *rd, const struct bi_mention *m);
/*
 * "How many exhibitions has each artist had?": the counted (main) table refers to the table named after
 * "each", joined already: the count per row of that table, shown by its naming column.  The reading
 * turns round (that table main, the counted one joined); true when so read.
 */
bool bi_per_row_of_each(struct reader *rd, size_t j);

/* builtin_verbs.c: verbs. */

/* A verb form that is not also a noun ("made", "registered"; not "plays", "ranks"), nor one of a
   condition of its own ("contain", "exceed"). */
bool bi_relation_verb(const struct wordnet *wn, const char *w);
/* Words that may stand between a value and a verb or "not" before it ("in", "from"). */
bool bi_value_preposition(const char *w);
/* One of the verbs that state a condition of their own ("contain", "sort"), not a relation. */
bool bi_not_relation(const char *base);
/* Words that may stand between a verb and what it relates to ("by", "to", "the"). */
bool bi_verb_preposition(const char *w);
/* The table of the name or value starting at word j, or -1. */
int bi_table_at(const struct reader *rd, size_t j);
/*
 * The words before the value at word `start` of column col: a verb sharing the column name's stem
 * ("located" for location, "produced" for product), and prepositions between, are read; returns the
 * first word of those (start when none).
 */
size_t bi_value_verb(struct reader *rd, size_t start, struct bi_col col);

/* builtin_negation.c: negation. */

/* "not from Spain", "not in 'Tokyo'": the index of the "not" before the prepositions before word b (the
   value, or the verb bi_value_verb read before it), or b when no "not" stands there. */
size_t bi_value_negation(const struct reader *rd, size_t b);
/*
 * "that do not have any <table>", "did not receive any <table>", "without <table>": read while lexing
 * (the negated table's name is not a name of the main reading: its mention is dropped); then placed
 * with the tables: the negated table refers to the main table by one foreign key.
 */
enum bi_verdict bi_read_negated_table(struct reader *rd);
enum bi_verdict bi_place_negated_table(struct reader *rd);

/* builtin_order.c: ordering. */

/* The words of an ordering or direction phrase at word i ("in descending order", "sorted by"), 0 when
   none starts there. */
size_t bi_order_phrase_at(const struct question_words *ws, size_t i);
/* Is w a word of an ordering or direction phrase (not a schema name's synonym)? */
bool bi_order_cue_word(const char *w);
/* "ordered by X", "in descending order of X", "ordered descending by X": the ordering. */
enum bi_verdict bi_read_order(struct reader *rd);
/* A direction naming no column orders by the one column shown (read after the select list). */
enum bi_verdict bi_read_bare_direction(struct reader *rd);
/* An ordering verb away from the ordering it asks for ("Sort the names ... in ascending order of X"). */
enum bi_verdict bi_read_sort_verb(struct reader *rd);

/* builtin_adjectives.c: adjectives naming no column. */

/* A word the superlative adjectives read after "most" / "least" ("recent", "expensive"): kept for them
   from the cues that read "the most" (data, not an exception in those cues). */
bool bi_superlative_adjective_word(const char *w);
/* "the oldest", "the most recent": an ordering by the column the adjective measures. */
enum bi_verdict bi_read_superlative_adjectives(struct reader *rd);
/* "older than 25", "younger than average": the column WordNet gives as the adjective's attribute. */
enum bi_verdict bi_read_comparative_adjectives(struct reader *rd);

/* builtin_like.c: "whose name contains 'Swift'", "starting with A": col LIKE pattern. */
enum bi_verdict bi_read_like(struct reader *rd);

/* builtin_conditions.c: the words of comparisons and of the links between a column and its value. */

/* w is a word of a comparison phrase ("than", "least"); w may stand between a column and its value ("is"). */
bool bi_comparison_word(const char *w);
bool bi_link_word(const char *w);

/* builtin_cues.c: the cue words (aggregates, DISTINCT, grouping). */

/* Is w a word of the cue phrases of aggregates, DISTINCT or grouping? */
bool bi_cue_phrase_word(const char *w);
/* "distinct", "different", "unique". */
bool bi_distinct_word(const char *w);

#endif
