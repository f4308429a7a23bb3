/*
 * confidence.h - the answer scorer: `confidence`, the calibrated probability
 * that an answer is right, from features of how the answer was made (its
 * validation, the shape of its statement and result, how far the
 * candidates and the built-in generator's independent reading agree with
 * it, the corrections it needed, the model's token log-probabilities when
 * the server returns them).
 *
 * The model is a logistic regression whose output is calibrated by Platt
 * scaling (a second logistic on the first one's logit) or an isotonic map
 * (a non-decreasing step function on the logistic's output), fitted by
 * bench/fit_confidence.py with folds grouped by database on replayed real
 * systems' answers.  Its weights are data: data/confidence.json, embedded in
 * the binary at build time; generate.confidence_file replaces it, and a
 * file that does not parse stops the start.  Format:
 *
 *   {"version": 1, "features": ["fail_errors", ...], "weights": [...],
 *    "intercept": x,
 *    "calibration": {"method": "platt", "a": a, "b": b}
 *                 | {"method": "isotonic", "x": [...], "y": [...]}
 *                 | {"method": "none"},
 *    ...}                       (other members, the fit's figures, ignored)
 *
 * "features" names a subset of confidence_feature_names in any order (a
 * feature the file does not name weighs 0; a name the service does not
 * know is an error, so a file fitted for another version is refused, not
 * misread).  An isotonic map has 2 to CONFIDENCE_MAX_KNOTS knots, x strictly
 * increasing within [0, 1], y non-decreasing within [0, 1]; between knots
 * it is interpolated linearly.
 *
 * A parsed scorer is immutable and shared read-only by every thread.
 */
#ifndef T2S_GENERATE_CONFIDENCE_H
#define T2S_GENERATE_CONFIDENCE_H

#include "common/contract.h"
#include "common/error.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>

/*
 * The features (confidence_features.c computes them; each within [0, 1]
 * unless said otherwise).  The fail_* features are 1 when that validation
 * check of the answer failed.
 */
enum confidence_feature {
	CF_FAIL_ERRORS,        /* min(3, blocking checks failed) / 3 */
	CF_FAIL_WARNINGS,      /* min(3, warnings failed) / 3 */
	CF_FAIL_NAMES,         /* names_resolve or executes: the database refused it */
	CF_FAIL_JOINS,         /* tables_joined or joins_follow_schema_graph */
	CF_FAIL_GROUPING,      /* group_by_consistent or groups_named */
	CF_FAIL_AGGREGATES,    /* aggregate_not_repeated, aggregates_placed_legally, aggregate_of_numbers,
				  set_operands_not_aggregates */
	CF_FAIL_EMPTY,         /* result_not_empty, first_value_meaningful or rows_not_all_null */
	CF_FAIL_REPEATS,       /* rows_not_repeated or references_not_repeated */
	CF_FAIL_ROW_COUNT,     /* row_count_plausible or order_limit_meaningful */
	CF_FAIL_QUESTION,      /* a check of the question's words: average_computed, count_answered_by_one_row,
				  each_answered_per_group, order_direction_asked */
	CF_FAIL_LINKED,        /* tables_linked: a table outside the linked schema */
	CF_RELATIONS,          /* min(3, relations read in FROM beyond the first) / 3 */
	CF_NESTED,             /* min(2, query blocks beyond the first) / 2 */
	CF_SET_OPERATION,      /* UNION / INTERSECT / EXCEPT */
	CF_GROUPED,            /* GROUP BY */
	CF_HAVING,
	CF_ORDERED,            /* a top-level ORDER BY */
	CF_LIMITED,            /* a top-level LIMIT */
	CF_DISTINCT,           /* SELECT DISTINCT at the top level */
	CF_AGGREGATE,          /* an aggregate in some select list */
	CF_FILTERS,            /* a WHERE / HAVING condition or a literal */
	CF_ROWS_ZERO,          /* the result has no row */
	CF_ROWS_ONE,           /* exactly one row */
	CF_ROWS_LOG,           /* log(1 + rows) / 10, at most 1 */
	CF_QUESTION_WORDS,     /* min(40, words of the question) / 40 */
	CF_BUILTIN_AGREES,     /* the built-in generator read the question and its result equals the answer's */
	CF_BUILTIN_DIFFERS,    /* the built-in generator read it another way (its result differs) */
	CF_CANDIDATES,         /* more than one first-round candidate was drawn */
	CF_VOTE_SHARE,         /* of the first-round candidates that ran, the share whose result equals the
				  answer's (1 with one candidate) */
	CF_VOTE_UNANIMOUS,     /* several candidates, every one's result equals the answer's */
	CF_VOTE_WEIGHTED,      /* CF_VOTE_SHARE with each candidate weighed by its validation as the vote weighs it
				  (vote.h: 1 passing, VOTE_FLAGGED_WEIGHT flagged) */
	CF_VOTE_MARGIN,        /* the answer's share minus the largest other result class's share */
	CF_RESULT_CLASSES,     /* distinct results among the candidates that ran / their number (0 with one) */
	CF_CLAUSE_AGREEMENT,   /* the mean over SELECT, FROM, WHERE, GROUP BY, ORDER BY of the share of other
				  candidates whose clause names the same columns (tables) as the answer's; 1 with
				  one candidate */
	CF_CORRECTED,          /* the answer came from a correction round */
	CF_CORRECTIONS,        /* min(3, correction rounds) / 3 */
	CF_LOGPROB_PRESENT,    /* the model server returned token log-probabilities for the answer */
	CF_LOGPROB_MEAN,       /* exp(mean token log-probability) of the answer's reply, 0 without them */
	CONFIDENCE_FEATURES
};

/* The feature names of the weights file, in enum order. */
extern const char *const confidence_feature_names[CONFIDENCE_FEATURES];

#define CONFIDENCE_MAX_KNOTS 64

enum confidence_calibration_method { CONFIDENCE_CAL_NONE, CONFIDENCE_CAL_PLATT, CONFIDENCE_CAL_ISOTONIC };

/* A logistic output's calibration (the document's "calibration" member). */
struct confidence_calibration {
	enum confidence_calibration_method method;
	double platt_a, platt_b;                   /* p = sigmoid(a * logit + b) */
	double knot_x[CONFIDENCE_MAX_KNOTS], knot_y[CONFIDENCE_MAX_KNOTS];
	size_t n_knots;
};

/*
 * The built-in generator's reading scorer (the document's optional
 * "builtin" member): a logistic regression over named features of a
 * reading (confidence_builtin.c: "rule:<rule that read a word>",
 * "shape:<shape>", "unclaimed", "words", "hand"), calibrated, and the
 * threshold under which the built-in abstains (refusal low_confidence).
 * Names are the reading's own: one the service never produces weighs
 * nothing.  Absent ("present" false): the built-in keeps its hand-set
 * confidence and never abstains on it.
 *
 *   "builtin": {"features": [...], "weights": [...], "intercept": x,
 *               "calibration": {...}, "threshold": p}
 */
#define CONFIDENCE_MAX_NAMED 512
#define CONFIDENCE_NAME_MAX 64
struct confidence_named_scorer {
	bool present;
	size_t n;
	char names[CONFIDENCE_MAX_NAMED][CONFIDENCE_NAME_MAX];
	double weights[CONFIDENCE_MAX_NAMED];
	double intercept;
	struct confidence_calibration calibration;
	double threshold; /* the built-in abstains below this probability */
};

struct confidence_scorer {
	double weights[CONFIDENCE_FEATURES];
	double intercept;
	struct confidence_calibration calibration;
	struct confidence_named_scorer builtin;
};

/*
 * Parse a weights document (len bytes).  0, or -T2S_ERR_INVALID with a
 * message naming what is wrong (not JSON, an unknown feature, a weight that
 * is not a finite number, a malformed calibration).  *ret is written only
 * on success.
 */
T2S_MUST_CHECK
int confidence_scorer_parse(const char *json, size_t len, struct confidence_scorer *ret, struct t2s_error *err);
/* Parse the file at path; errors name generate.confidence_file and the path. */
T2S_MUST_CHECK
int confidence_scorer_load(const char *path, struct confidence_scorer *ret, struct t2s_error *err);
/*
 * The scorer shipped in the binary (data/confidence.json), parsed once;
 * NULL when it does not parse (*err says why; the service refuses to
 * start).  Thread-safe; the returned scorer is static.
 */
const struct confidence_scorer *confidence_scorer_builtin(struct t2s_error *err);
/* The calibrated probability, within [0, 1], of an answer with features f. */
double confidence_probability(const struct confidence_scorer *s, const double f[CONFIDENCE_FEATURES]);

/* One named feature of a reading and its value. */
struct confidence_named_value {
	const char *name; /* borrowed */
	double value;
};
/* The built-in scorer's calibrated probability of a reading with features v[0..n) (names not found weigh 0). */
double confidence_named_probability(const struct confidence_named_scorer *s, const struct confidence_named_value *v,
				    size_t n);

/*
 * Why a scored answer is not sure: the features that lower its confidence
 * most (weight x value below -0.05), at most four, strongest first, as
 * [{feature, effect (on the log-odds), text}]; a new reference, [] when
 * nothing lowers it, NULL when out of memory.
 */
json_t *confidence_reasons_json(const struct confidence_scorer *s, const double f[CONFIDENCE_FEATURES]);

/* The bands an answer's confidence falls in (generate.confidence_high / _medium). */
struct confidence_bands {
	double high;   /* at or above: "high" */
	double medium; /* at or above (and below high): "medium"; below: "low" */
};
/* Defaults of struct confidence_bands (the config's defaults). */
extern const struct confidence_bands confidence_bands_default;
/* "high", "medium" or "low" (static strings). */
const char *confidence_band(const struct confidence_bands *b, double confidence);

#endif
