/*
 * confidence.c - the answer scorer's weights document (parsed, checked,
 * the embedded one parsed once) and its probability: a logistic regression
 * over the features, then the calibration (confidence.h).
 */
#include "pipeline/generate/confidence.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The embedded data/confidence.json (meson.build, scripts/embed_file.py). */
extern const char embedded_confidence_json[];
extern const size_t embedded_confidence_json_len;

const char *const confidence_feature_names[CONFIDENCE_FEATURES] = {
	[CF_FAIL_ERRORS] = "fail_errors",
	[CF_FAIL_WARNINGS] = "fail_warnings",
	[CF_FAIL_NAMES] = "fail_names",
	[CF_FAIL_JOINS] = "fail_joins",
	[CF_FAIL_GROUPING] = "fail_grouping",
	[CF_FAIL_AGGREGATES] = "fail_aggregates",
	[CF_FAIL_EMPTY] = "fail_empty",
	[CF_FAIL_REPEATS] = "fail_repeats",
	[CF_FAIL_ROW_COUNT] = "fail_row_count",
	[CF_FAIL_QUESTION] = "fail_question",
	[CF_FAIL_LINKED] = "fail_linked",
	[CF_RELATIONS] = "relations",
	[CF_NESTED] = "nested",
	[CF_SET_OPERATION] = "set_operation",
	[CF_GROUPED] = "grouped",
	[CF_HAVING] = "having",
	[CF_ORDERED] = "ordered",
	[CF_LIMITED] = "limited",
	[CF_DISTINCT] = "distinct",
	[CF_AGGREGATE] = "aggregate",
	[CF_FILTERS] = "filters",
	[CF_ROWS_ZERO] = "rows_zero",
	[CF_ROWS_ONE] = "rows_one",
	[CF_ROWS_LOG] = "rows_log",
	[CF_QUESTION_WORDS] = "question_words",
	[CF_BUILTIN_AGREES] = "builtin_agrees",
	[CF_BUILTIN_DIFFERS] = "builtin_differs",
	[CF_CANDIDATES] = "candidates",
	[CF_VOTE_SHARE] = "vote_share",
	[CF_VOTE_UNANIMOUS] = "vote_unanimous",
	[CF_VOTE_WEIGHTED] = "vote_weighted",
	[CF_VOTE_MARGIN] = "vote_margin",
	[CF_RESULT_CLASSES] = "result_classes",
	[CF_CLAUSE_AGREEMENT] = "clause_agreement",
	[CF_CORRECTED] = "corrected",
	[CF_CORRECTIONS] = "corrections",
	[CF_LOGPROB_PRESENT] = "logprob_present",
	[CF_LOGPROB_MEAN] = "logprob_mean",
};

/* What each feature says when it lowers the confidence (confidence_reasons_json). */
static const char *const feature_texts[CONFIDENCE_FEATURES] = {
	[CF_FAIL_ERRORS] = "a blocking validation check failed",
	[CF_FAIL_WARNINGS] = "a validation warning fired",
	[CF_FAIL_NAMES] = "the database did not accept the statement",
	[CF_FAIL_JOINS] = "its joins do not follow the schema's relationships",
	[CF_FAIL_GROUPING] = "its grouping is inconsistent with what it shows",
	[CF_FAIL_AGGREGATES] = "an aggregate is misplaced or counts repeated rows",
	[CF_FAIL_EMPTY] = "the result is empty or holds no meaningful value",
	[CF_FAIL_REPEATS] = "the result repeats rows",
	[CF_FAIL_ROW_COUNT] = "the row count is implausible for the question",
	[CF_FAIL_QUESTION] = "the statement does not do what a word of the question asks",
	[CF_FAIL_LINKED] = "it reads a table the linking did not find relevant",
	[CF_RELATIONS] = "it joins several tables",
	[CF_NESTED] = "it nests subqueries",
	[CF_SET_OPERATION] = "it combines results with a set operation",
	[CF_GROUPED] = "it groups rows",
	[CF_HAVING] = "it filters groups",
	[CF_ORDERED] = "it orders the result",
	[CF_LIMITED] = "it keeps only the first rows",
	[CF_DISTINCT] = "it removes repeated rows",
	[CF_AGGREGATE] = "it aggregates",
	[CF_FILTERS] = "it filters on conditions",
	[CF_ROWS_ZERO] = "the result has no row",
	[CF_ROWS_ONE] = "the result has one row",
	[CF_ROWS_LOG] = "the result has many rows",
	[CF_QUESTION_WORDS] = "the question is long",
	[CF_BUILTIN_AGREES] = "the built-in reading agrees",
	[CF_BUILTIN_DIFFERS] = "the built-in generator read the question another way",
	[CF_CANDIDATES] = "several candidates were drawn",
	[CF_VOTE_SHARE] = "the candidates' results agree",
	[CF_VOTE_UNANIMOUS] = "every candidate agrees",
	[CF_VOTE_WEIGHTED] = "the validated candidates' results agree",
	[CF_VOTE_MARGIN] = "another result had nearly as many candidates",
	[CF_RESULT_CLASSES] = "the candidates' results differ",
	[CF_CLAUSE_AGREEMENT] = "the candidates' clauses agree",
	[CF_CORRECTED] = "the answer needed a correction",
	[CF_CORRECTIONS] = "the answer needed several corrections",
	[CF_LOGPROB_PRESENT] = "the model returned token probabilities",
	[CF_LOGPROB_MEAN] = "the model's token probabilities",
};

json_t *confidence_reasons_json(const struct confidence_scorer *s, const double f[CONFIDENCE_FEATURES])
{
	int order[CONFIDENCE_FEATURES], n = 0;
	for (int k = 0; k < CONFIDENCE_FEATURES; k++)
		if (s->weights[k] * f[k] < -0.05)
			order[n++] = k;
	for (int a = 1; a < n; a++) /* strongest (most negative) first; n is small */
		for (int b = a; b > 0 && s->weights[order[b]] * f[order[b]] < s->weights[order[b - 1]] * f[order[b - 1]];
		     b--) {
			int t = order[b];
			order[b] = order[b - 1];
			order[b - 1] = t;
		}
	json_t *out = json_array();
	for (int i = 0; out && i < n && i < 4; i++) {
		int k = order[i];
		json_array_append_new(out, json_pack("{s:s, s:f, s:s}", "feature", confidence_feature_names[k], "effect",
						     round(s->weights[k] * f[k] * 100) / 100, "text", feature_texts[k]));
	}
	return out;
}

const struct confidence_bands confidence_bands_default = {.high = 0.9, .medium = 0.6};

static int feature_index(const char *name)
{
	for (int k = 0; k < CONFIDENCE_FEATURES; k++)
		if (strcmp(name, confidence_feature_names[k]) == 0)
			return k;
	return -1;
}

static bool unit_number(json_t *v, double *ret)
{
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return false;
	*ret = json_number_value(v);
	return true;
}

static int parse_weights(json_t *doc, const char *what, struct confidence_scorer *s, struct t2s_error *err)
{
	json_t *fv = json_object_get(doc, "features"), *wv = json_object_get(doc, "weights");
	if (!json_is_array(fv) || !json_is_array(wv) || json_array_size(fv) != json_array_size(wv))
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: 'features' and 'weights' must be arrays of one size",
				     what);
	for (size_t k = 0; k < json_array_size(fv); k++) {
		const char *name = json_string_value(json_array_get(fv, k));
		int f = name ? feature_index(name) : -1;
		if (f < 0)
			return t2s_error_set(err, T2S_ERR_INVALID, "%s: feature %zu ('%s') is not one this service computes",
					     what, k, name ? name : "?");
		if (!unit_number(json_array_get(wv, k), &s->weights[f]))
			return t2s_error_set(err, T2S_ERR_INVALID, "%s: the weight of '%s' must be a finite number", what,
					     name);
	}
	if (!unit_number(json_object_get(doc, "intercept"), &s->intercept))
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: 'intercept' must be a finite number", what);
	return 0;
}

static int parse_isotonic(json_t *cal, const char *what, struct confidence_calibration *s, struct t2s_error *err)
{
	json_t *xv = json_object_get(cal, "x"), *yv = json_object_get(cal, "y");
	size_t n = json_array_size(xv);
	if (!json_is_array(xv) || !json_is_array(yv) || n != json_array_size(yv) || n < 2 || n > CONFIDENCE_MAX_KNOTS)
		return t2s_error_set(err, T2S_ERR_INVALID,
				     "%s: calibration 'x' and 'y' must be arrays of 2 to %d numbers, of one size", what,
				     CONFIDENCE_MAX_KNOTS);
	for (size_t k = 0; k < n; k++) {
		double x, y;
		if (!unit_number(json_array_get(xv, k), &x) || !unit_number(json_array_get(yv, k), &y) || x < 0 ||
		    x > 1 || y < 0 || y > 1)
			return t2s_error_set(err, T2S_ERR_INVALID, "%s: calibration knot %zu must be within [0, 1]", what,
					     k);
		if (k > 0 && (x <= s->knot_x[k - 1] || y < s->knot_y[k - 1]))
			return t2s_error_set(err, T2S_ERR_INVALID,
					     "%s: calibration knots must have increasing x and non-decreasing y (knot %zu)",
					     what, k);
		s->knot_x[k] = x;
		s->knot_y[k] = y;
	}
	s->n_knots = n;
	return 0;
}

static int parse_calibration(json_t *doc, const char *what, struct confidence_calibration *s, struct t2s_error *err)
{
	json_t *cal = json_object_get(doc, "calibration");
	const char *method = json_string_value(json_object_get(cal, "method"));
	if (!json_is_object(cal) || !method)
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: 'calibration' must be an object with a 'method'", what);
	if (strcmp(method, "none") == 0) {
		s->method = CONFIDENCE_CAL_NONE;
		return 0;
	}
	if (strcmp(method, "platt") == 0) {
		s->method = CONFIDENCE_CAL_PLATT;
		if (!unit_number(json_object_get(cal, "a"), &s->platt_a) ||
		    !unit_number(json_object_get(cal, "b"), &s->platt_b))
			return t2s_error_set(err, T2S_ERR_INVALID, "%s: Platt calibration needs finite 'a' and 'b'", what);
		return 0;
	}
	if (strcmp(method, "isotonic") == 0) {
		s->method = CONFIDENCE_CAL_ISOTONIC;
		return parse_isotonic(cal, what, s, err);
	}
	return t2s_error_set(err, T2S_ERR_INVALID, "%s: calibration method '%s' is not platt, isotonic or none", what,
			     method);
}

/* The optional "builtin" member (confidence.h): absent leaves s->present false. */
static int parse_builtin_part(json_t *doc, const char *what, struct confidence_named_scorer *s, struct t2s_error *err)
{
	json_t *o = json_object_get(doc, "builtin");
	if (!o)
		return 0;
	json_t *fv = json_object_get(o, "features"), *wv = json_object_get(o, "weights");
	size_t n = json_array_size(fv);
	if (!json_is_object(o) || !json_is_array(fv) || !json_is_array(wv) || n != json_array_size(wv) ||
	    n > CONFIDENCE_MAX_NAMED)
		return t2s_error_set(err, T2S_ERR_INVALID,
				     "%s: 'builtin' must hold 'features' and 'weights', arrays of one size (at most %d)",
				     what, CONFIDENCE_MAX_NAMED);
	for (size_t k = 0; k < n; k++) {
		const char *name = json_string_value(json_array_get(fv, k));
		if (!name || !*name || strlen(name) >= CONFIDENCE_NAME_MAX)
			return t2s_error_set(err, T2S_ERR_INVALID, "%s: builtin feature %zu must be a name of 1 to %d bytes",
					     what, k, CONFIDENCE_NAME_MAX - 1);
		snprintf(s->names[k], sizeof(s->names[k]), "%s", name);
		if (!unit_number(json_array_get(wv, k), &s->weights[k]))
			return t2s_error_set(err, T2S_ERR_INVALID, "%s: the weight of builtin feature '%s' must be a finite number",
					     what, name);
	}
	s->n = n;
	if (!unit_number(json_object_get(o, "intercept"), &s->intercept))
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: 'builtin.intercept' must be a finite number", what);
	if (!unit_number(json_object_get(o, "threshold"), &s->threshold) || s->threshold < 0 || s->threshold > 1)
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: 'builtin.threshold' must be a number within [0, 1]", what);
	int rc = parse_calibration(o, what, &s->calibration, err);
	s->present = rc == 0;
	return rc;
}

static int parse_doc(json_t *doc, const char *what, struct confidence_scorer *ret, struct t2s_error *err)
{
	struct confidence_scorer s = {0};
	if (!json_is_object(doc))
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: not a JSON object", what);
	if (json_integer_value(json_object_get(doc, "version")) != 1)
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: 'version' must be 1", what);
	int rc = parse_weights(doc, what, &s, err);
	if (rc == 0)
		rc = parse_calibration(doc, what, &s.calibration, err);
	if (rc == 0)
		rc = parse_builtin_part(doc, what, &s.builtin, err);
	if (rc == 0)
		*ret = s;
	return rc;
}

int confidence_scorer_parse(const char *json, size_t len, struct confidence_scorer *ret, struct t2s_error *err)
{
	json_error_t je;
	json_t *doc = json_loadb(json, len, 0, &je);
	if (!doc)
		return t2s_error_set(err, T2S_ERR_INVALID, "confidence scorer weights: not JSON (line %d: %s)", je.line,
				     je.text);
	int rc = parse_doc(doc, "confidence scorer weights", ret, err);
	json_decref(doc);
	return rc;
}

int confidence_scorer_load(const char *path, struct confidence_scorer *ret, struct t2s_error *err)
{
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	if (!doc)
		return t2s_error_set(err, T2S_ERR_INVALID, "generate.confidence_file %s: %s (line %d)", path, je.text,
				     je.line);
	char what[300];
	snprintf(what, sizeof(what), "generate.confidence_file %.256s", path);
	int rc = parse_doc(doc, what, ret, err);
	json_decref(doc);
	return rc;
}

static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
static struct confidence_scorer builtin;
static struct t2s_error builtin_err;
static int builtin_rc;

static void parse_builtin(void)
{
	builtin_rc = confidence_scorer_parse(embedded_confidence_json, embedded_confidence_json_len, &builtin,
					     &builtin_err);
}

const struct confidence_scorer *confidence_scorer_builtin(struct t2s_error *err)
{
	pthread_once(&builtin_once, parse_builtin);
	if (builtin_rc < 0) {
		if (err)
			*err = builtin_err;
		return NULL;
	}
	return &builtin;
}

static double sigmoid(double z)
{
	if (z > 40)
		return 1;
	if (z < -40)
		return 0;
	return 1 / (1 + exp(-z));
}

/* The isotonic map at p: the knots' values, linear between them, flat outside. */
static double isotonic(const struct confidence_calibration *s, double p)
{
	if (p <= s->knot_x[0])
		return s->knot_y[0];
	for (size_t k = 1; k < s->n_knots; k++)
		if (p <= s->knot_x[k]) {
			double t = (p - s->knot_x[k - 1]) / (s->knot_x[k] - s->knot_x[k - 1]);
			return s->knot_y[k - 1] + t * (s->knot_y[k] - s->knot_y[k - 1]);
		}
	return s->knot_y[s->n_knots - 1];
}

/* The calibrated probability of the logit z. */
static double calibrated(const struct confidence_calibration *c, double z)
{
	switch (c->method) {
	case CONFIDENCE_CAL_PLATT:
		return sigmoid(c->platt_a * z + c->platt_b);
	case CONFIDENCE_CAL_ISOTONIC:
		return isotonic(c, sigmoid(z));
	case CONFIDENCE_CAL_NONE:
		break;
	}
	return sigmoid(z);
}

double confidence_probability(const struct confidence_scorer *s, const double f[CONFIDENCE_FEATURES])
{
	double z = s->intercept;
	for (int k = 0; k < CONFIDENCE_FEATURES; k++)
		z += s->weights[k] * f[k];
	return calibrated(&s->calibration, z);
}

double confidence_named_probability(const struct confidence_named_scorer *s, const struct confidence_named_value *v,
				    size_t n)
{
	double z = s->intercept;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < s->n; k++)
			if (strcmp(v[i].name, s->names[k]) == 0) {
				z += s->weights[k] * v[i].value;
				break;
			}
	return calibrated(&s->calibration, z);
}

const char *confidence_band(const struct confidence_bands *b, double confidence)
{
	if (confidence >= b->high)
		return "high";
	return confidence >= b->medium ? "medium" : "low";
}
