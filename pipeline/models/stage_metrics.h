/*
 * stage_metrics.h - the per-stage metrics every pipeline stage records:
 * step latency, model calls (by result), model tokens, cache lookups, and
 * requests whose time or token budget ran out.
 * Families are registered on first use.
 */
#ifndef T2S_STAGE_METRICS_H
#define T2S_STAGE_METRICS_H

#include "pipeline/models/model_client.h"

/* Latency of one step of a stage ("link", "retrieve"), in milliseconds. */
void stage_metrics_step(const char *stage, const char *step, double ms);
/* One model call of a stage: rc is its return value, stats may be NULL. */
void stage_metrics_model_call(const char *stage, int rc, const struct model_call_stats *stats);
/*
 * A request's budget stopped its work: kind is "time" or "tokens"
 * (text2sqld_budget_exhausted_total{kind}).
 */
void stage_metrics_budget_exhausted(const char *kind);
/* One answer of the main job, by the generator that wrote it ("model", "builtin"). */
void stage_metrics_answer(const char *generator);
/* An answer's confidence, by generator (text2sqld_answer_confidence, a histogram). */
void stage_metrics_confidence(const char *generator, double confidence);
/* An answer withheld below options.min_confidence (text2sqld_answers_abstained_total{generator}). */
void stage_metrics_abstained(const char *generator);
/* Create both budget series at 0, so that /metrics shows them before the first stop. */
void stage_metrics_budgets_init(void);

#endif
