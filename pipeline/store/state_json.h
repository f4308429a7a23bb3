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
/*
 * One page: {database, examples: [...], total, limit, offset, truncated,
 * next_offset}.  Items stop before the one that would take the rendered
 * page past max_bytes (the first is always shown); truncated is true when
 * the page holds fewer than limit items while more follow (the store's or
 * this bound stopped it), next_offset the offset of the next page (null at
 * the end).
 */
json_t *state_examples_page_json(const char *database, const struct state_examples *l, long limit, long offset,
				 size_t max_bytes);
/* {id, database, question, sql, correct, note, example_id, created_at} */
json_t *state_feedback_json(const struct state_feedback *f);
/* {feedback: [...], total, limit, offset, truncated, next_offset}: one page, as state_examples_page_json. */
json_t *state_feedbacks_page_json(const struct state_feedbacks *l, long limit, long offset, size_t max_bytes);
/* {database, overrides: [{table, column, text, updated_at}]} */
json_t *state_overrides_json(const char *database, const struct state_overrides *l);

#endif
