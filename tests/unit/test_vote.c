/*
 * test_vote.c - choosing among candidates by their results (vote.h): results
 * compared as row sets whatever the column order and float noise, partial
 * credit for a column more or less, the soft consensus weighted by
 * validation, and the tie-break.
 */
#include "tests/unit/tap.h"

#include "pipeline/generate/vote.h"

#include <jansson.h>
#include <math.h>

/* A result from JSON text: {"columns": [...], "rows": [[...], ...]}. */
static struct exec_result result(const char *json)
{
	json_t *j = json_loads(json, 0, NULL);
	struct exec_result r = {.columns = json_incref(json_object_get(j, "columns")),
				.rows = json_incref(json_object_get(j, "rows"))};
	r.row_count = (long)json_array_size(r.rows);
	json_decref(j);
	return r;
}

static void release(struct exec_result *r)
{
	json_decref(r->columns);
	json_decref(r->rows);
}

static bool near(double x, double want)
{
	return fabs(x - want) < 1e-9;
}

static void test_similarity(void)
{
	struct exec_result ab = result("{\"columns\":[\"a\",\"b\"],\"rows\":[[\"x\",1],[\"y\",2.5]]}");
	struct exec_result ba = result("{\"columns\":[\"b\",\"a\"],\"rows\":[[2.5000000001,\"y\"],[1.0,\"x\"]]}");
	struct exec_result a = result("{\"columns\":[\"a\"],\"rows\":[[\"y\"],[\"x\"]]}");
	struct exec_result other = result("{\"columns\":[\"a\",\"b\"],\"rows\":[[\"x\",1],[\"z\",3]]}");
	struct exec_result none = result("{\"columns\":[\"c\",\"d\"],\"rows\":[[\"p\",7]]}");
	struct exec_result empty = result("{\"columns\":[\"a\"],\"rows\":[]}");
	struct exec_result empty2 = result("{\"columns\":[\"n\"],\"rows\":[]}");
	struct exec_result text_number = result("{\"columns\":[\"a\",\"b\"],\"rows\":[[\"x\",\"1\"],[\"y\",\"2.50\"]]}");
	struct exec_result dup = result("{\"columns\":[\"a\"],\"rows\":[[\"x\"],[\"x\"],[\"y\"]]}");
	TAP_OK(near(vote_similarity(&ab, &ab), 1.0), "similarity_of_a_result_to_itself_is_1");
	TAP_OK(near(vote_similarity(&ab, &ba), 1.0), "column_order_row_order_float_noise_and_integral_reals_are_equal");
	TAP_OK(near(vote_similarity(&ab, &text_number), 1.0), "a_string_that_is_a_number_equals_the_number");
	TAP_OK(near(vote_similarity(&ab, &a), 0.5), "a_missing_column_gets_partial_credit");
	TAP_OK(near(vote_similarity(&ab, &other), 1.0 / 3.0), "rows_compared_by_jaccard");
	TAP_OK(near(vote_similarity(&ab, &none), 0.0), "results_sharing_no_value_score_0");
	TAP_OK(near(vote_similarity(&empty, &empty2), 1.0), "two_empty_results_are_equal");
	TAP_OK(near(vote_similarity(&empty, &a), 0.0), "empty_and_non_empty_score_0");
	TAP_OK(near(vote_similarity(&dup, &a), 2.0 / 3.0), "rows_are_a_multiset_duplicates_count");
	struct exec_result r1 = result("{\"columns\":[\"v\"],\"rows\":[[0.1]]}");
	struct exec_result r2 = result("{\"columns\":[\"v\"],\"rows\":[[0.1001]]}");
	TAP_OK(near(vote_similarity(&r1, &r2), 0.0), "reals_beyond_rounding_differ");
	release(&r1);
	release(&r2);
	release(&ab);
	release(&ba);
	release(&a);
	release(&other);
	release(&none);
	release(&empty);
	release(&empty2);
	release(&text_number);
	release(&dup);
}

static void test_selection(void)
{
	struct exec_result x = result("{\"columns\":[\"a\"],\"rows\":[[1],[2]]}");
	struct exec_result x_swapped = result("{\"columns\":[\"a\",\"b\"],\"rows\":[[2,\"q\"],[1,\"p\"]]}");
	struct exec_result y = result("{\"columns\":[\"a\"],\"rows\":[[3]]}");
	struct vote_tally t[16];
	size_t w = 99;

	/* Two agree, one differs, one did not run: the pair wins; the failed one gets nothing. */
	struct vote_candidate c1[] = {{&y, 3, 0, false, false, false, 0}, {&x, 3, 0, false, false, false, 0}, {NULL, 0, 0, false, false, false, 0}, {&x, 3, 0, false, false, false, 0}};
	TAP_OK(vote_select(c1, 4, NULL, 0, t, &w) == 0 && w == 1, "the_largest_group_of_equal_results_wins");
	TAP_INT_EQ(t[1].votes, 2, "votes_count_equal_results_itself_included");
	TAP_INT_EQ(t[2].votes, 0, "a_candidate_that_did_not_run_has_no_votes");
	TAP_OK(near(t[2].weight, 0) && near(t[2].consensus, 0), "a_candidate_that_did_not_run_has_no_voice");

	/* Soft: a candidate sharing half its columns with the others supports them partially. */
	struct vote_candidate c2[] = {{&y, 3, 0, false, false, false, 0}, {&x, 3, 0, false, false, false, 0}, {&x_swapped, 3, 0, false, false, false, 0}};
	TAP_OK(vote_select(c2, 3, NULL, 0, t, &w) == 0 && w == 1, "a_superset_result_lends_partial_support");
	TAP_OK(near(t[1].consensus, 1.5) && near(t[0].consensus, 1.0), "consensus_is_the_weighted_similarity_sum");

	/* A flagged candidate votes and is voted for less: two flagged agreeing lose to one valid alone... */
	struct vote_candidate c3[] = {{&y, 2, 0, false, false, false, 0}, {&x, 3, 0, false, false, false, 0}, {&y, 2, 0, false, false, false, 0}};
	TAP_OK(vote_select(c3, 3, NULL, 0, t, &w) == 0 && near(t[0].consensus, 2 * VOTE_FLAGGED_WEIGHT) &&
	       near(t[1].consensus, 1.0), "flagged_candidates_weigh_the_flagged_weight");
	TAP_OK(w == 1, "a_lone_valid_candidate_beats_two_flagged_ones");
	/* ...and enough flagged agreeing beat it. */
	struct vote_candidate c4[16];
	size_t k = (size_t)(1.0 / VOTE_FLAGGED_WEIGHT) + 1, n4 = 0;
	c4[n4++] = (struct vote_candidate){&x, 3, 0, false, false, false, 0};
	while (n4 <= k && n4 < 16)
		c4[n4++] = (struct vote_candidate){&y, 2, 0, false, false, false, 0};
	TAP_OK(vote_select(c4, n4, NULL, 0, t, &w) == 0 && w == 1, "agreeing_flagged_candidates_can_outvote_a_lone_valid_one");
	/* A consensus tie goes to the higher validation score. */
	struct vote_candidate c3b[] = {{&y, 2, 0, false, false, false, 0}, {&x, 2, 0, false, false, false, 0}, {&x, 3, 0, false, false, false, 0}};
	TAP_OK(vote_select(c3b, 3, NULL, 0, t, &w) == 0 && w == 2, "a_consensus_tie_goes_to_the_higher_validation_score");

	/* Ties: fewer warnings, then the first candidate. */
	struct vote_candidate c5[] = {{&y, 3, 0, false, false, false, 0}, {&x, 3, 0, false, false, false, 0}};
	TAP_OK(vote_select(c5, 2, NULL, 0, t, &w) == 0 && w == 0, "a_full_tie_goes_to_the_first_candidate");
	struct vote_candidate c6[] = {{&y, 3, 1, false, false, false, 0}, {&x, 3, 0, false, false, false, 0}};
	TAP_OK(vote_select(c6, 2, NULL, 0, t, &w) == 0 && w == 1 && near(t[0].weight, 0.9), "a_warning_lowers_the_weight");
	struct vote_candidate c7[] = {{NULL, 0, 0, false, false, false, 0}, {NULL, 0, 0, false, false, false, 0}};
	TAP_OK(vote_select(c7, 2, NULL, 0, t, &w) == 0 && w == 2, "no_winner_when_none_ran");

	/* Both sorting: equal rows in another order are another answer; unsorted ones agree with either. */
	struct exec_result up = result("{\"columns\":[\"a\"],\"rows\":[[1],[2],[3]]}");
	struct exec_result down = result("{\"columns\":[\"a\"],\"rows\":[[3],[2],[1]]}");
	struct vote_candidate c8[] = {{&up, 3, 0, true, false, false, 0}, {&down, 3, 0, true, false, false, 0}, {&down, 3, 0, true, false, false, 0}};
	TAP_OK(vote_select(c8, 3, NULL, 0, t, &w) == 0 && w == 1 && t[0].votes == 1 && t[1].votes == 2 &&
	       near(t[0].consensus, 1.0), "sorted_results_in_another_order_do_not_agree");
	struct vote_candidate c9[] = {{&up, 3, 0, true, false, false, 0}, {&down, 3, 0, false, false, false, 0}, {&down, 3, 0, true, false, false, 0}};
	TAP_OK(vote_select(c9, 3, NULL, 0, t, &w) == 0 && t[0].votes == 2 && t[1].votes == 3,
	       "an_unsorted_result_agrees_with_either_order");
	/*
	 * Repeats: a candidate flagged for repeated rows votes, with VOTE_REPAIRED_WEIGHT, for a valid
	 * candidate equal to its rows taken once each; two such outvote one valid different answer.
	 */
	struct exec_result twice = result("{\"columns\":[\"a\"],\"rows\":[[1],[2],[1]]}");
	struct exec_result same = result("{\"columns\":[\"a\"],\"rows\":[[7],[7]]}");
	struct exec_result seven = result("{\"columns\":[\"a\"],\"rows\":[[7]]}");
	struct vote_candidate c10[] = {{&y, 3, 0, false, false, false, 0},
				       {&up, 3, 0, false, false, false, 0},
				       {&twice, 2, 0, false, true, false, 0},
				       {&twice, 2, 0, false, true, false, 0}};
	struct exec_result once = result("{\"columns\":[\"a\"],\"rows\":[[2],[1]]}");
	c10[1].result = &once;
	TAP_OK(vote_select(c10, 4, NULL, 0, t, &w) == 0 && w == 1 && near(t[1].consensus, 1.0 + 2 * VOTE_REPAIRED_WEIGHT),
	       "repeated_rows_vote_for_the_result_without_the_repeats");
	TAP_OK(near(t[2].weight, VOTE_FLAGGED_WEIGHT) && t[2].consensus < t[1].consensus,
	       "a_candidate_flagged_for_repeats_keeps_its_flagged_weight_as_a_candidate");
	c10[2].repeats = c10[3].repeats = false;
	TAP_OK(vote_select(c10, 4, NULL, 0, t, &w) == 0 && near(t[1].consensus, 1.0 + 2 * VOTE_FLAGGED_WEIGHT * (2.0 / 3.0)),
	       "without_the_repeats_flag_they_vote_with_the_flagged_weight");
	struct vote_candidate c11[] = {{&y, 3, 0, false, false, false, 0}, {&seven, 3, 0, false, false, false, 0},
				       {&same, 2, 0, false, true, false, 0}, {&same, 2, 0, false, true, false, 0}};
	TAP_OK(vote_select(c11, 4, NULL, 0, t, &w) == 0 && near(t[1].consensus, 1.0 + 2 * VOTE_FLAGGED_WEIGHT * 0.5),
	       "one_row_repeated_is_not_repaired_by_the_vote");
	/*
	 * Scored: the answer scorer's probabilities are the weights; a likelier pair outweighs a
	 * larger unlikely group, ties go to the more probable candidate, evidence adds its weight.
	 */
	struct vote_candidate c12[] = {{&y, 3, 0, false, false, true, 0.9}, {&x, 3, 0, false, false, true, 0.2},
				       {&x, 3, 0, false, false, true, 0.2}, {&x, 3, 0, false, false, true, 0.2},
				       {&y, 3, 0, false, false, true, 0.1}};
	TAP_OK(vote_select(c12, 5, NULL, 0, t, &w) == 0 && w == 0 && near(t[0].consensus, 1.0) &&
		       near(t[1].consensus, 0.6) && t[1].votes == 3,
	       "scored_candidates_weigh_their_probabilities_not_their_number");
	c12[0].probability = 0.4;
	TAP_OK(vote_select(c12, 5, NULL, 0, t, &w) == 0 && w == 1 && near(t[0].consensus, 0.5),
	       "a_larger_group_wins_when_its_probabilities_add_up_to_more");
	struct vote_evidence ev = {&y, 0.5};
	TAP_OK(vote_select(c12, 5, &ev, 1, t, &w) == 0 && w == 0 && near(t[0].consensus, 1.0) &&
		       near(t[1].consensus, 0.6) && t[0].votes == 2,
	       "evidence_adds_its_weight_to_the_results_it_equals_without_a_vote");
	struct vote_candidate c13[] = {{&x, 3, 0, false, false, true, 0.2}, {&y, 3, 0, false, false, true, 0.3}};
	struct vote_evidence for_x = {&x, 0.1};
	TAP_OK(vote_select(c13, 2, &for_x, 1, t, &w) == 0 && near(t[0].consensus, t[1].consensus) && w == 1,
	       "a_scored_tie_goes_to_the_more_probable_candidate");
	release(&twice);
	release(&same);
	release(&seven);
	release(&once);
	release(&up);
	release(&down);
	release(&x);
	release(&x_swapped);
	release(&y);
}

int main(void)
{
	test_similarity();
	test_selection();
	return tap_done();
}
