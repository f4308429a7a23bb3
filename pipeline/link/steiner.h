/*
 * steiner.h - Steiner trees on a weighted undirected graph (the join
 * scaffold of schema linking).
 *
 * The caller builds a graph (for linking: a node per table, an edge per
 * declared or inferred join with its cost and a caller tag that maps the
 * edge back to its join condition) and asks for a cheap tree connecting a
 * set of terminal nodes (the tables the question needs).  Non-terminal nodes
 * the tree passes through are the bridge tables.
 *
 * Algorithm: Kou-Markowsky-Berman 2-approximation - Dijkstra from every
 * terminal (binary heap) gives the metric closure over the terminals; its
 * minimum spanning tree (Prim) is expanded into the shortest paths of the
 * graph; the minimum spanning tree (Kruskal) of the subgraph induced by the
 * nodes of those paths is taken; non-terminal leaves are pruned until none
 * is left.  Then a local search that can only lower the cost: inserting one
 * non-tree node (a Steiner point KMB missed, e.g. the centre of a star whose
 * direct terminal-terminal edges are slightly cheaper than two spokes) or
 * removing one non-terminal node, each followed by the same MST + prune,
 * is kept while it lowers the total cost (first improvement, passes in node
 * order until a pass changes nothing or a fixed work budget of about a
 * million edge visits is spent).  The result therefore keeps KMB's
 * guarantee, cost <= 2 * (1 - 1/t) * optimum, and is usually optimal on
 * small graphs.  Results are deterministic: ties are broken by edge index
 * and terminal order.
 *
 * Cost of a call: O(t * (E + V) log V + t^2) for t distinct terminals, plus
 * the bounded local search.  Measured (-O2, one core): 800 nodes, 20,000
 * edges, 10 terminals: ~4.5 ms.
 *
 * Disconnected terminals are not dropped: the result is a forest with one
 * tree per connected group of terminals, and every terminal is labelled with
 * its group.  Group 0 is the main group: the one with the most distinct
 * terminals; among groups of equal size, the one holding the earliest
 * terminal (so callers list terminals most relevant first).  The other
 * groups are numbered 1, 2, ... in order of their first terminal.  Terminals
 * outside group 0 are listed as unreached: they are the tables that cannot be
 * joined to the rest, never the larger part they are missing from.
 */
#ifndef T2S_STEINER_H
#define T2S_STEINER_H

#include <stddef.h>

#include "common/contract.h"
#include "common/error.h"

#define STEINER_MAX_NODES 1000000

struct steiner_edge {
	int u, v;     /* endpoints, 0 <= u, v < n_nodes */
	double cost;  /* >= 0, finite */
	int tag;      /* the caller's, e.g. an index into its join conditions */
};

/*
 * A graph with a fixed node count and a growing edge list.  Parallel edges
 * are allowed (the cheapest serves); self-loops are accepted and never used.
 * Edge i is edges[i], in insertion order.  The graph owns edges.
 */
struct steiner_graph {
	int n_nodes;
	size_t n_edges, cap_edges;
	struct steiner_edge *edges;
};

/*
 * Set up an empty graph of n_nodes nodes (allocates nothing).  Returns 0, or
 * -T2S_ERR_INVALID when n_nodes is negative or above STEINER_MAX_NODES.
 */
T2S_MUST_CHECK
int steiner_graph_init(struct steiner_graph *g, int n_nodes);

/*
 * Append edge {u, v, cost, tag}; its index is the previous g->n_edges.
 * Returns 0, -T2S_ERR_INVALID (node out of range, cost negative or not
 * finite) or -T2S_ERR_NOMEM; the graph is unchanged on failure.
 */
T2S_MUST_CHECK
int steiner_graph_add_edge(struct steiner_graph *g, int u, int v, double cost, int tag);

/* Free the edge list; g may be NULL.  g may be re-initialised after. */
void steiner_graph_release(struct steiner_graph *g);

struct steiner_result {
	size_t n_edges;
	size_t *edges;       /* chosen edges: indices into g->edges, ascending */
	size_t n_nodes;
	int *nodes;          /* nodes of the forest (terminals and bridges), ascending */
	double cost;         /* sum of the chosen edges' costs */
	size_t n_terminals;
	int *terminals;      /* distinct terminals, in order of first appearance */
	int *groups;         /* groups[i]: connected group of terminals[i], 0 = the main group (above) */
	size_t n_groups;
	size_t n_unreached;
	int *unreached;      /* terminals outside group 0, in terminals[] order */
};

/*
 * Connect terminals[0..n_terminals) in g (duplicates are ignored).  On
 * success fills *ret, whose arrays the caller frees with
 * steiner_result_release (each array is NULL when its count is 0); g is only
 * read and may be shared by threads.  No terminal gives an empty result; one
 * terminal gives that node alone.  Returns 0, or -T2S_ERR_INVALID (terminal
 * out of range, terminals NULL with n_terminals > 0) / -T2S_ERR_NOMEM,
 * filling err (may be NULL); *ret is untouched on failure.
 */
T2S_MUST_CHECK
int steiner_kmb(const struct steiner_graph *g, const int *terminals, size_t n_terminals,
		struct steiner_result *ret, struct t2s_error *err);

/* Flags of steiner_kmb_ex. */
#define STEINER_PLAIN_KMB 0x1u  /* skip the local search: the textbook KMB tree */

/* steiner_kmb with flags (steiner_kmb is steiner_kmb_ex with flags 0). */
T2S_MUST_CHECK
int steiner_kmb_ex(const struct steiner_graph *g, const int *terminals, size_t n_terminals,
		   unsigned flags, struct steiner_result *ret, struct t2s_error *err);

/* Free r's arrays and zero it; r may be NULL. */
void steiner_result_release(struct steiner_result *r);

#endif
