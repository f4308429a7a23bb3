/*
 * link_scorer.h - the learned column scorer: a logistic regression over the
 * signals linking already computes for a column of a required table
 * (lexical score and its ratios, mentions, value hits, keys, shared names,
 * the table's score and size), fitted on spider-train by
 * bench/fit_link_scorer.py.  The fill (link_columns.c) ranks the columns it
 * may add by the scorer's probability across tables and adds them, while
 * the probability is at least the scorer's threshold, until the token
 * budget is spent.
 *
 * The weights are data: data/link_scorer.json (embedded in the binary at
 * build time; link.scorer_file replaces it).  Format:
 *   {"version": 1, "features": ["score", ...], "weights": [...],
 *    "intercept": x, "threshold": p, ...}
 * "features" must name exactly LINK_FEATURES in link_feature_names' order;
 * extra members (the fit's figures) are ignored.  A scorer is immutable once
 * parsed and shared read-only by every thread.
 *
 * The learned TABLE scorer rides in the same document, member "tables":
 *   {"features": [...], "weights": [...], "intercept": x, "threshold": p}
 * "features" names exactly LINK_TABLE_FEATURES in link_table_feature_names'
 * order.  It weighs every table the firm rules (names, mentions, stand-ins,
 * values) did not require (link_tables.c) and requires, beyond the hand
 * rules' tables, those no rule required that it rates at or above its
 * threshold, bridges aside (the hand rules stay: letting the scorer overrule the score
 * rule measured worse, pipeline/link/README.md).  Without "tables" the hand
 * rules alone pick tables; a malformed "tables" is an error like any other.
 */
#ifndef T2S_LINK_SCORER_H
#define T2S_LINK_SCORER_H

#include "common/contract.h"
#include "common/error.h"

#include <stdbool.h>
#include <stddef.h>

enum link_feature {
	LF_SCORE,           /* the column's retrieval score (>= 0) */
	LF_SCORE_REL,       /* / the best candidate column's score */
	LF_SCORE_TABLE_REL, /* / its table's best column's score */
	LF_TABLE_BEST,      /* 1: its table's best column */
	LF_RANK_INV,        /* 1 / (1 + its rank among its table's columns by score) */
	LF_MENTION_FULL,    /* the question names it (all words, acronym, truncation, compound) */
	LF_MENTION_PART,    /* the question names part of it */
	LF_STAND_IN,        /* a stand-in of an orphan word names it */
	LF_LABEL,           /* its table's label column (name/title) */
	LF_VALUE,           /* holds a value, number or date of the question */
	LF_PRIMARY_KEY,
	LF_FOREIGN_KEY,
	LF_SHARED_NAME,     /* shares its name with a required table no key joins */
	LF_TABLE_REL,       /* its table's score / the best required table's */
	LF_TABLE_NAMED,     /* the question names its table */
	LF_TABLE_LOG_COLUMNS, /* log(1 + columns of its table) */
	LF_NUMERIC,         /* integer or real */
	LINK_FEATURES
};

/* The feature names of the weights file, in enum order. */
extern const char *const link_feature_names[LINK_FEATURES];

/* A table's signals (link_tables.c computes them after retrieval and values). */
enum link_table_feature {
	LTF_SCORE,          /* its best column's retrieval score (>= 0) */
	LTF_SCORE_REL,      /* / the best table's */
	LTF_RANK_INV,       /* 1 / (1 + its rank among the tables by score) */
	LTF_TOP3_REL,       /* mean of its three best column scores / the best table's */
	LTF_SCORE_RULE,     /* the score rule chose it (within link.table_ratio of the best) */
	LTF_MENTION_FULL,   /* the question names a column of it */
	LTF_MENTION_PART,   /* ... part of a column's name */
	LTF_STAND_IN,       /* a stand-in of an orphan word names a column of it */
	LTF_VALUE,          /* a column of it holds a value the question names */
	LTF_STAND_IN_NAME,  /* a stand-in of an orphan word is a word of its name (not only the head) */
	LTF_FAR_NAME,       /* a question word's hypernym (lexicon far word) is a word of its name */
	LTF_KEYED_FIRM,     /* min(2, its join edges to required tables) / 2 */
	LTF_BRIDGE,         /* join edges link it to two distinct required tables or more */
	LTF_NO_FIRM,        /* the rules required no table (the question names nothing) */
	LTF_FIRM_LOG,       /* log(1 + tables the rules required) */
	LTF_LOG_COLUMNS,    /* log(1 + its columns) */
	LINK_TABLE_FEATURES
};

extern const char *const link_table_feature_names[LINK_TABLE_FEATURES];

struct link_table_scorer {
	bool present; /* the document had "tables": else the hand rules alone */
	double weights[LINK_TABLE_FEATURES];
	double intercept;
	double threshold;
};

struct link_scorer {
	double weights[LINK_FEATURES];
	double intercept;
	double threshold; /* the fill adds a column only when its probability is at least this */
	struct link_table_scorer tables;
};

/*
 * Parse a weights document (len bytes).  0, or -T2S_ERR_INVALID with a
 * message naming what is wrong (not JSON, a missing or unknown feature, a
 * weight that is not a finite number, a threshold outside [0, 1]).
 */
T2S_MUST_CHECK
int link_scorer_parse(const char *json, size_t len, struct link_scorer *ret, struct t2s_error *err);
/* Parse the file at path; its errors name the path.  -T2S_ERR_IO when unreadable. */
T2S_MUST_CHECK
int link_scorer_load(const char *path, struct link_scorer *ret, struct t2s_error *err);
/*
 * The scorer shipped in the binary (data/link_scorer.json), parsed once;
 * NULL when it does not parse (*err says why; the service refuses to start).
 * Thread-safe; the returned scorer is static.
 */
T2S_MUST_CHECK
const struct link_scorer *link_scorer_builtin(struct t2s_error *err);
/* Probability that a column with features f is needed: sigmoid(w.f + intercept). */
double link_scorer_probability(const struct link_scorer *s, const double f[LINK_FEATURES]);
/* Probability that a table with features f is needed (0 when !s->present). */
double link_table_scorer_probability(const struct link_table_scorer *s, const double f[LINK_TABLE_FEATURES]);

#endif
