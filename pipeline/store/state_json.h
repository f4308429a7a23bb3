/*
 * state_json.h - the one JSON form of each stored record (examples,
 * feedback, description overrides), as the state endpoints answer them.
 * Every function returns a new reference (NULL only when out of memory).
 */
#ifndef T2S_STATE_JSON_H
#define T2S_STATE_JSON_H

#include "pipeline/store/state_store.h"

#include <jansson.h>

/* {id, question, sql, created_at} */
json_t *state_example_json(const struct state_example *e);
/* {database, examples: [...], total, limit, offset}: one page of examples. */
json_t *state_examples_page_json(const char *database, const struct state_examples *l, long limit, long offset);
/* {id, database, question, sql, correct, note, example_id, created_at} */
json_t *state_feedback_json(const struct state_feedback *f);
/* {feedback: [...], total, limit, offset}: one page of feedback. */
json_t *state_feedbacks_page_json(const struct state_feedbacks *l, long limit, long offset);
/* {database, overrides: [{table, column, text, updated_at}]} */
json_t *state_overrides_json(const char *database, const struct state_overrides *l);

#endif
