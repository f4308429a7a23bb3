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
 */
#ifndef T2S_LINK_SCORER_H
#define T2S_LINK_SCORER_H

#include "common/error.h"

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

struct link_scorer {
	double weights[LINK_FEATURES];
	double intercept;
	double threshold; /* the fill adds a column only when its probability is at least this */
};

/*
 * Parse a weights document (len bytes).  0, or -T2S_ERR_INVALID with a
 * message naming what is wrong (not JSON, a missing or unknown feature, a
 * weight that is not a finite number, a threshold outside [0, 1]).
 */
int link_scorer_parse(const char *json, size_t len, struct link_scorer *ret, struct t2s_error *err);
/* Parse the file at path; its errors name the path.  -T2S_ERR_IO when unreadable. */
int link_scorer_load(const char *path, struct link_scorer *ret, struct t2s_error *err);
/*
 * The scorer shipped in the binary (data/link_scorer.json), parsed once;
 * NULL when it does not parse (*err says why; the service refuses to start).
 * Thread-safe; the returned scorer is static.
 */
const struct link_scorer *link_scorer_builtin(struct t2s_error *err);
/* Probability that a column with features f is needed: sigmoid(w.f + intercept). */
double link_scorer_probability(const struct link_scorer *s, const double f[LINK_FEATURES]);

#endif
