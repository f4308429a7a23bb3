/*
 * confirm.c - a second reading of an answer that passed every check, where
 * passing answers are most often wrong (see generate_confirm,
 * generate_internal.h): a confirmation, then, when it disagrees, a choice
 * between the two readings, decided by the majority of the three answers.
 */
#include "pipeline/generate/generate_internal.h"


#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

static const char CONFIRM_ASK[] =
	"### Check\nThe query runs and passes every check. Read the question again, word by word: if the query "
	"answers exactly what it asks, repeat the query unchanged; otherwise write the corrected query as one %s "
	"SELECT statement in a ```sql fence.";
static const char CONFIRM_CHOOSE[] =
	"### Check\nThe two queries give different results. Answer with the one that answers the question "
	"exactly, repeated unchanged, or a corrected query, as one %s SELECT statement in a ```sql fence.";

/* Both ran and their results are equal (as row multisets, columns matched by content: vote.h). */
/* Whether a model was asked for a correction (a repair asks none) or a correction round is left to do. */
static bool model_corrected(const struct generate_job *j)
{
	for (size_t i = 0; i < j->n_tries; i++)
		if (j->tries[i].round > 0 && j->tries[i].reply)
			return true;
	return false;
}

/* The answer's corrections list the confirmation's statements as check "confirm". */
static int record(struct generate_job *j, const struct generate_try *t, bool chosen)
{
	json_t *c = json_pack("{s:i, s:s, s:i, s:s, s:s?, s:b, s:b}", "round", t->round, "check", "confirm", "level", 0,
			      "error", "", "sql", t->sql, "ok", t->v.failed < 0, "chosen", chosen);
	return json_array_append_new(j->corrections, c) ? -T2S_ERR_NOMEM : 0;
}

/* "```sql\n<sql>\n```" into *ret (the caller frees it); -T2S_ERR_NOMEM. */
static int fenced(const char *sql, char **ret)
{
	if (asprintf(ret, "```sql\n%s\n```", sql) < 0) {
		*ret = NULL;
		return -T2S_ERR_NOMEM;
	}
	return 0;
}

/*
 * Ask the debug model once more: the prompt, then each of shown[0..n) as an
 * assistant turn followed by CONFIRM_ASK (after the first) or CONFIRM_CHOOSE.
 * *ret: the new try, NULL when the model failed (the confirmation ends).
 */
static int ask_again(struct generate_job *j, const struct generate_try *const *shown, size_t n, int round,
		     struct generate_try **ret, struct t2s_error *err)
{
	*ret = NULL;
	if (generate_budget_spent(j) || j->n_tries == MAX_TRIES)
		return 0;
	const char *engine = j->schema->engine->dialect;
	struct model_message msgs[6];
	char *owned[4] = {0};
	size_t m = 0;
	int rc = 0;
	if (j->prompt.system)
		msgs[m++] = (struct model_message){"system", j->prompt.system};
	msgs[m++] = (struct model_message){"user", j->prompt.user};
	for (size_t i = 0; i < n && rc == 0; i++) {
		if ((rc = fenced(shown[i]->sql, &owned[2 * i])) < 0 ||
		    asprintf(&owned[2 * i + 1], i ? CONFIRM_CHOOSE : CONFIRM_ASK, engine) < 0) {
			rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
			break;
		}
		msgs[m++] = (struct model_message){"assistant", owned[2 * i]};
		msgs[m++] = (struct model_message){"user", owned[2 * i + 1]};
	}
	struct t2s_error e = {0};
	if (rc == 0 && (rc = generate_ask(j, "debug", msgs, m, round, ret, &e)) < 0 && rc != -T2S_ERR_NOMEM) {
		*ret = NULL; /* a failing model leaves the answer as it is */
		rc = 0;
	}
	if (rc == -T2S_ERR_NOMEM)
		t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < 4; i++)
		free(owned[i]);
	return rc;
}

/* Every try but the chosen one is turned down; the chosen one's entry says so. */
static int choose(struct generate_job *j, const struct generate_try *chosen, struct generate_try *second,
		  struct generate_try *third)
{
	for (size_t i = 0; i < j->n_tries; i++)
		j->tries[i].outvoted = &j->tries[i] != chosen;
	int rc = record(j, second, second == chosen);
	return rc == 0 && third ? record(j, third, false) : rc;
}

int generate_confirm(struct generate_job *j, const struct generate_try *answer, struct t2s_error *err)
{
	assert(!answer || (answer >= j->tries && answer < j->tries + j->n_tries && !answer->outvoted));
	int calls = j->env->options.confirm_calls;
	if (!answer || calls < 1 || j->n_candidates != 1 || j->max_rounds < 1 || answer->v.failed >= 0 ||
	    !answer->v.set_operation || !answer->sql || model_corrected(j))
		return 0;
	int round = answer->round + 1;
	struct generate_try *second = NULL, *third = NULL;
	int rc = ask_again(j, &answer, 1, round, &second, err);
	if (rc < 0 || !second)
		return rc;
	if (!second->sql || second->v.failed >= 0 || generate_same_result(second, answer) || calls < 2)
		return choose(j, answer, second, NULL);
	const struct generate_try *shown[2] = {answer, second};
	if ((rc = ask_again(j, shown, 2, round + 1, &third, err)) < 0)
		return rc;
	bool majority = third && third->sql && third->v.failed < 0 && generate_same_result(third, second) && !generate_same_result(third, answer);
	return choose(j, majority ? second : answer, second, third);
}
