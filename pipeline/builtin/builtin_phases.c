/*
 * builtin_phases.c - the reading's driver (see builtin_reader.h): the one
 * file that names the phases and runs them in order - lexing, tables, cues,
 * conditions, relations, the select list, the last words, then the rule that
 * makes the reading precise (every word is read, or the question is
 * refused) and the shape - and checks what must hold between them: after
 * lexing the mention list is frozen (later phases resolve mentions, and may
 * drop one only by reading its words), after the tables there is a main
 * table, the query's lists stay within their bounds.  It keeps the claims:
 * which rule read each word, for the result (answered or refused).
 */
#include "pipeline/builtin/builtin_reader.h"

#include "common/error.h"

#include <stdlib.h>
#include <string.h>

static const struct bi_phase *const PHASES[] = {
	&bi_lex_phase,      &bi_table_phase, &bi_cue_phase,  &bi_condition_phase,
	&bi_relation_phase, &bi_select_phase, &bi_last_phase, &bi_shape_phase,
};

const struct bi_phase *const *bi_phases(size_t *n)
{
	*n = sizeof(PHASES) / sizeof(PHASES[0]);
	return PHASES;
}

/* The mention list as lexing left it. */
struct frozen {
	size_t n;
	int start[BI_MAX_MENTIONS], len[BI_MAX_MENTIONS];
	bool dropped[BI_MAX_MENTIONS];
};

static void freeze(const struct reader *rd, struct frozen *f)
{
	f->n = rd->r.n_mentions;
	for (size_t k = 0; k < f->n; k++) {
		f->start[k] = rd->r.mentions[k].start;
		f->len[k] = rd->r.mentions[k].len;
		f->dropped[k] = rd->r.mentions[k].dropped;
	}
}

/* No mention added, moved or brought back since lexing; one dropped since only with its words read. */
static bool still_frozen(const struct reader *rd, const struct frozen *f)
{
	if (rd->r.n_mentions != f->n)
		return false;
	for (size_t k = 0; k < f->n; k++) {
		const struct bi_mention *m = &rd->r.mentions[k];
		if (m->start != f->start[k] || m->len != f->len[k] || (f->dropped[k] && !m->dropped))
			return false;
		for (int i = m->start; m->dropped && !f->dropped[k] && i < m->start + m->len; i++)
			if (!rd->read[i])
				return false;
	}
	return true;
}

/* What holds after every phase but lexing: the mentions frozen, the query's lists within bounds. */
static bool between_phases(const struct reader *rd, const struct frozen *f)
{
	const struct bi_query *q = rd->q;
	return still_frozen(rd, f) && q->n_select <= BI_MAX_SELECT && q->n_filters <= BI_MAX_FILTERS &&
	       q->n_more_aggs <= 3 && q->n_more_cols <= 3;
}

/* The rules of phase p in order, each named while it runs (bi_mark's claims, bi_refuse's rule). */
static enum bi_verdict run_phase(struct reader *rd, const struct bi_phase *p)
{
	for (size_t k = 0; k < p->n_rules; k++) {
		rd->rule = p->rules[k].name;
		enum bi_verdict v = p->rules[k].read(rd);
		if (v != BI_GOES_ON)
			return v;
	}
	return BI_GOES_ON;
}

/* A broken invariant: asserted in builds with assertions, refused in the others. */
static enum bi_verdict broken(struct reader *rd, const char *phase)
{
	rd->rule = phase;
	return bi_refuse(rd, "internal", "the reading broke an invariant after the %s phase", phase);
}

/* Every word read, or the question refused: the reading is precise. */
static enum bi_verdict every_word_read(struct reader *rd, bool quote)
{
	rd->rule = "every_word_read";
	/* a quote that is neither a stored value nor a text pattern */
	for (size_t k = 0; quote && k < rd->q->n_filters; k++)
		quote = strcmp(rd->q->filters[k].op, "LIKE") != 0;
	if (quote)
		return bi_refuse(rd, "unread_quote", "the question quotes something that is not a stored value");
	for (size_t i = 0; i < rd->r.ws.n; i++)
		if (!rd->read[i] && !bi_filler(rd, i))
			return bi_refuse(rd, "unread_word", "the built-in cannot read '%s' here", rd->r.ws.w[i]);
	return BI_GOES_ON;
}

static void keep_claims(const struct reader *rd, struct bi_claims *claims)
{
	claims->n = rd->r.ws.n;
	for (size_t i = 0; i < claims->n; i++) {
		memcpy(claims->word[i], rd->r.ws.w[i], sizeof(claims->word[i]));
		claims->rule[i] = rd->claim[i];
	}
}

int builtin_read(const struct builtin_input *in, struct bi_query *q, struct bi_refusal *why, struct bi_claims *claims)
{
	struct reader *rd = calloc(1, sizeof(*rd));
	struct frozen *frozen = malloc(sizeof(*frozen));
	bool *tables_read = NULL;
	if (rd && frozen && in->link && in->schema->n_tables > BI_WIDE_SCHEMA)
		tables_read = calloc(in->schema->n_tables, sizeof(*tables_read));
	if (!rd || !frozen || (in->link && in->schema->n_tables > BI_WIDE_SCHEMA && !tables_read)) {
		free(rd);
		free(frozen);
		return -T2S_ERR_NOMEM;
	}
	*rd = (struct reader){.in = in, .s = in->schema, .q = q, .why = why};
	*q = (struct bi_query){.table = -1, .join_table = -1, .bridge = -1, .counted_table = -1, .neg_table = -1};
	if (tables_read) {
		/* a wide schema: only the tables linking found are read (reading every name of thousands of
		   columns per word would cost tens of milliseconds) */
		for (size_t k = 0; k < in->link->n_tables; k++)
			if (in->link->tables[k].table >= 0 && (size_t)in->link->tables[k].table < in->schema->n_tables)
				tables_read[in->link->tables[k].table] = true;
		rd->r.tables_read = tables_read;
	}
	enum bi_verdict v = run_phase(rd, &bi_lex_phase);
	bool quote = rd->r.n_values == 0 && strpbrk(in->question, "\"\xe2");
	freeze(rd, frozen);
	if (v == BI_GOES_ON)
		v = run_phase(rd, &bi_table_phase);
	if (v == BI_GOES_ON && BI_NEVER(rd->q->table < 0 || (size_t)rd->q->table >= rd->s->n_tables ||
					  !between_phases(rd, frozen)))
		v = broken(rd, bi_table_phase.name);
	/* the phases after the tables; the last words are those no other rule read */
	const struct bi_phase *const reading[] = {&bi_cue_phase, &bi_condition_phase, &bi_relation_phase,
						  &bi_select_phase, &bi_last_phase};
	for (size_t p = 0; v == BI_GOES_ON && p < sizeof(reading) / sizeof(reading[0]); p++) {
		v = run_phase(rd, reading[p]);
		if (v == BI_GOES_ON && BI_NEVER(!between_phases(rd, frozen)))
			v = broken(rd, reading[p]->name);
	}
	if (v == BI_GOES_ON)
		v = every_word_read(rd, quote);
	if (v == BI_GOES_ON)
		v = run_phase(rd, &bi_shape_phase);
	if (claims)
		keep_claims(rd, claims);
	free(tables_read);
	free(frozen);
	free(rd);
	return v == BI_OUT_OF_MEMORY ? -T2S_ERR_NOMEM : v == BI_REFUSED ? BI_REFUSED_QUESTION : BI_ANSWERED;
}
