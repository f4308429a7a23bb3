/*
 * builtin_lex.c - the lexing phase of a reading (see builtin_reader.h): the
 * question's words, numbers and person names (builtin_names.c), the spans
 * naming the schema and the stored values, ordering phrases taken back from
 * the names ("sorted by" beside a table "orders"), the words kept for a later
 * rule (reserved: "recent" after "most" is the superlative adjectives', the
 * word after "at" or "than" the comparisons', after "from" / "to" the
 * ordering's: the cue rules that run before them leave them), then its
 * rules: "report" opening a clause, the negated table (builtin_negation.c),
 * WordNet and linking synonyms for the words the schema never says
 * (builtin_synonyms.c), and the refusal of a question naming nothing.
 * After this phase the mention list is frozen: later phases only resolve
 * mentions, or drop one whose words they read.
 */
#include "pipeline/builtin/builtin_reader.h"

#include <string.h>
#include <strings.h>

/*
 * Words of an ordering phrase ("in descending order", "sorted by") are cue words, not names: a
 * table "orders" does not make "order" a name.  Mentions over them are dropped before the tables
 * are chosen.
 */
static void unmention_cues(struct reader *rd)
{
	struct bi_words *r = &rd->r;
	for (size_t i = 0; i < r->ws.n; i++) {
		size_t n = bi_order_phrase_at(&r->ws, i);
		/* "the number of": a count, not a column "number" (a column "number of rooms" is a longer name) */
		if (!n && question_words_phrase_at(&r->ws, i, "number of") && r->mention_at[i] >= 0 &&
		    r->mentions[r->mention_at[i]].len == 1 && r->mentions[r->mention_at[i]].table < 0)
			n = 1;
		for (size_t k = 0; k < n; k++) {
			if (r->mention_at[i + k] >= 0)
				bi_drop_mention(r, r->mention_at[i + k]);
		}
	}
}

/* Is w a word of some cue phrase (then it is not read as a schema name's synonym)? */
static bool cue_word(const char *w)
{
	return bi_filler_word(w) || bi_cue_phrase_word(w) || bi_link_word(w) || bi_comparison_word(w) ||
	       bi_order_cue_word(w);
}

/*
 * Words kept for a later rule by what stands right before them: the cue rules that run earlier leave them
 * (an order between rules written as data, not as an exception inside the earlier rule).
 */
static const struct {
	const char *rule;   /* the rule the word is kept for */
	const char *before; /* the words right before it */
} KEPT_AFTER[] = {
	{"comparisons", "at"},       /* "at least", "at most": not an aggregate */
	{"comparisons", "than"},     /* "larger than average" */
	{"comparisons", "than the"}, /* "larger than the average" */
	{"order", "from"},           /* "from highest to lowest": an ordering's direction */
	{"order", "to"},
	{"order", "from the"},
	{"order", "to the"},
};

/* rd->reserved: the words kept for a later rule (the cue rules read no reserved word). */
static void reserve_words(struct reader *rd)
{
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		/* "the most recent", "the most expensive": the superlative adjectives', not the most-rows cue's */
		if (bi_superlative_adjective_word(rd->r.ws.w[i])) {
			rd->reserved[i] = "superlative_adjectives";
			continue;
		}
		for (size_t k = 0; k < sizeof(KEPT_AFTER) / sizeof(KEPT_AFTER[0]) && !rd->reserved[i]; k++) {
			size_t n = question_phrase_words(KEPT_AFTER[k].before);
			if (i >= n && question_words_phrase_at(&rd->r.ws, i - n, KEPT_AFTER[k].before))
				rd->reserved[i] = KEPT_AFTER[k].rule;
		}
	}
}

/*
 * The lexer: words, numbers and person names; a question longer than the reader's words refused; the
 * names of the schema (too many refused) and the stored values; ordering phrases taken back from the
 * names; the words kept for a later rule.  BI_OUT_OF_MEMORY when the values' spans cannot be held.
 */
static enum bi_verdict lex_words(struct reader *rd)
{
	const struct builtin_input *in = rd->in;
	bi_split(in->question, &rd->r);
	bi_person_names(in->schema, &rd->r);
	if (rd->r.ws.truncated)
		return bi_refuse(rd, "too_long", "the question is longer than the built-in reads");
	if (bi_find_mentions(in->schema, &rd->r) < 0)
		return bi_refuse(rd, "too_many_names", "the question names more of the schema than the built-in reads");
	if (bi_find_values(in->evidence, in->wordnet, &rd->r) < 0)
		return BI_OUT_OF_MEMORY;
	unmention_cues(rd);
	reserve_words(rd);
	return BI_GOES_ON;
}

/* Does table t store word i as a value (case and a plural 's' aside: "professors" and 'Professor')? */
static bool stored_word(const struct reader *rd, size_t i, int t)
{
	const struct evidence_result *ev = rd->in->evidence;
	for (size_t v = 0; ev && v < ev->n_values; v++) {
		const char *x = ev->values[v].value, *w = rd->r.ws.w[i];
		size_t n = x ? strlen(x) : 0;
		if (ev->values[v].table == t && n > 0 &&
		    (strcasecmp(x, w) == 0 || (strncasecmp(x, w, n) == 0 && strcmp(w + n, "s") == 0)))
			return true;
	}
	return false;
}

/* "Report all majors ...", "For each cycle, report the number of ...": "report" opening a clause asks, like
   "show"; a schema name it may be gives way. */
static enum bi_verdict read_imperatives(struct reader *rd)
{
	struct bi_words *r = &rd->r;
	for (size_t i = 0; i < r->ws.n; i++) {
		if (strcmp(r->ws.w[i], "report") != 0 || !(i == 0 || rd->in->question[r->ws.end[i - 1]] == ','))
			continue;
		int o = r->mention_at[i];
		if (o >= 0 && r->mentions[o].len != 1)
			continue;
		if (o >= 0)
			bi_drop_mention(r, o);
		bi_mark(rd, i, 1);
	}
	return 0;
}

/* Words the schema never says: read as the table or column name WordNet gives as their synonym. */
static enum bi_verdict read_synonyms(struct reader *rd)
{
	struct bi_words *r = &rd->r;
	if (!rd->in->wordnet)
		return 0;
	for (size_t i = 0; i < r->ws.n; i++) {
		/* not words a rule read already ("never placed any"), nor the count in "the number of" */
		if (r->mention_at[i] >= 0 || r->is_number[i] || rd->read[i] || cue_word(r->ws.w[i]) ||
		    (question_words_phrase_at(&r->ws, i, "number of") && (i == 0 || r->mention_at[i - 1] < 0)))
			continue;
		bool in_value = false;
		for (size_t v = 0; v < r->n_values && !in_value; v++)
			in_value = (int)i >= r->values[v].start && (int)i < r->values[v].start + r->values[v].len;
		int pair = 0;
		if (!in_value && i + 1 < r->ws.n && !rd->read[i + 1] && !cue_word(r->ws.w[i + 1]))
			pair = bi_synonym_pair_mention(rd->s, rd->in->wordnet, rd->in->related, r, i);
		if (pair == 0 && !in_value && i + 1 < r->ws.n && !rd->read[i + 1] && !cue_word(r->ws.w[i + 1]))
			pair = bi_synonym_compound_mention(rd->s, rd->in->wordnet, rd->in->related, r, i);
		if (pair == 0 && !in_value)
			pair = bi_synonym_mention(rd->s, rd->in->wordnet, rd->in->related, r, i);
		if (pair < 0)
			return bi_refuse(rd, "too_many_names", "the question names more of the schema than the built-in reads");
		if (pair == 1 && r->mentions[r->mention_at[i]].table >= 0 && stored_word(rd, i, r->mentions[r->mention_at[i]].table))
			return bi_refuse(rd, "table_or_value", "'%s' is a synonym of a table and a value stored in it",
				      r->ws.w[i]);
	}
	bi_keep_named_tables(&rd->r);
	bi_extend_compounds(&rd->r);
	/* "gymnastics athletes" (athletes: gymnast): a word before a table's name sharing that name's stem
	   says the table again */
	for (size_t k = 0; k < r->n_mentions; k++) {
		struct bi_mention *m = &r->mentions[k];
		size_t b = (size_t)m->start;
		if (m->dropped || m->table < 0 || m->n_cands > 0 || b == 0 || r->mention_at[b - 1] >= 0 ||
		    r->is_number[b - 1] || rd->read[b - 1] || !bi_shares_stem(r->ws.w[b - 1], rd->s->tables[m->table].name))
			continue;
		bi_extend_mention_back(r, (int)k);
	}
	return 0;
}

/* After the synonyms: a question naming nothing of the schema, not even through a synonym, is refused. */
static enum bi_verdict need_names(struct reader *rd)
{
	for (size_t i = 0; i < rd->r.n_mentions; i++)
		if (!rd->r.mentions[i].dropped)
			return 0;
	return bi_refuse(rd, "no_names", "the question names no table or column of the schema");
}

static const struct bi_rule RULES[] = {
	{"words", lex_words},
	{"imperatives", read_imperatives},
	{"negated_table", bi_read_negated_table},
	{"synonyms", read_synonyms},
	{"need_names", need_names},
};

const struct bi_phase bi_lex_phase = {"lexing", RULES, sizeof(RULES) / sizeof(RULES[0])};
