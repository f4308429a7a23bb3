/*
 * test_steiner.c - Steiner trees: hand-made graphs with known answers
 * (bridge nodes, a cheap Steiner point, pruning, disconnected and duplicate
 * terminals), seeded random graphs checked against a brute-force optimum,
 * and one large graph of the size of a big schema (its time is printed as a
 * TAP comment, not asserted).
 */
#define _POSIX_C_SOURCE 199309L
#include "pipeline/link/steiner.h"
#include "tests/unit/tap.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool has_node(const struct steiner_result *r, int v)
{
	for (size_t i = 0; i < r->n_nodes; i++)
		if (r->nodes[i] == v)
			return true;
	return false;
}

static bool has_edge(const struct steiner_result *r, size_t e)
{
	for (size_t i = 0; i < r->n_edges; i++)
		if (r->edges[i] == e)
			return true;
	return false;
}

static int uf_find(int *uf, int x)
{
	while (uf[x] != x)
		x = uf[x] = uf[uf[x]];
	return x;
}

/*
 * Structural checks of a result on graph g: the edges form a forest over
 * exactly the reported nodes, every reported terminal is a node, every leaf
 * is a terminal, terminals of one group share a tree and terminals of
 * different groups do not, and cost is the sum of the edges.
 */
static bool result_is_valid(const struct steiner_graph *g, const struct steiner_result *r)
{
	int *uf = malloc((size_t)g->n_nodes * sizeof(int));
	int *deg = calloc((size_t)g->n_nodes, sizeof(int));
	bool ok = uf && deg;
	double cost = 0.0;

	for (int v = 0; ok && v < g->n_nodes; v++)
		uf[v] = v;
	for (size_t i = 0; ok && i < r->n_edges; i++) {
		const struct steiner_edge *e = &g->edges[r->edges[i]];
		int a = uf_find(uf, e->u), b = uf_find(uf, e->v);
		if (a == b || !has_node(r, e->u) || !has_node(r, e->v))
			ok = false;  /* cycle, or an endpoint not reported */
		uf[a] = b;
		deg[e->u]++;
		deg[e->v]++;
		cost += e->cost;
	}
	for (size_t i = 0; ok && i < r->n_nodes; i++) {
		int v = r->nodes[i];
		bool is_term = false;
		for (size_t t = 0; t < r->n_terminals; t++)
			is_term |= r->terminals[t] == v;
		if (!is_term && deg[v] < 2)
			ok = false;  /* non-terminal leaf or isolated bridge */
	}
	for (size_t t = 0; ok && t < r->n_terminals; t++) {
		if (!has_node(r, r->terminals[t]))
			ok = false;
		for (size_t u = 0; ok && u < r->n_terminals; u++) {
			bool same_tree = uf_find(uf, r->terminals[t]) == uf_find(uf, r->terminals[u]);
			if (same_tree != (r->groups[t] == r->groups[u]))
				ok = false;
		}
	}
	/* Nodes = edges + number of trees (a forest), counted over reported nodes. */
	size_t trees = 0;
	for (size_t i = 0; ok && i < r->n_nodes; i++)
		trees += uf_find(uf, r->nodes[i]) == r->nodes[i];
	if (ok && r->n_nodes != r->n_edges + trees)
		ok = false;
	if (ok && fabs(cost - r->cost) > 1e-9)
		ok = false;
	free(uf);
	free(deg);
	return ok;
}

/* Optimal Steiner tree cost by enumerating node sets (n <= 20); INFINITY if disconnected. */
static double brute_force_optimum(const struct steiner_graph *g, const int *terms, size_t nt)
{
	uint32_t must = 0;
	double best = INFINITY;
	int uf[32];

	for (size_t i = 0; i < nt; i++)
		must |= 1u << terms[i];
	for (uint32_t set = 0; set < (1u << g->n_nodes); set++) {
		if ((set & must) != must)
			continue;
		/* Kruskal on the induced subgraph: simple O(E^2) selection. */
		bool *used = calloc(g->n_edges + 1, sizeof(bool));
		double cost = 0.0;
		int comps = __builtin_popcount(set);
		for (int v = 0; v < g->n_nodes; v++)
			uf[v] = v;
		for (;;) {
			size_t pick = SIZE_MAX;
			for (size_t e = 0; e < g->n_edges; e++) {
				const struct steiner_edge *E = &g->edges[e];
				if (used[e] || !(set >> E->u & 1) || !(set >> E->v & 1))
					continue;
				if (pick == SIZE_MAX || E->cost < g->edges[pick].cost)
					pick = e;
			}
			if (pick == SIZE_MAX)
				break;
			used[pick] = true;
			int a = uf_find(uf, g->edges[pick].u), b = uf_find(uf, g->edges[pick].v);
			if (a != b) {
				uf[a] = b;
				cost += g->edges[pick].cost;
				comps--;
			}
		}
		free(used);
		if (comps == 1 && cost < best)
			best = cost;
	}
	return best;
}

static void test_single_terminal(void)
{
	struct steiner_graph g;
	struct steiner_result r;
	int t[] = {2};

	TAP_SETUP(steiner_graph_init(&g, 4));
	TAP_SETUP(steiner_graph_add_edge(&g, 0, 1, 1.0, 0));
	TAP_SETUP(steiner_graph_add_edge(&g, 1, 2, 1.0, 1));
	TAP_SETUP(steiner_graph_add_edge(&g, 2, 3, 1.0, 2));
	TAP_INT_EQ(steiner_kmb(&g, t, 1, &r, NULL), 0, "single_terminal_succeeds");
	TAP_OK(r.n_edges == 0 && r.n_nodes == 1 && r.nodes[0] == 2 && r.cost == 0.0,
	       "single_terminal_gives_node_without_edges");
	TAP_OK(r.n_unreached == 0 && r.n_groups == 1, "single_terminal_is_its_own_group");
	steiner_result_release(&r);

	TAP_INT_EQ(steiner_kmb(&g, NULL, 0, &r, NULL), 0, "no_terminals_succeeds");
	TAP_OK(r.n_edges == 0 && r.n_nodes == 0 && r.edges == NULL, "no_terminals_gives_empty_tree");
	steiner_result_release(&r);
	steiner_graph_release(&g);
}

static void test_adjacent_terminals(void)
{
	struct steiner_graph g;
	struct steiner_result r;
	int t[] = {0, 1};

	TAP_SETUP(steiner_graph_init(&g, 3));
	TAP_SETUP(steiner_graph_add_edge(&g, 0, 2, 0.3, 10));
	TAP_SETUP(steiner_graph_add_edge(&g, 0, 1, 0.7, 11));  /* parallel edges: the cheaper serves */
	TAP_SETUP(steiner_graph_add_edge(&g, 1, 0, 0.5, 12));
	TAP_SETUP(steiner_graph_add_edge(&g, 2, 1, 0.3, 13));  /* 0-2-1 costs 0.6 > 0.5 */
	TAP_SETUP(steiner_graph_add_edge(&g, 1, 1, 0.0, 14));  /* self-loop: never used */
	TAP_INT_EQ(steiner_kmb(&g, t, 2, &r, NULL), 0, "adjacent_terminals_succeed");
	TAP_OK(r.n_edges == 1 && r.edges[0] == 2 && g.edges[r.edges[0]].tag == 12,
	       "adjacent_terminals_use_cheapest_parallel_edge");
	TAP_OK(r.n_nodes == 2 && !has_node(&r, 2), "adjacent_terminals_bring_no_bridge");
	TAP_OK(fabs(r.cost - 0.5) < 1e-12, "adjacent_terminals_cost_is_edge_cost");
	steiner_result_release(&r);
	steiner_graph_release(&g);
}

/* A - AB - B: the link node between two terminals (a many-to-many table). */
static void test_bridge_node(void)
{
	enum { A, LINK, B, OTHER, N };
	struct steiner_graph g;
	struct steiner_result r;
	int t[] = {A, B};

	TAP_SETUP(steiner_graph_init(&g, N));
	TAP_SETUP(steiner_graph_add_edge(&g, A, LINK, 0.2, 100));   /* declared keys: cheap */
	TAP_SETUP(steiner_graph_add_edge(&g, LINK, B, 0.2, 101));
	TAP_SETUP(steiner_graph_add_edge(&g, A, B, 0.9, 102));      /* weak inferred edge */
	TAP_SETUP(steiner_graph_add_edge(&g, A, OTHER, 0.1, 103));
	TAP_SETUP(steiner_graph_add_edge(&g, OTHER, B, 0.8, 104));
	TAP_INT_EQ(steiner_kmb(&g, t, 2, &r, NULL), 0, "bridge_query_succeeds");
	TAP_OK(has_node(&r, LINK) && !has_node(&r, OTHER), "includes_bridge_node_between_terminals");
	TAP_OK(r.n_edges == 2 && g.edges[r.edges[0]].tag == 100 && g.edges[r.edges[1]].tag == 101,
	       "bridge_edges_map_back_to_caller_tags");
	TAP_OK(result_is_valid(&g, &r), "bridge_result_is_a_tree");
	steiner_result_release(&r);
	steiner_graph_release(&g);
}

/* Three terminals around a centre: spokes cost 1, rim edges cost rim. */
static void star(struct steiner_graph *g, double rim)
{
	TAP_SETUP(steiner_graph_init(g, 4));
	TAP_SETUP(steiner_graph_add_edge(g, 0, 1, rim, 0));
	TAP_SETUP(steiner_graph_add_edge(g, 1, 2, rim, 1));
	TAP_SETUP(steiner_graph_add_edge(g, 0, 2, rim, 2));
	TAP_SETUP(steiner_graph_add_edge(g, 3, 0, 1.0, 3));
	TAP_SETUP(steiner_graph_add_edge(g, 3, 1, 1.0, 4));
	TAP_SETUP(steiner_graph_add_edge(g, 3, 2, 1.0, 5));
}

static void test_steiner_point(void)
{
	struct steiner_graph g;
	struct steiner_result r;
	int t[] = {0, 1, 2};

	star(&g, 1.9);  /* rim paths are shortest, yet the centre tree costs 3 < 3.8 */
	TAP_INT_EQ(steiner_kmb(&g, t, 3, &r, NULL), 0, "star_query_succeeds");
	TAP_OK(has_node(&r, 3) && r.n_edges == 3 && fabs(r.cost - 3.0) < 1e-12,
	       "picks_cheap_steiner_point_over_terminal_only_tree");
	steiner_result_release(&r);
	/* Textbook KMB misses it (3.8 <= 2 * 3): the local search is what finds it. */
	TAP_SETUP(steiner_kmb_ex(&g, t, 3, STEINER_PLAIN_KMB, &r, NULL));
	TAP_OK(!has_node(&r, 3) && fabs(r.cost - 3.8) < 1e-12,
	       "plain_kmb_keeps_terminal_only_tree_within_bound");
	steiner_result_release(&r);
	steiner_graph_release(&g);

	star(&g, 2.1);  /* rim longer than two spokes: shortest paths pass the centre */
	TAP_SETUP(steiner_kmb(&g, t, 3, &r, NULL));
	TAP_OK(has_node(&r, 3) && fabs(r.cost - 3.0) < 1e-12, "picks_centre_on_shortest_paths");
	steiner_result_release(&r);
	steiner_graph_release(&g);

	star(&g, 1.4);  /* rim tree 2.8 beats the centre's 3 */
	TAP_SETUP(steiner_kmb(&g, t, 3, &r, NULL));
	TAP_OK(!has_node(&r, 3) && fabs(r.cost - 2.8) < 1e-12, "avoids_steiner_point_when_rim_is_cheaper");
	steiner_result_release(&r);
	steiner_graph_release(&g);
}

/*
 * A shortest path (0-4-1) brings node 4 into the KMB node set, but the MST
 * of the induced subgraph connects 1 through node 3 instead (a cost tie), so
 * 4 becomes a non-terminal leaf that must be pruned.
 */
static void test_prunes_non_terminal_leaf(void)
{
	static const struct { int u, v; double c; } E[] = {
		{0, 2, 4}, {0, 3, 2}, {0, 4, 1}, {1, 3, 4}, {1, 4, 4},
		{1, 5, 3}, {2, 3, 1}, {2, 4, 3}, {2, 5, 3}, {4, 5, 2},
	};
	struct steiner_graph g;
	struct steiner_result r;
	int t[] = {0, 1, 2};

	TAP_SETUP(steiner_graph_init(&g, 6));
	for (size_t i = 0; i < sizeof(E) / sizeof(E[0]); i++)
		TAP_SETUP(steiner_graph_add_edge(&g, E[i].u, E[i].v, E[i].c, (int)i));
	TAP_SETUP(steiner_kmb_ex(&g, t, 3, STEINER_PLAIN_KMB, &r, NULL));  /* pruning alone, no local search */
	TAP_OK(!has_node(&r, 4), "prunes_non_terminal_leaf");
	TAP_OK(r.n_edges == 3 && has_edge(&r, 1) && has_edge(&r, 3) && has_edge(&r, 6) &&
		       fabs(r.cost - 7.0) < 1e-12,
	       "pruned_tree_is_the_optimum");
	TAP_OK(fabs(r.cost - brute_force_optimum(&g, t, 3)) < 1e-9, "pruned_tree_matches_brute_force");
	steiner_result_release(&r);
	TAP_SETUP(steiner_kmb(&g, t, 3, &r, NULL));
	TAP_OK(fabs(r.cost - 7.0) < 1e-12 && !has_node(&r, 4), "local_search_keeps_optimal_tree");
	steiner_result_release(&r);
	steiner_graph_release(&g);
}

/*
 * KMB's tree is the cheap chain A-P-Q-B plus A-C (3.75).  Inserting Y, the
 * centre of a star over A, B and C, gives a spanning tree in which the chain
 * hangs off A: Q is a non-terminal leaf, and once it is cut P becomes one
 * too.  Only when pruning cascades is the insertion an improvement (the star
 * alone costs 3.1; with P left hanging it would cost 3.8).
 */
static void test_prune_cascades_along_a_chain(void)
{
	enum { A, B, C, P, Q, Y };
	static const struct { int u, v; double c; } E[] = {
		{A, P, 0.7}, {P, Q, 0.1}, {Q, B, 1.0}, {A, Y, 0.95}, {B, Y, 0.95},
		{C, Y, 1.2}, {A, C, 1.95}, {B, C, 1.95},
	};
	struct steiner_graph g;
	struct steiner_result r;
	int t[] = {A, B, C};

	TAP_SETUP(steiner_graph_init(&g, 6));
	for (size_t i = 0; i < sizeof(E) / sizeof(E[0]); i++)
		TAP_SETUP(steiner_graph_add_edge(&g, E[i].u, E[i].v, E[i].c, (int)i));
	TAP_SETUP(steiner_kmb_ex(&g, t, 3, STEINER_PLAIN_KMB, &r, NULL));
	TAP_OK(has_node(&r, P) && has_node(&r, Q) && !has_node(&r, Y) && fabs(r.cost - 3.75) < 1e-12,
	       "plain_kmb_takes_the_chain");
	steiner_result_release(&r);
	TAP_SETUP(steiner_kmb(&g, t, 3, &r, NULL));
	TAP_OK(!has_node(&r, P) && !has_node(&r, Q), "pruning_cascades_along_a_dangling_chain");
	TAP_OK(has_node(&r, Y) && r.n_edges == 3 && has_edge(&r, 3) && has_edge(&r, 4) && has_edge(&r, 5) &&
		       fabs(r.cost - 3.1) < 1e-12 && result_is_valid(&g, &r),
	       "inserted_star_centre_replaces_the_chain");
	TAP_OK(fabs(r.cost - brute_force_optimum(&g, t, 3)) < 1e-9, "chain_case_matches_brute_force");
	steiner_result_release(&r);
	steiner_graph_release(&g);
}

static void test_known_optimum(void)
{
	struct steiner_graph g;
	struct steiner_result r;

	/* 3x3 unit grid, the four corners: optimum 6 (an H). */
	int corners[] = {0, 2, 6, 8};
	TAP_SETUP(steiner_graph_init(&g, 9));
	for (int y = 0; y < 3; y++)
		for (int x = 0; x < 3; x++) {
			if (x < 2)
				TAP_SETUP(steiner_graph_add_edge(&g, y * 3 + x, y * 3 + x + 1, 1.0, 0));
			if (y < 2)
				TAP_SETUP(steiner_graph_add_edge(&g, y * 3 + x, y * 3 + x + 3, 1.0, 0));
		}
	TAP_SETUP(steiner_kmb(&g, corners, 4, &r, NULL));
	TAP_OK(fabs(brute_force_optimum(&g, corners, 4) - 6.0) < 1e-12, "grid_optimum_is_six");
	TAP_OK(result_is_valid(&g, &r) && r.cost <= 2.0 * 6.0, "grid_cost_within_twice_optimum");
	TAP_OK(fabs(r.cost - 6.0) < 1e-12, "grid_cost_equals_optimum");
	steiner_result_release(&r);
	steiner_graph_release(&g);

	/* A tree-shaped graph: the Steiner tree is the unique minimal subtree. */
	static const struct { int u, v; double c; } T[] = {
		{0, 1, 1.5}, {1, 2, 0.5}, {1, 3, 2.0}, {3, 4, 1.0}, {3, 5, 0.25},
		{5, 6, 3.0}, {5, 7, 1.0}, {0, 8, 0.75}, {8, 9, 0.5},
	};
	int t[] = {2, 7, 4};
	TAP_SETUP(steiner_graph_init(&g, 10));
	for (size_t i = 0; i < sizeof(T) / sizeof(T[0]); i++)
		TAP_SETUP(steiner_graph_add_edge(&g, T[i].u, T[i].v, T[i].c, (int)i));
	TAP_SETUP(steiner_kmb(&g, t, 3, &r, NULL));
	/* 2-1 (0.5), 1-3 (2), 3-4 (1), 3-5 (0.25), 5-7 (1) = 4.75 */
	TAP_OK(fabs(r.cost - 4.75) < 1e-12 && r.n_nodes == 6 && has_node(&r, 1) &&
		       has_node(&r, 3) && has_node(&r, 5) && !has_node(&r, 0),
	       "tree_graph_gives_minimal_subtree");
	steiner_result_release(&r);
	steiner_graph_release(&g);
}

static void test_disconnected(void)
{
	struct steiner_graph g;
	struct steiner_result r;
	int t[] = {0, 2, 3, 4, 5};

	TAP_SETUP(steiner_graph_init(&g, 7));
	TAP_SETUP(steiner_graph_add_edge(&g, 0, 1, 1.0, 0));  /* group {0, 1, 2} */
	TAP_SETUP(steiner_graph_add_edge(&g, 1, 2, 1.0, 1));
	TAP_SETUP(steiner_graph_add_edge(&g, 3, 6, 1.0, 2));  /* group {3, 6, 4} */
	TAP_SETUP(steiner_graph_add_edge(&g, 6, 4, 1.0, 3));
	/* 5 is alone */
	TAP_INT_EQ(steiner_kmb(&g, t, 5, &r, NULL), 0, "disconnected_terminals_succeed");
	TAP_INT_EQ(r.n_groups, 3, "disconnected_terminals_form_three_groups");
	TAP_OK(r.groups[0] == 0 && r.groups[1] == 0 && r.groups[2] == 1 && r.groups[3] == 1 &&
		       r.groups[4] == 2,
	       "groups_numbered_by_first_appearance");
	TAP_OK(r.n_unreached == 3 && r.unreached[0] == 3 && r.unreached[1] == 4 &&
		       r.unreached[2] == 5,
	       "reports_terminals_outside_first_group");
	TAP_OK(r.n_edges == 4 && has_node(&r, 1) && has_node(&r, 6) && has_node(&r, 5),
	       "returns_forest_covering_every_group");
	TAP_OK(result_is_valid(&g, &r), "disconnected_result_is_a_valid_forest");
	steiner_result_release(&r);
	steiner_graph_release(&g);
}

/*
 * The world_1 case of issue 9: an unrelated table scored first (note), then two
 * joined tables (city, country).  The unreachable terminal is the lone one, not
 * the pair the first terminal is missing from; with groups of equal size the
 * earliest terminal's group stays the main one.
 */
static void test_disconnected_main_group_is_largest(void)
{
	struct steiner_graph g;
	struct steiner_result r;
	int note_first[] = {0, 1, 2}; /* 0 note (alone), 1 city, 2 country */
	int pair_tie[] = {0, 1};

	TAP_SETUP(steiner_graph_init(&g, 4));
	TAP_SETUP(steiner_graph_add_edge(&g, 1, 2, 0.5, 0)); /* city.CountryCode = country.Code */
	TAP_SETUP(steiner_graph_add_edge(&g, 2, 3, 0.5, 1)); /* country - countrylanguage */
	TAP_INT_EQ(steiner_kmb(&g, note_first, 3, &r, NULL), 0, "lone_first_terminal_succeeds");
	TAP_OK(r.n_groups == 2 && r.groups[0] == 1 && r.groups[1] == 0 && r.groups[2] == 0,
	       "main_group_is_the_one_with_most_terminals");
	TAP_OK(r.n_unreached == 1 && r.unreached[0] == 0, "lone_first_terminal_is_the_unreached_one");
	TAP_OK(r.n_edges == 1 && r.edges[0] == 0, "main_group_keeps_its_join");
	steiner_result_release(&r);
	TAP_INT_EQ(steiner_kmb(&g, pair_tie, 2, &r, NULL), 0, "equal_groups_succeed");
	TAP_OK(r.n_unreached == 1 && r.unreached[0] == 1 && r.groups[0] == 0,
	       "equal_groups_keep_the_earliest_terminal_main");
	steiner_result_release(&r);
	steiner_graph_release(&g);
}

static void test_duplicates_and_errors(void)
{
	struct steiner_graph g;
	struct steiner_result r;
	struct t2s_error err;
	int dup[] = {1, 1, 2, 1, 2};
	int bad[] = {0, 7};

	TAP_SETUP(steiner_graph_init(&g, 3));
	TAP_SETUP(steiner_graph_add_edge(&g, 0, 1, 1.0, 0));
	TAP_SETUP(steiner_graph_add_edge(&g, 1, 2, 1.0, 1));
	TAP_INT_EQ(steiner_kmb(&g, dup, 5, &r, NULL), 0, "duplicate_terminals_succeed");
	TAP_OK(r.n_terminals == 2 && r.terminals[0] == 1 && r.terminals[1] == 2,
	       "duplicate_terminals_are_merged_in_first_order");
	TAP_OK(r.n_edges == 1 && r.edges[0] == 1 && r.n_unreached == 0,
	       "duplicate_terminals_give_plain_tree");
	steiner_result_release(&r);

	memset(&r, 0x5a, sizeof(r));
	TAP_INT_EQ(steiner_kmb(&g, bad, 2, &r, &err), -T2S_ERR_INVALID, "rejects_terminal_out_of_range");
	TAP_OK(err.code == T2S_ERR_INVALID && strstr(err.message, "7") != NULL,
	       "error_names_the_bad_terminal");
	TAP_OK(r.n_edges == (size_t)0x5a5a5a5a5a5a5a5aULL, "result_untouched_on_failure");
	TAP_INT_EQ(steiner_graph_add_edge(&g, 0, 3, 1.0, 0), -T2S_ERR_INVALID, "rejects_edge_to_unknown_node");
	TAP_INT_EQ(steiner_graph_add_edge(&g, 0, 1, -0.5, 0), -T2S_ERR_INVALID, "rejects_negative_cost");
	TAP_INT_EQ(steiner_graph_add_edge(&g, 0, 1, NAN, 0), -T2S_ERR_INVALID, "rejects_nan_cost");
	TAP_INT_EQ(g.n_edges, 2, "rejected_edges_leave_graph_unchanged");
	steiner_graph_release(&g);
	TAP_INT_EQ(steiner_graph_init(&g, -1), -T2S_ERR_INVALID, "rejects_negative_node_count");
	steiner_graph_release(&g);
	steiner_graph_release(NULL);
	steiner_result_release(NULL);
}

static uint64_t rng_state;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

static void test_random_small(void)
{
	int valid = 0, terminals_ok = 0, bounded = 0, optimal = 0, runs = 0, connected = 0;
	int plain_valid = 0, plain_bounded = 0, not_worse = 0, plain_optimal = 0;

	rng_state = 0x9E3779B97F4A7C15ULL;
	for (int seed = 0; seed < 600; seed++) {
		struct steiner_graph g;
		struct steiner_result r;
		int n = 3 + (int)(rng() % 6), t[8];
		size_t nt = 1 + rng() % (unsigned)n;
		int density = 25 + (int)(rng() % 70);

		TAP_SETUP(steiner_graph_init(&g, n));
		for (int u = 0; u < n; u++)
			for (int v = u + 1; v < n; v++)
				while (rng() % 100 < (unsigned)density) {  /* sometimes parallel */
					double c = (rng() % 3 == 0) ? (double)(rng() % 4)
								    : (rng() % 1000) / 100.0;
					TAP_SETUP(steiner_graph_add_edge(&g, rng() % 2 ? u : v, rng() % 2 ? v : u, c, 0));
					if (rng() % 4)
						break;
				}
		/* nt distinct random terminals */
		int perm[8];
		for (int i = 0; i < n; i++)
			perm[i] = i;
		for (int i = n - 1; i > 0; i--) {
			int j = (int)(rng() % (unsigned)(i + 1)), x = perm[i];
			perm[i] = perm[j];
			perm[j] = x;
		}
		memcpy(t, perm, nt * sizeof(int));

		if (steiner_kmb(&g, t, nt, &r, NULL) == 0) {
			runs++;
			valid += result_is_valid(&g, &r);
			bool all = r.n_terminals == nt;
			for (size_t i = 0; i < nt; i++)
				all &= has_node(&r, t[i]);
			terminals_ok += all;
			double opt = brute_force_optimum(&g, t, nt);
			struct steiner_result p;
			if (steiner_kmb_ex(&g, t, nt, STEINER_PLAIN_KMB, &p, NULL) == 0) {
				plain_valid += result_is_valid(&g, &p);
				plain_bounded += !isfinite(opt) ||
						 (p.cost <= 2.0 * (1.0 - 1.0 / (double)nt) * opt + 1e-9);
				plain_optimal += isfinite(opt) && fabs(p.cost - opt) < 1e-9;
				not_worse += r.cost <= p.cost + 1e-9;
				steiner_result_release(&p);
			}
			if (r.n_groups == 1) {
				connected++;
				bounded += isfinite(opt) && r.cost <= 2.0 * opt + 1e-9 &&
					   r.cost >= opt - 1e-9 && r.n_edges + 1 == r.n_nodes;
				optimal += fabs(r.cost - opt) < 1e-9;
			} else {
				bounded += !isfinite(opt);  /* disconnected: no single tree exists */
			}
			steiner_result_release(&r);
		}
		steiner_graph_release(&g);
	}
	TAP_INT_EQ(runs, 600, "random_graphs_all_succeed");
	TAP_INT_EQ(valid, runs, "random_results_are_forests_without_non_terminal_leaves");
	TAP_INT_EQ(terminals_ok, runs, "random_results_contain_all_terminals");
	TAP_INT_EQ(bounded, runs, "random_costs_within_twice_brute_force_optimum");
	TAP_INT_EQ(plain_valid, runs, "random_plain_kmb_results_are_pruned_forests");
	TAP_INT_EQ(plain_bounded, runs, "random_plain_kmb_within_2_1_minus_1_over_t_optimum");
	TAP_INT_EQ(not_worse, runs, "random_local_search_never_worsens_kmb");
	printf("# random: %d connected cases, %d optimal (%.1f%%), plain KMB %d optimal\n",
	       connected, optimal, connected ? 100.0 * optimal / connected : 0.0, plain_optimal);
	TAP_OK(connected > 300 && optimal * 10 >= connected * 9,
	       "random_results_mostly_optimal_on_small_graphs");
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_large(void)
{
	struct steiner_graph g;
	struct steiner_result r;
	int t[10];

	rng_state = 12345;
	TAP_SETUP(steiner_graph_init(&g, 800));
	for (int i = 1; i < 800; i++)  /* a spanning backbone keeps it connected */
		TAP_SETUP(steiner_graph_add_edge(&g, i, (int)(rng() % (unsigned)i), 0.3 + (rng() % 700) / 1000.0, i));
	while (g.n_edges < 20000) {
		int u = (int)(rng() % 800), v = (int)(rng() % 800);
		TAP_SETUP(steiner_graph_add_edge(&g, u, v, 0.3 + (rng() % 700) / 1000.0, (int)g.n_edges));
	}
	for (int i = 0; i < 10; i++)
		t[i] = i * 79 + 3;
	double t0 = now_ms();
	int rc = steiner_kmb(&g, t, 10, &r, NULL);
	double t1 = now_ms();
	printf("# 800 nodes / %zu edges / 10 terminals: %.2f ms, cost %.3f, %zu nodes\n", g.n_edges,
	       t1 - t0, r.cost, r.n_nodes);
	TAP_INT_EQ(rc, 0, "large_graph_succeeds");
	TAP_OK(result_is_valid(&g, &r) && r.n_groups == 1 && r.n_edges + 1 == r.n_nodes,
	       "large_graph_gives_one_valid_tree");
	steiner_result_release(&r);
	steiner_graph_release(&g);
}

int main(void)
{
	test_single_terminal();
	test_adjacent_terminals();
	test_bridge_node();
	test_steiner_point();
	test_prunes_non_terminal_leaf();
	test_prune_cascades_along_a_chain();
	test_known_optimum();
	test_disconnected();
	test_disconnected_main_group_is_largest();
	test_duplicates_and_errors();
	test_random_small();
	test_large();
	return tap_done();
}
