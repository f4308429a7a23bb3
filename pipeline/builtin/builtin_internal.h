/*
 * builtin_internal.h - the built-in generator's reading of a question,
 * shared by the reading (builtin_phases.c and its phases), the set
 * operations (builtin_compound.c), the SQL writer (builtin_sql.c) and the
 * entry point (builtin.c).  Not for use outside pipeline/builtin/.
 */
#ifndef T2S_BUILTIN_INTERNAL_H
#define T2S_BUILTIN_INTERNAL_H

#include "pipeline/builtin/builtin.h"
#include "pipeline/text/question_cues.h"

#define BI_MAX_SELECT 8
#define BI_MAX_FILTERS 6
/* A schema of more tables than this is read only through the tables linking found. */
#define BI_WIDE_SCHEMA 64
/* The columns one name may stand for: one for each table read ("ids": every table's one id column). */
#define BI_MAX_CANDIDATES BI_WIDE_SCHEMA

enum bi_agg { BI_NONE, BI_COUNT, BI_COUNT_DISTINCT, BI_AVG, BI_SUM, BI_MIN, BI_MAX };

/* A column of the reading: table index and column index in the schema. */
struct bi_col {
	int table, column;
};

struct bi_filter {
	struct bi_col col;
	const char *op;      /* "=", ">", "<", ">=", "<=", "!=", "BETWEEN", "LIKE" */
	const char *text;    /* a stored value (borrowed from the evidence), or NULL for numbers */
	const char *or_text; /* a second stored value, either of them ("a or b"); NULL: none */
	int start, end;      /* the words of text in the question */
	double num, num2;    /* numbers (num2: BETWEEN's upper bound) */
	char pattern[96];    /* op "LIKE": the pattern, '%' included */
	bool average;        /* compared with the column's average over its table (a subquery) */
};

/* A foreign key: the table holding it and its index there. */
struct bi_link {
	int from, fk;
};

/* What the question asks, once read. */
struct bi_query {
	int table;                       /* the main table */
	int join_table;                  /* -1: none; else joined to table by join_fk */
	int join_from, join_fk;          /* the table holding the foreign key and its index there (-1: over a bridge) */
	int bridge;                      /* -1: none; else the table between table and join_table: */
	struct bi_link links[2];         /* table - bridge and bridge - join_table */
	int counted_table;               /* the table named after a count cue, or -1 */
	bool count_listed;               /* the count cue stands after the question's start ("X and the number of") */
	int neg_table, neg_fk;           /* "without <table>": rows no row of neg_table refers to by its
					    foreign key neg_fk; -1: none */
	struct bi_col select[BI_MAX_SELECT];
	size_t n_select;
	enum bi_agg agg;                 /* BI_NONE: the select list as is */
	struct bi_col agg_col;           /* the aggregated column (BI_COUNT: none) */
	enum bi_agg more_aggs[3];        /* further aggregates of agg_col ("average and total X") */
	size_t n_more_aggs;
	struct bi_col more_cols[3];      /* further columns under the same aggregates ("average height and weight") */
	size_t n_more_cols;
	bool star;                       /* "all information": every column */
	bool most;                       /* the group with the most (desc) or fewest rows: ORDER BY count(*) */
	bool per_row;                    /* most / having count the joined table's rows per row of the main
					    table (GROUP BY the key it refers to) */
	int n_verbs;                     /* verbs read as the join's relation */
	bool having;                     /* groups with count(*) having_op having_num */
	bool having_times;               /* said as "N times" of the main table's rows */
	const char *having_op;
	double having_num;
	bool distinct;
	struct bi_filter filters[BI_MAX_FILTERS];
	size_t n_filters;
	bool grouped;
	struct bi_col group;
	bool ordered;
	struct bi_col order;
	bool order_count;                /* ORDER BY count(*): the groups by their sizes */
	bool desc;
	long limit;                      /* 0: none */
	long top;                        /* "top N": the rows a superlative or most-rows question keeps; 0: none */
	const char *shape;
	double confidence;
};

/* A refusal: code (static), sentence, and the rule that refused (static; a phase's step when no rule). */
struct bi_refusal {
	const char *code;
	const char *rule;
	char reason[BUILTIN_REASON_MAX];
};

/* The claims of a reading: each word of the question (as read: lower case) and the rule that read it
   (static; NULL when none did: a filler word, or a word left unread when the reading was refused). */
struct bi_claims {
	size_t n;
	char word[QUESTION_MAX_WORDS][QUESTION_MAX_WORD];
	const char *rule[QUESTION_MAX_WORDS];
};

/* What builtin_read returns (or -T2S_ERR_NOMEM). */
enum bi_outcome {
	BI_ANSWERED = 0, /* q is the reading */
	BI_REFUSED_QUESTION = 1, /* why says why */
};

/*
 * Read the question into q (builtin_phases.c: the phases in order), or fill why.  claims (may be NULL)
 * receives which rule read each word, whether the question is read or refused.  BI_ANSWERED,
 * BI_REFUSED_QUESTION or -T2S_ERR_NOMEM.
 */
int builtin_read(const struct builtin_input *in, struct bi_query *q, struct bi_refusal *why, struct bi_claims *claims)
	__attribute__((warn_unused_result));

/* What builtin_read_compound returns (or -T2S_ERR_NOMEM). */
enum bi_compound_outcome {
	BI_COMPOUND_READ = 0, /* ret's sql, shape and confidence filled */
	BI_COMPOUND_NONE = 1, /* no set operation reads the question: ret untouched */
};

/*
 * A question the whole reading refused, read as two clauses joined by a set operation
 * (builtin_compound.c): BI_COMPOUND_READ and ret's sql (malloc'd, the caller's), shape and
 * confidence filled; BI_COMPOUND_NONE; -T2S_ERR_NOMEM.
 */
int builtin_read_compound(const struct builtin_input *in, struct builtin_result *ret) __attribute__((warn_unused_result));

/* Write q as SQL for the schema's engine: malloc'd, NULL when out of memory. */
char *builtin_write_sql(const struct schema *s, const struct bi_query *q) __attribute__((warn_unused_result));

#endif
