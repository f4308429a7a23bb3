/*
 * test_confidence.c - the answer scorer's weights document and probability
 * (pipeline/generate/confidence.h): a document with Platt, isotonic or no
 * calibration parses and scores as its formula says; features the file does
 * not name weigh 0; a corrupt document, an unknown feature, a non-finite
 * weight or knots out of order are refused naming what is wrong; the weights
 * built into the binary parse; the bands and the reasons.
 */
#include "pipeline/generate/confidence.h"
#include "tests/unit/tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sigmoid(double z)
{
	return 1 / (1 + exp(-z));
}

static int parse(const char *doc, struct confidence_scorer *s, struct t2s_error *err)
{
	return confidence_scorer_parse(doc, strlen(doc), s, err);
}

static void test_calibrations(void)
{
	struct confidence_scorer s;
	struct t2s_error err = {0};
	double f[CONFIDENCE_FEATURES] = {[CF_FAIL_ERRORS] = 1, [CF_VOTE_SHARE] = 0.5, [CF_ROWS_ONE] = 1};
	int rc = parse("{\"version\": 1, \"features\": [\"vote_share\", \"fail_errors\"], \"weights\": [2, -1],"
		       " \"intercept\": 0.5, \"calibration\": {\"method\": \"none\"}, \"fit\": {\"auroc\": 0.8}}",
		       &s, &err);
	/* z = 0.5 + 2 * 0.5 - 1 * 1 = 0.5; rows_one is not named: weight 0. */
	TAP_OK(rc == 0 && fabs(confidence_probability(&s, f) - sigmoid(0.5)) < 1e-12,
	       "uncalibrated_probability_is_the_logistic_of_the_named_features");
	rc = parse("{\"version\": 1, \"features\": [\"vote_share\", \"fail_errors\"], \"weights\": [2, -1],"
		   " \"intercept\": 0.5, \"calibration\": {\"method\": \"platt\", \"a\": 2, \"b\": -1}}",
		   &s, &err);
	TAP_OK(rc == 0 && fabs(confidence_probability(&s, f) - sigmoid(2 * 0.5 - 1)) < 1e-12,
	       "platt_calibration_rescales_the_logit");
	rc = parse("{\"version\": 1, \"features\": [], \"weights\": [], \"intercept\": 0,"
		   " \"calibration\": {\"method\": \"isotonic\", \"x\": [0.2, 0.6], \"y\": [0.1, 0.9]}}",
		   &s, &err);
	double none[CONFIDENCE_FEATURES] = {0};
	/* sigmoid(0) = 0.5, three quarters of the way from 0.2 to 0.6: 0.1 + 0.75 * 0.8. */
	TAP_OK(rc == 0 && fabs(confidence_probability(&s, none) - 0.7) < 1e-12, "isotonic_map_interpolates_between_knots");
	s.intercept = -10; /* below the first knot: flat */
	TAP_OK(fabs(confidence_probability(&s, none) - 0.1) < 1e-12, "isotonic_map_is_flat_below_its_first_knot");
	s.intercept = 10;
	TAP_OK(fabs(confidence_probability(&s, none) - 0.9) < 1e-12, "isotonic_map_is_flat_above_its_last_knot");
}

static void test_refusals(void)
{
	static const struct {
		const char *doc, *needle, *name;
	} cases[] = {
		{"{\"version\": 1, \"features\": [", "not JSON", "corrupt_document_is_refused"},
		{"{\"version\": 2, \"features\": [], \"weights\": [], \"intercept\": 0, \"calibration\": {\"method\": "
		 "\"none\"}}", "version", "another_version_is_refused"},
		{"{\"version\": 1, \"features\": [\"shoe_size\"], \"weights\": [1], \"intercept\": 0, \"calibration\": "
		 "{\"method\": \"none\"}}", "shoe_size", "unknown_feature_is_named"},
		{"{\"version\": 1, \"features\": [\"fail_errors\"], \"weights\": [\"x\"], \"intercept\": 0, "
		 "\"calibration\": {\"method\": \"none\"}}", "fail_errors", "non_numeric_weight_is_named"},
		{"{\"version\": 1, \"features\": [\"fail_errors\"], \"weights\": [], \"intercept\": 0, \"calibration\": "
		 "{\"method\": \"none\"}}", "one size", "features_and_weights_of_two_sizes_are_refused"},
		{"{\"version\": 1, \"features\": [], \"weights\": [], \"calibration\": {\"method\": \"none\"}}",
		 "intercept", "missing_intercept_is_refused"},
		{"{\"version\": 1, \"features\": [], \"weights\": [], \"intercept\": 0, \"calibration\": {\"method\": "
		 "\"magic\"}}", "magic", "unknown_calibration_is_named"},
		{"{\"version\": 1, \"features\": [], \"weights\": [], \"intercept\": 0, \"calibration\": {\"method\": "
		 "\"platt\", \"a\": 1}}", "Platt", "platt_without_b_is_refused"},
		{"{\"version\": 1, \"features\": [], \"weights\": [], \"intercept\": 0, \"calibration\": {\"method\": "
		 "\"isotonic\", \"x\": [0.5, 0.4], \"y\": [0.1, 0.2]}}", "increasing", "knots_out_of_order_are_refused"},
		{"{\"version\": 1, \"features\": [], \"weights\": [], \"intercept\": 0, \"calibration\": {\"method\": "
		 "\"isotonic\", \"x\": [0.1, 0.4], \"y\": [0.1, 1.2]}}", "within [0, 1]", "knot_outside_0_1_is_refused"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct confidence_scorer s;
		struct t2s_error err = {0};
		int rc = parse(cases[k].doc, &s, &err);
		TAP_OK(rc == -T2S_ERR_INVALID && strstr(err.message, cases[k].needle), cases[k].name);
	}
	struct confidence_scorer s;
	struct t2s_error err = {0};
	int rc = confidence_scorer_load("/nonexistent/confidence.json", &s, &err);
	TAP_OK(rc < 0 && strstr(err.message, "generate.confidence_file /nonexistent/confidence.json"),
	       "missing_weights_file_names_the_setting_and_path");
	const struct confidence_scorer *b = confidence_scorer_builtin(&err);
	double f[CONFIDENCE_FEATURES] = {0};
	TAP_OK(b != NULL, "built_in_weights_parse");
	double p = b ? confidence_probability(b, f) : -1;
	TAP_OK(p >= 0 && p <= 1, "built_in_scorer_gives_a_probability");
	if (b) {
		double bad[CONFIDENCE_FEATURES] = {[CF_FAIL_ERRORS] = 1, [CF_FAIL_REPEATS] = 1};
		double good[CONFIDENCE_FEATURES] = {[CF_BUILTIN_AGREES] = 1, [CF_VOTE_SHARE] = 1};
		TAP_OK(confidence_probability(b, bad) < confidence_probability(b, good),
		       "built_in_scorer_trusts_an_agreed_answer_more_than_a_flagged_one");
	}
}

/* The "builtin" member: the reading scorer over named features and its abstention threshold. */
static void test_builtin_part(void)
{
	struct confidence_scorer s;
	struct t2s_error err = {0};
	int rc = parse("{\"version\": 1, \"features\": [], \"weights\": [], \"intercept\": 0,"
		       " \"calibration\": {\"method\": \"none\"}, \"builtin\": {\"features\": [\"rule:count\", \"hand\"],"
		       " \"weights\": [1.5, 2], \"intercept\": -1, \"calibration\": {\"method\": \"none\"},"
		       " \"threshold\": 0.8}}", &s, &err);
	TAP_OK(rc == 0 && s.builtin.present && s.builtin.n == 2 && s.builtin.threshold == 0.8,
	       "builtin_part_parses_with_its_threshold");
	struct confidence_named_value v[] = {{"rule:count", 1}, {"hand", 0.5}, {"rule:never_fitted", 1}};
	/* z = -1 + 1.5 + 2 * 0.5 = 1.5; a name the file does not know weighs nothing. */
	TAP_OK(rc == 0 && fabs(confidence_named_probability(&s.builtin, v, 3) - sigmoid(1.5)) < 1e-12,
	       "builtin_probability_weighs_the_named_features_it_knows");
	rc = parse("{\"version\": 1, \"features\": [], \"weights\": [], \"intercept\": 0,"
		   " \"calibration\": {\"method\": \"none\"}}", &s, &err);
	TAP_OK(rc == 0 && !s.builtin.present, "without_a_builtin_part_the_builtin_is_not_scored");
	rc = parse("{\"version\": 1, \"features\": [], \"weights\": [], \"intercept\": 0,"
		   " \"calibration\": {\"method\": \"none\"}, \"builtin\": {\"features\": [\"hand\"], \"weights\": [1],"
		   " \"intercept\": 0, \"calibration\": {\"method\": \"none\"}, \"threshold\": 1.5}}", &s, &err);
	TAP_OK(rc == -T2S_ERR_INVALID && strstr(err.message, "builtin.threshold"), "builtin_threshold_outside_0_1_is_refused");
	rc = parse("{\"version\": 1, \"features\": [], \"weights\": [], \"intercept\": 0,"
		   " \"calibration\": {\"method\": \"none\"}, \"builtin\": {\"features\": [\"hand\"], \"weights\": [],"
		   " \"intercept\": 0, \"calibration\": {\"method\": \"none\"}, \"threshold\": 0.5}}", &s, &err);
	TAP_OK(rc == -T2S_ERR_INVALID && strstr(err.message, "'builtin'"), "builtin_features_and_weights_of_two_sizes_are_refused");
}

static void test_bands_and_reasons(void)
{
	struct confidence_bands b = confidence_bands_default;
	TAP_OK(strcmp(confidence_band(&b, 0.95), "high") == 0 && strcmp(confidence_band(&b, 0.9), "high") == 0 &&
		       strcmp(confidence_band(&b, 0.7), "medium") == 0 && strcmp(confidence_band(&b, 0.59), "low") == 0,
	       "default_bands_are_0_9_and_0_6");
	struct confidence_scorer s;
	struct t2s_error err = {0};
	int rc = parse("{\"version\": 1, \"features\": [\"fail_errors\", \"builtin_differs\", \"vote_share\"],"
		       " \"weights\": [-3, -1, 2], \"intercept\": 0, \"calibration\": {\"method\": \"none\"}}",
		       &s, &err);
	double f[CONFIDENCE_FEATURES] = {[CF_FAIL_ERRORS] = 2.0 / 3, [CF_BUILTIN_DIFFERS] = 1, [CF_VOTE_SHARE] = 1};
	json_t *r = rc == 0 ? confidence_reasons_json(&s, f) : NULL;
	const char *first = json_string_value(json_object_get(json_array_get(r, 0), "feature"));
	const char *second = json_string_value(json_object_get(json_array_get(r, 1), "feature"));
	/* -3 x 2/3 (fail_errors) before -1 (builtin_differs); vote_share raises it: no reason. */
	TAP_OK(json_array_size(r) == 2 && first && strcmp(first, "fail_errors") == 0 && second &&
		       strcmp(second, "builtin_differs") == 0,
	       "reasons_are_the_lowering_features_strongest_first");
	json_decref(r);
}

int main(void)
{
	test_calibrations();
	test_refusals();
	test_builtin_part();
	test_bands_and_reasons();
	return tap_done();
}
