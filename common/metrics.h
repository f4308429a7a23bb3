/*
 * metrics.h - the process-wide Prometheus metrics registry.
 *
 * Families are registered once (at start-up, or lazily by the module that
 * owns them) and live until metrics_shutdown.  Recording is thread-safe.
 * metrics_render produces the text exposition format (version 0.0.4).
 * Collectors registered with metrics_add_collector run at every scrape to
 * refresh gauges that are cheaper to read than to track (pool sizes).
 *
 * Label values are given as a NULL-terminated array matching the family's
 * label names in order.
 */
#ifndef T2S_METRICS_H
#define T2S_METRICS_H

#include <stdbool.h>
#include <stddef.h>

enum metric_kind { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

struct metric_family;

/*
 * Find or create a family.  label_names is NULL-terminated (may be NULL for
 * none); buckets (ascending upper bounds, without +Inf) only for histograms.
 * The strings must be static.  Returns NULL only when out of memory; every
 * recording function accepts a NULL family and does nothing.
 */
struct metric_family *metrics_family(const char *name, const char *help, enum metric_kind kind,
				     const char *const *label_names, const double *buckets, size_t n_buckets);

void metrics_add(struct metric_family *f, const char *const *label_values, double v);
void metrics_set(struct metric_family *f, const char *const *label_values, double v);
void metrics_observe(struct metric_family *f, const char *const *label_values, double v);

/* Default latency buckets in seconds (0.5 ms .. 60 s). */
extern const double metrics_latency_buckets[];
extern const size_t metrics_latency_buckets_count;

typedef void (*metrics_collector_fn)(void *ctx);
void metrics_add_collector(metrics_collector_fn fn, void *ctx);
/* Remove every collector registered with ctx (before ctx is freed). */
void metrics_remove_collectors(void *ctx);

/* The exposition text, malloc'd (caller frees), or NULL when out of memory. */
char *metrics_render(size_t *ret_len);

/*
 * What one scrape shows of the series carrying a label of view->labels
 * (NULL-terminated, e.g. {"database", NULL}):
 *   aggregate  every such label dropped, series equal in their other labels
 *              summed (counters, gauges, histograms bucket by bucket);
 *   else       a series is shown when show(ctx, label, value) accepts each
 *              of its labels in view->labels (show NULL: every series).
 * Families without those labels are shown whole.
 */
struct metrics_view {
	const char *const *labels;
	bool aggregate;
	bool (*show)(void *ctx, const char *label, const char *value);
	void *ctx;
};

/* As metrics_render, seen through view (NULL: everything). */
char *metrics_render_view(const struct metrics_view *view, size_t *ret_len);

/* Free every family and collector (at process exit). */
void metrics_shutdown(void);

#endif
