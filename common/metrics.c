/*
 * metrics.c - Prometheus registry (see metrics.h).
 *
 * A family holds a linked list of series, one per distinct label-value
 * tuple, found by linear search under the family's mutex: the label spaces
 * here are small (routes x status classes, databases x states).  A series
 * whose labels cannot be stored is dropped rather than mis-attributed.
 */
#include "common/metrics.h"

#include "common/strbuf.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_MAX_LABELS 6
#define METRICS_MAX_SERIES 4096 /* per family: bounds memory if a label ever leaks user input */

const double metrics_latency_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
					   0.1,    0.25,  0.5,    1,     2.5,  5,     10,   30, 60};
const size_t metrics_latency_buckets_count = sizeof(metrics_latency_buckets) / sizeof(double);

struct metric_series {
	struct metric_series *next;
	char *labels[METRICS_MAX_LABELS];
	double value; /* counter/gauge value; histogram sum */
	unsigned long long count;
	unsigned long long *bucket_counts; /* histogram: per bucket, non-cumulative */
};

struct metric_family {
	struct metric_family *next;
	const char *name;
	const char *help;
	enum metric_kind kind;
	const char *const *label_names;
	size_t n_labels;
	const double *buckets;
	size_t n_buckets;
	size_t n_series;
	struct metric_series *series;
	pthread_mutex_t lock;
};

struct metric_collector {
	struct metric_collector *next;
	metrics_collector_fn fn;
	void *ctx;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct metric_family *families;
static struct metric_family **families_tail = &families;
static struct metric_collector *collectors;

struct metric_family *metrics_family(const char *name, const char *help, enum metric_kind kind,
				     const char *const *label_names, const double *buckets, size_t n_buckets)
{
	pthread_mutex_lock(&registry_lock);
	struct metric_family *f;
	for (f = families; f; f = f->next)
		if (strcmp(f->name, name) == 0)
			goto out;
	f = calloc(1, sizeof(*f));
	if (!f)
		goto out;
	f->name = name;
	f->help = help;
	f->kind = kind;
	f->label_names = label_names;
	while (label_names && label_names[f->n_labels] && f->n_labels < METRICS_MAX_LABELS)
		f->n_labels++;
	f->buckets = buckets;
	f->n_buckets = kind == METRIC_HISTOGRAM ? n_buckets : 0;
	pthread_mutex_init(&f->lock, NULL);
	*families_tail = f; /* keep registration order in the exposition */
	families_tail = &f->next;
out:
	pthread_mutex_unlock(&registry_lock);
	return f;
}

static bool labels_match(const struct metric_series *s, const char *const *values, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s->labels[i], values && values[i] ? values[i] : "") != 0)
			return false;
	return true;
}

static void series_free(struct metric_series *s, size_t n_labels)
{
	for (size_t i = 0; i < n_labels; i++)
		free(s->labels[i]);
	free(s->bucket_counts);
	free(s);
}

/* Find or create the series; call with f->lock held.  NULL when full or out of memory. */
static struct metric_series *series_get(struct metric_family *f, const char *const *values)
{
	for (struct metric_series *s = f->series; s; s = s->next)
		if (labels_match(s, values, f->n_labels))
			return s;
	if (f->n_series >= METRICS_MAX_SERIES)
		return NULL;
	struct metric_series *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	for (size_t i = 0; i < f->n_labels; i++) {
		s->labels[i] = strdup(values && values[i] ? values[i] : "");
		if (!s->labels[i]) {
			series_free(s, i);
			return NULL;
		}
	}
	if (f->n_buckets && !(s->bucket_counts = calloc(f->n_buckets, sizeof(*s->bucket_counts)))) {
		series_free(s, f->n_labels);
		return NULL;
	}
	s->next = f->series;
	f->series = s;
	f->n_series++;
	return s;
}

static void record(struct metric_family *f, const char *const *values, double v, int how)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	struct metric_series *s = series_get(f, values);
	if (s) {
		if (how == 0) {
			s->value += v;
		} else if (how == 1) {
			s->value = v;
		} else {
			s->value += v;
			s->count++;
			for (size_t i = 0; i < f->n_buckets; i++)
				if (v <= f->buckets[i]) {
					s->bucket_counts[i]++;
					break;
				}
		}
	}
	pthread_mutex_unlock(&f->lock);
}

void metrics_add(struct metric_family *f, const char *const *label_values, double v)
{
	record(f, label_values, v, 0);
}

void metrics_set(struct metric_family *f, const char *const *label_values, double v)
{
	record(f, label_values, v, 1);
}

void metrics_observe(struct metric_family *f, const char *const *label_values, double v)
{
	record(f, label_values, v, 2);
}

void metrics_add_collector(metrics_collector_fn fn, void *ctx)
{
	struct metric_collector *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->fn = fn;
	c->ctx = ctx;
	pthread_mutex_lock(&registry_lock);
	c->next = collectors;
	collectors = c;
	pthread_mutex_unlock(&registry_lock);
}

void metrics_remove_collectors(void *ctx)
{
	pthread_mutex_lock(&registry_lock);
	for (struct metric_collector **p = &collectors; *p;) {
		if ((*p)->ctx == ctx) {
			struct metric_collector *c = *p;
			*p = c->next;
			free(c);
		} else {
			p = &(*p)->next;
		}
	}
	pthread_mutex_unlock(&registry_lock);
}

static void add_escaped(struct strbuf *sb, const char *s, bool is_help)
{
	for (; *s; s++) {
		if (*s == '\\')
			strbuf_adds(sb, "\\\\");
		else if (*s == '\n')
			strbuf_adds(sb, "\\n");
		else if (*s == '"' && !is_help)
			strbuf_adds(sb, "\\\"");
		else
			strbuf_add(sb, s, 1);
	}
}

/* Writes `{a="x",b="y"` plus an optional extra label, closing brace included; labels with hide[i] set are left out. */
static void add_labels(struct strbuf *sb, const struct metric_family *f, const struct metric_series *s,
		       const bool *hide, const char *extra_name, const char *extra_value)
{
	size_t shown = 0;
	for (size_t i = 0; i < f->n_labels; i++)
		shown += !hide[i];
	if (shown == 0 && !extra_name)
		return;
	strbuf_adds(sb, "{");
	const char *sep = "";
	for (size_t i = 0; i < f->n_labels; i++) {
		if (hide[i])
			continue;
		strbuf_addf(sb, "%s%s=\"", sep, f->label_names[i]);
		add_escaped(sb, s->labels[i], false);
		strbuf_adds(sb, "\"");
		sep = ",";
	}
	if (extra_name)
		strbuf_addf(sb, "%s%s=\"%s\"", sep, extra_name, extra_value);
	strbuf_adds(sb, "}");
}

static void add_number(struct strbuf *sb, double v)
{
	if (isnan(v))
		strbuf_adds(sb, " NaN\n");
	else if (isinf(v))
		strbuf_adds(sb, v > 0 ? " +Inf\n" : " -Inf\n");
	else if (v == floor(v) && fabs(v) < 1e15)
		strbuf_addf(sb, " %.0f\n", v);
	else
		strbuf_addf(sb, " %.15g\n", v); /* 9 digits rounded epoch seconds to tens */
}

static void render_series(struct strbuf *sb, const struct metric_family *f, const struct metric_series *s,
			  const bool *hide)
{
	if (f->kind != METRIC_HISTOGRAM) {
		strbuf_adds(sb, f->name);
		add_labels(sb, f, s, hide, NULL, NULL);
		add_number(sb, s->value);
		return;
	}
	unsigned long long cumulative = 0;
	for (size_t i = 0; i < f->n_buckets; i++) {
		char le[32];
		cumulative += s->bucket_counts[i];
		snprintf(le, sizeof(le), "%g", f->buckets[i]);
		strbuf_addf(sb, "%s_bucket", f->name);
		add_labels(sb, f, s, hide, "le", le);
		add_number(sb, (double)cumulative);
	}
	strbuf_addf(sb, "%s_bucket", f->name);
	add_labels(sb, f, s, hide, "le", "+Inf");
	add_number(sb, (double)s->count);
	strbuf_addf(sb, "%s_sum", f->name);
	add_labels(sb, f, s, hide, NULL, NULL);
	add_number(sb, s->value);
	strbuf_addf(sb, "%s_count", f->name);
	add_labels(sb, f, s, hide, NULL, NULL);
	add_number(sb, (double)s->count);
}

/* Does series s agree with t on every label not hidden? */
static bool same_shown_labels(const struct metric_family *f, const struct metric_series *s,
			      const struct metric_series *t, const bool *hide)
{
	for (size_t i = 0; i < f->n_labels; i++)
		if (!hide[i] && strcmp(s->labels[i], t->labels[i]) != 0)
			return false;
	return true;
}

/* The family's series summed over the hidden labels, rendered; call with f->lock held. */
static void render_aggregate(struct strbuf *sb, const struct metric_family *f, const bool *hide)
{
	struct metric_series *sums = calloc(f->n_series ? f->n_series : 1, sizeof(*sums));
	size_t n = 0;
	for (const struct metric_series *s = f->series; s && sums; s = s->next) {
		size_t j = 0;
		while (j < n && !same_shown_labels(f, &sums[j], s, hide))
			j++;
		if (j == n) {
			memcpy(sums[n].labels, s->labels, sizeof(s->labels)); /* borrowed: freed with the family */
			if (f->n_buckets && !(sums[n].bucket_counts = calloc(f->n_buckets, sizeof(*sums[n].bucket_counts))))
				break;
			n++;
		}
		sums[j].value += s->value;
		sums[j].count += s->count;
		for (size_t b = 0; b < f->n_buckets; b++)
			sums[j].bucket_counts[b] += s->bucket_counts[b];
	}
	for (size_t j = 0; j < n; j++) {
		render_series(sb, f, &sums[j], hide);
		free(sums[j].bucket_counts);
	}
	free(sums);
}

static void render_family(struct strbuf *sb, struct metric_family *f, const struct metrics_view *v)
{
	static const char *const type_names[] = {"counter", "gauge", "histogram"};
	static const bool hide_none[METRICS_MAX_LABELS];
	bool hide[METRICS_MAX_LABELS] = {false}, any = false;
	for (size_t i = 0; v && v->labels && i < f->n_labels; i++)
		for (const char *const *l = v->labels; *l; l++)
			if (strcmp(f->label_names[i], *l) == 0)
				any = hide[i] = true;
	pthread_mutex_lock(&f->lock);
	strbuf_addf(sb, "# HELP %s ", f->name);
	add_escaped(sb, f->help, true);
	strbuf_addf(sb, "\n# TYPE %s %s\n", f->name, type_names[f->kind]);
	if (any && v->aggregate) {
		render_aggregate(sb, f, hide);
	} else {
		for (struct metric_series *s = f->series; s; s = s->next) {
			bool shown = true;
			for (size_t i = 0; any && v->show && i < f->n_labels && shown; i++)
				shown = !hide[i] || v->show(v->ctx, f->label_names[i], s->labels[i]);
			if (shown)
				render_series(sb, f, s, hide_none);
		}
	}
	pthread_mutex_unlock(&f->lock);
}

char *metrics_render(size_t *ret_len)
{
	return metrics_render_view(NULL, ret_len);
}

char *metrics_render_view(const struct metrics_view *view, size_t *ret_len)
{
	/* Collectors run outside the registry lock: they record into families. */
	pthread_mutex_lock(&registry_lock);
	size_t n = 0;
	for (struct metric_collector *c = collectors; c; c = c->next)
		n++;
	struct metric_collector *snapshot = n ? calloc(n, sizeof(*snapshot)) : NULL;
	size_t i = 0;
	for (struct metric_collector *c = collectors; c && snapshot; c = c->next)
		snapshot[i++] = *c;
	pthread_mutex_unlock(&registry_lock);
	for (size_t j = 0; j < i; j++)
		snapshot[j].fn(snapshot[j].ctx);
	free(snapshot);

	struct strbuf sb;
	strbuf_init(&sb, 256u << 20);
	pthread_mutex_lock(&registry_lock);
	for (struct metric_family *f = families; f; f = f->next)
		render_family(&sb, f, view);
	pthread_mutex_unlock(&registry_lock);
	return strbuf_detach(&sb, ret_len);
}

void metrics_shutdown(void)
{
	pthread_mutex_lock(&registry_lock);
	while (families) {
		struct metric_family *f = families;
		families = f->next;
		while (f->series) {
			struct metric_series *s = f->series;
			f->series = s->next;
			series_free(s, f->n_labels);
		}
		pthread_mutex_destroy(&f->lock);
		free(f);
	}
	families_tail = &families;
	while (collectors) {
		struct metric_collector *c = collectors;
		collectors = c->next;
		free(c);
	}
	pthread_mutex_unlock(&registry_lock);
}
