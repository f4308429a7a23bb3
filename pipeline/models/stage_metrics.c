/*
 * stage_metrics.c - see stage_metrics.h.
 */
#include "pipeline/models/stage_metrics.h"

#include "common/metrics.h"

#include <pthread.h>

static struct metric_family *m_step, *m_calls, *m_tokens, *m_budget, *m_answers, *m_confidence, *m_abstained;

/* The confidence histogram's buckets: the probability an answer is right. */
static const double confidence_buckets[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99};
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void register_families(void)
{
	static const char *const step_labels[] = {"stage", "step", NULL};
	static const char *const call_labels[] = {"stage", "result", NULL};
	static const char *const token_labels[] = {"stage", "kind", "outcome", NULL};
	m_step = metrics_family("text2sqld_stage_step_duration_seconds", "Latency of pipeline steps by stage and step.",
				METRIC_HISTOGRAM, step_labels, metrics_latency_buckets, metrics_latency_buckets_count);
	m_calls = metrics_family("text2sqld_model_calls_total", "Model server calls by stage and result.",
				 METRIC_COUNTER, call_labels, NULL, 0);
	m_tokens = metrics_family("text2sqld_model_tokens_total", "Model tokens by stage, kind (prompt, completion) and outcome of the call.",
				  METRIC_COUNTER, token_labels, NULL, 0);
	static const char *const budget_labels[] = {"kind", NULL};
	m_budget = metrics_family("text2sqld_budget_exhausted_total",
				  "Generation requests whose time or model-token budget stopped them, by kind (time, tokens).",
				  METRIC_COUNTER, budget_labels, NULL, 0);
	static const char *const generator_labels[] = {"generator", NULL};
	m_answers = metrics_family("text2sqld_answers_total",
				   "Answers of /generate and /query by the generator that wrote their SQL (model, builtin).",
				   METRIC_COUNTER, generator_labels, NULL, 0);
	m_confidence = metrics_family("text2sqld_answer_confidence",
				      "Confidence (the calibrated probability that the answer is right) of the answers, by generator.",
				      METRIC_HISTOGRAM, generator_labels, confidence_buckets,
				      sizeof(confidence_buckets) / sizeof(confidence_buckets[0]));
	m_abstained = metrics_family("text2sqld_answers_abstained_total",
				     "Answers withheld because their confidence was below the request's min_confidence, by generator.",
				     METRIC_COUNTER, generator_labels, NULL, 0);
}

void stage_metrics_step(const char *stage, const char *step, double ms)
{
	pthread_once(&once, register_families);
	const char *labels[] = {stage, step, NULL};
	metrics_observe(m_step, labels, ms / 1000.0);
}

void stage_metrics_model_call(const char *stage, int rc, const struct model_call_stats *stats)
{
	pthread_once(&once, register_families);
	const char *result = rc == 0 ? "ok" : t2s_code_slug((enum t2s_code)-rc);
	const char *labels[] = {stage, result, NULL};
	metrics_add(m_calls, labels, 1);
	if (stats) {
		const char *p[] = {stage, "prompt", result, NULL};
		const char *c[] = {stage, "completion", result, NULL};
		metrics_add(m_tokens, p, (double)stats->prompt_tokens);
		metrics_add(m_tokens, c, (double)stats->completion_tokens);
	}
}

void stage_metrics_budget_exhausted(const char *kind)
{
	pthread_once(&once, register_families);
	const char *labels[] = {kind, NULL};
	metrics_add(m_budget, labels, 1);
}

void stage_metrics_answer(const char *generator)
{
	pthread_once(&once, register_families);
	const char *labels[] = {generator, NULL};
	metrics_add(m_answers, labels, 1);
}

void stage_metrics_confidence(const char *generator, double confidence)
{
	pthread_once(&once, register_families);
	const char *labels[] = {generator, NULL};
	metrics_observe(m_confidence, labels, confidence);
}

void stage_metrics_abstained(const char *generator)
{
	pthread_once(&once, register_families);
	const char *labels[] = {generator, NULL};
	metrics_add(m_abstained, labels, 1);
}

void stage_metrics_budgets_init(void)
{
	pthread_once(&once, register_families);
	const char *t[] = {"time", NULL}, *k[] = {"tokens", NULL};
	metrics_add(m_budget, t, 0);
	metrics_add(m_budget, k, 0);
}
