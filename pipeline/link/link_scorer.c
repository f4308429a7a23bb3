/*
 * link_scorer.c - the learned column scorer's weights: parsing the weights
 * document, the copy built into the binary, and the probability of a column
 * (see link_scorer.h).
 */
#include "pipeline/link/link_scorer.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* data/link_scorer.json, embedded by meson (scripts/embed_file.py). */
extern const char embedded_link_scorer_json[];
extern const size_t embedded_link_scorer_json_len;

const char *const link_feature_names[LINK_FEATURES] = {
	[LF_SCORE] = "score",
	[LF_SCORE_REL] = "score_rel",
	[LF_SCORE_TABLE_REL] = "score_table_rel",
	[LF_TABLE_BEST] = "table_best",
	[LF_RANK_INV] = "rank_inv",
	[LF_MENTION_FULL] = "mention_full",
	[LF_MENTION_PART] = "mention_part",
	[LF_STAND_IN] = "stand_in",
	[LF_LABEL] = "label",
	[LF_VALUE] = "value",
	[LF_PRIMARY_KEY] = "primary_key",
	[LF_FOREIGN_KEY] = "foreign_key",
	[LF_SHARED_NAME] = "shared_name",
	[LF_TABLE_REL] = "table_rel",
	[LF_TABLE_NAMED] = "table_named",
	[LF_TABLE_LOG_COLUMNS] = "table_log_columns",
	[LF_NUMERIC] = "numeric",
};

const char *const link_table_feature_names[LINK_TABLE_FEATURES] = {
	[LTF_SCORE] = "score",
	[LTF_SCORE_REL] = "score_rel",
	[LTF_RANK_INV] = "rank_inv",
	[LTF_TOP3_REL] = "top3_rel",
	[LTF_SCORE_RULE] = "score_rule",
	[LTF_MENTION_FULL] = "mention_full",
	[LTF_MENTION_PART] = "mention_part",
	[LTF_STAND_IN] = "stand_in",
	[LTF_VALUE] = "value",
	[LTF_STAND_IN_NAME] = "stand_in_name",
	[LTF_FAR_NAME] = "far_name",
	[LTF_KEYED_FIRM] = "keyed_firm",
	[LTF_BRIDGE] = "bridge",
	[LTF_NO_FIRM] = "no_firm",
	[LTF_FIRM_LOG] = "firm_log",
	[LTF_LOG_COLUMNS] = "log_columns",
};

/* A finite number member of o into *ret, or an error naming it. */
static int finite_member(json_t *o, const char *name, const char *what, double *ret, struct t2s_error *err)
{
	json_t *v = json_object_get(o, name);
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: '%s' must be a finite number", what, name);
	*ret = json_number_value(v);
	return 0;
}

/*
 * o's "features" (exactly names[0..n), in order) and "weights" (n finite
 * numbers) into w[], then its "intercept" and "threshold" (within [0, 1]).
 * what names the document in errors (prefix: "tables." for the table part).
 */
static int parse_weights(json_t *o, const char *what, const char *prefix, const char *const *names, size_t n,
			 double *w, double *intercept, double *threshold, struct t2s_error *err)
{
	json_t *fv = json_object_get(o, "features"), *wv = json_object_get(o, "weights");
	if (!json_is_array(fv) || !json_is_array(wv) || json_array_size(fv) != n || json_array_size(wv) != n)
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: '%sfeatures' and '%sweights' must be arrays of %zu entries",
				     what, prefix, prefix, n);
	for (size_t k = 0; k < n; k++) {
		const char *name = json_string_value(json_array_get(fv, k));
		json_t *x = json_array_get(wv, k);
		if (!name || strcmp(name, names[k]) != 0)
			return t2s_error_set(err, T2S_ERR_INVALID, "%s: %sfeature %zu must be '%s'", what, prefix, k,
					     names[k]);
		if (!json_is_number(x) || !isfinite(json_number_value(x)))
			return t2s_error_set(err, T2S_ERR_INVALID, "%s: the weight of %s'%s' must be a finite number",
					     what, prefix, name);
		w[k] = json_number_value(x);
	}
	char im[32], th[32];
	snprintf(im, sizeof(im), "%sintercept", prefix);
	snprintf(th, sizeof(th), "%sthreshold", prefix);
	int rc = finite_member(o, "intercept", what, intercept, err);
	if (rc < 0 && *prefix)
		rc = t2s_error_set(err, T2S_ERR_INVALID, "%s: '%s' must be a finite number", what, im);
	if (rc == 0 && (rc = finite_member(o, "threshold", what, threshold, err)) < 0 && *prefix)
		rc = t2s_error_set(err, T2S_ERR_INVALID, "%s: '%s' must be a finite number", what, th);
	if (rc == 0 && (*threshold < 0 || *threshold > 1))
		rc = t2s_error_set(err, T2S_ERR_INVALID, "%s: '%s' must be within [0, 1]", what, th);
	return rc;
}

/* The optional "tables" member: the table scorer (absent: s->present stays false). */
static int parse_tables(json_t *doc, const char *what, struct link_table_scorer *s, struct t2s_error *err)
{
	json_t *o = json_object_get(doc, "tables");
	if (!o)
		return 0;
	if (!json_is_object(o))
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: 'tables' must be an object", what);
	int rc = parse_weights(o, what, "tables.", link_table_feature_names, LINK_TABLE_FEATURES, s->weights,
			       &s->intercept, &s->threshold, err);
	s->present = rc == 0;
	return rc;
}

static int parse_doc(json_t *doc, const char *what, struct link_scorer *ret, struct t2s_error *err)
{
	struct link_scorer s = {0};
	if (!json_is_object(doc))
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: not a JSON object", what);
	if (json_integer_value(json_object_get(doc, "version")) != 1)
		return t2s_error_set(err, T2S_ERR_INVALID, "%s: 'version' must be 1", what);
	int rc = parse_weights(doc, what, "", link_feature_names, LINK_FEATURES, s.weights, &s.intercept,
			       &s.threshold, err);
	if (rc == 0)
		rc = parse_tables(doc, what, &s.tables, err);
	if (rc == 0)
		*ret = s;
	return rc;
}

int link_scorer_parse(const char *json, size_t len, struct link_scorer *ret, struct t2s_error *err)
{
	json_error_t je;
	json_t *doc = json_loadb(json, len, 0, &je);
	if (!doc)
		return t2s_error_set(err, T2S_ERR_INVALID, "link scorer weights: not JSON (line %d: %s)", je.line, je.text);
	int rc = parse_doc(doc, "link scorer weights", ret, err);
	json_decref(doc);
	return rc;
}

int link_scorer_load(const char *path, struct link_scorer *ret, struct t2s_error *err)
{
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	if (!doc)
		return t2s_error_set(err, T2S_ERR_INVALID, "link.scorer_file %s: %s (line %d)", path, je.text, je.line);
	char what[300];
	snprintf(what, sizeof(what), "link.scorer_file %.256s", path);
	int rc = parse_doc(doc, what, ret, err);
	json_decref(doc);
	return rc;
}

static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
static struct link_scorer builtin;
static struct t2s_error builtin_err;
static int builtin_rc;

static void parse_builtin(void)
{
	builtin_rc = link_scorer_parse(embedded_link_scorer_json, embedded_link_scorer_json_len, &builtin, &builtin_err);
}

const struct link_scorer *link_scorer_builtin(struct t2s_error *err)
{
	pthread_once(&builtin_once, parse_builtin);
	if (builtin_rc < 0) {
		if (err)
			*err = builtin_err;
		return NULL;
	}
	return &builtin;
}

double link_scorer_probability(const struct link_scorer *s, const double f[LINK_FEATURES])
{
	double z = s->intercept;
	for (size_t k = 0; k < LINK_FEATURES; k++)
		z += s->weights[k] * f[k];
	return 1.0 / (1.0 + exp(-z));
}

double link_table_scorer_probability(const struct link_table_scorer *s, const double f[LINK_TABLE_FEATURES])
{
	if (!s->present)
		return 0;
	double z = s->intercept;
	for (size_t k = 0; k < LINK_TABLE_FEATURES; k++)
		z += s->weights[k] * f[k];
	return 1.0 / (1.0 + exp(-z));
}
