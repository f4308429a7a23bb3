/*
 * builtin.h - the built-in generator: SQL for the questions whose reading
 * is unambiguous, without a model (issue 17).
 *
 * From the question, the linked schema (link.h), the values the evidence
 * stage found (evidence.h: spelled as stored, with their columns) and the
 * schema, it reads the question word by word: schema names (tables and
 * columns, singular or plural), stored values, numbers, and English cue
 * phrases (counts from pipeline/text/question_cues.h; aggregates,
 * superlatives, comparisons, grouping, ordering, DISTINCT from the cue
 * tables of the phase files), in named phases of ordered rules
 * (builtin_reader.h); each word read is claimed by the rule that read it,
 * and the claims are part of the result.  A word the schema never says is read as the one
 * table or column name that is its WordNet synonym (singer for "vocalist"),
 * when exactly one is, else as the one schema word linking's related words
 * give for it (product for "goods").  Every word must be read: one it cannot place (other
 * than the few filler words) refuses the question.  It answers
 *
 *   count       SELECT count(*) | count(DISTINCT c) FROM t [WHERE ...]
 *   list        SELECT [DISTINCT] c, ... FROM t [WHERE ...] [ORDER BY c [DESC]]
 *   aggregate   SELECT avg|sum|min|max(c) FROM t [WHERE ...]
 *   superlative SELECT c, ... FROM t [WHERE ...] ORDER BY c DESC|ASC LIMIT 1
 *   group       SELECT g, count(*)|agg(c) FROM t [WHERE ...] GROUP BY g
 *
 *   most/having SELECT g | cols FROM t ... GROUP BY g | key ORDER BY count(*) LIMIT | HAVING count(*)
 *   intersect / except / union   two plain lists of two clauses (builtin_compound.c)
 *
 * with filters c = 'stored value', c != 'value', (c = 'a' OR c = 'b'),
 * c <op> number, c BETWEEN a AND b, key NOT IN (SELECT fk ...), over one
 * table, two tables one foreign key joins, or three through the table
 * between them (a bridge), when a value or a column lives in the other
 * ones; verbs relating the tables and superlative adjectives are read
 * through WordNet (builtin_relations.c, builtin_adjectives.c).  Anything else is
 * refused with a reason: a short code (builtin_result.refusal) and a
 * sentence.  Deterministic and pure: thread-safe, no I/O.
 *
 * Identifiers are quoted for the schema's engine (SQLite and PostgreSQL
 * both read "name"; a name is quoted when it is not a plain lower-case
 * identifier, or a reserved word), string literals with doubled quotes.
 */
#ifndef T2S_BUILTIN_H
#define T2S_BUILTIN_H

#include "pipeline/db/schema.h"
#include "pipeline/evidence/evidence.h"
#include "pipeline/link/link.h"
#include "pipeline/link/related_words.h"
#include "pipeline/text/question_cues.h"
#include "pipeline/text/wordnet.h"

#include <stdbool.h>

struct builtin_input {
	const char *question;
	const struct schema *schema;
	const struct link_result *link;         /* may be NULL: every table is a candidate */
	const struct evidence_result *evidence; /* may be NULL: no stored values */
	const struct wordnet *wordnet;          /* may be NULL: a word the schema never says is not read */
	const struct related_words *related;    /* the linking index's schema words for orphan words (WordNet
						   tiers, link/related_words.h); may be NULL */
};

#define BUILTIN_REASON_MAX 256

/* A claim: a word of the question (as read: lower case, cut to QUESTION_MAX_WORD - 1 bytes) and the rule
   that read it (static; NULL when no rule did: a filler word, or a word left unread by a refused reading). */
struct builtin_claim {
	char word[QUESTION_MAX_WORD];
	const char *rule;
};

struct builtin_result {
	char *sql;             /* malloc'd; NULL when refused */
	double confidence;     /* in [0, 1]; 0 when refused */
	const char *shape;     /* static: "count", "list", "aggregate", "superlative", "group", "most", "having",
				  "intersect", "except", "union"; NULL when refused */
	const char *refusal;   /* static code when refused, else NULL */
	char reason[BUILTIN_REASON_MAX]; /* the refusal's sentence */
	const char *refused_by; /* static: the rule (or the reading's step, "every_word_read") that refused;
				   NULL when answered */
	struct builtin_claim *claims; /* malloc'd: the question's words in order and the rule that read each, answered
					 or refused (of a set operation: the whole question's reading, which refused) */
	size_t n_claims;
	double ms;             /* time spent */
};

/*
 * Read in->question and write SQL, or refuse (builtin.c).  Returns 0
 * (answered or refused: see ret->refusal) or -T2S_ERR_NOMEM.  Release ret
 * with builtin_result_release (safe on a zeroed result).
 */
int builtin_generate(const struct builtin_input *in, struct builtin_result *ret) __attribute__((warn_unused_result));
void builtin_result_release(struct builtin_result *r);

#endif
