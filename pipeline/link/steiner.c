/*
 * steiner.c - KMB Steiner trees with a cost-lowering local search (see
 * steiner.h for the contract).
 *
 * One call builds a private workspace (struct kmb): a CSR adjacency of the
 * graph, the distinct terminals, one shortest-path predecessor array per
 * terminal, and scratch arrays for evaluating node sets.  The central helper
 * is eval(): for the current node set, optionally plus one node or minus one
 * node (a struct eval_view), it runs its phases: eval_begin (scratch and the
 * added node's edges), eval_spanning_tree (Kruskal over the induced edges,
 * kept sorted by (cost, edge index), so every result is deterministic),
 * eval_groups_connected (each connected group of terminals still is),
 * eval_prune_leaves (non-terminal leaves, cascading), eval_tree_cost and,
 * when asked, eval_keep_tree.  KMB produces the first node set; the local search then
 * tries single insertions and removals with eval() and applies each strict
 * improvement as it finds it, pass after pass, within a work budget.
 */
#include "pipeline/link/steiner.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LOCAL_SEARCH_MAX_PASSES 64
#define LOCAL_SEARCH_MAX_WORK 1000000u

/* ---------------------------------------------------------------- graph */

int steiner_graph_init(struct steiner_graph *g, int n_nodes)
{
	memset(g, 0, sizeof(*g));
	if (n_nodes < 0 || n_nodes > STEINER_MAX_NODES)
		return -T2S_ERR_INVALID;
	g->n_nodes = n_nodes;
	return 0;
}

int steiner_graph_add_edge(struct steiner_graph *g, int u, int v, double cost, int tag)
{
	if (u < 0 || v < 0 || u >= g->n_nodes || v >= g->n_nodes || !isfinite(cost) || cost < 0)
		return -T2S_ERR_INVALID;
	if (g->n_edges == g->cap_edges) {
		size_t cap = g->cap_edges ? g->cap_edges * 2 : 16;
		struct steiner_edge *e;
		if (cap > SIZE_MAX / 2 / sizeof(*e))
			return -T2S_ERR_NOMEM;
		e = realloc(g->edges, cap * sizeof(*e));
		if (!e)
			return -T2S_ERR_NOMEM;
		g->edges = e;
		g->cap_edges = cap;
	}
	g->edges[g->n_edges++] = (struct steiner_edge){u, v, cost, tag};
	return 0;
}

void steiner_graph_release(struct steiner_graph *g)
{
	if (!g)
		return;
	free(g->edges);
	memset(g, 0, sizeof(*g));
}

void steiner_result_release(struct steiner_result *r)
{
	if (!r)
		return;
	free(r->edges);
	free(r->nodes);
	free(r->terminals);
	free(r->groups);
	free(r->unreached);
	memset(r, 0, sizeof(*r));
}

/* ------------------------------------------------------------ workspace */

struct kmb {
	const struct steiner_graph *g;
	int n;
	size_t e;

	size_t *adj_start;  /* n + 1: CSR offsets (self-loops left out) */
	int *adj_node;      /* neighbour of each adjacency entry */
	size_t *adj_edge;   /* edge index of each adjacency entry */

	size_t k;           /* distinct terminals */
	int *term;          /* k */
	int *term_idx;      /* n: index into term, or -1 */
	int *group;         /* k: connected group of each terminal */
	size_t n_groups;

	/* The current node set and its induced edges sorted by (cost, index). */
	int *loc;           /* n: local index in set_nodes, or -1 */
	int *set_nodes;     /* capacity n */
	size_t s;
	size_t *set_edges;  /* capacity e */
	size_t m;

	/* eval() scratch, over local indices 0..s (s = the inserted node). */
	int *uf, *deg, *head, *root_mark, *queue;
	size_t *chosen, *xe, *sort_tmp;
	int *link_next, *link_edge;  /* 2 entries per chosen edge */
	bool *alive;
	int *stamp;         /* n: for counting distinct neighbours */
	int stamp_gen;

	/* Kept result of the last eval(..., keep = true). */
	size_t *keep_edges;
	size_t n_keep_edges;
	int *keep_nodes;
	size_t n_keep_nodes;
};

static void kmb_free(struct kmb *K)
{
	void *arrays[] = {K->adj_start, K->adj_node, K->adj_edge, K->term, K->term_idx,
			  K->group, K->loc, K->set_nodes, K->set_edges, K->uf, K->deg,
			  K->head, K->root_mark, K->queue, K->chosen, K->xe, K->sort_tmp,
			  K->link_next, K->link_edge, K->alive, K->stamp, K->keep_edges,
			  K->keep_nodes};
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
		free(arrays[i]);
}

/* Allocate everything that only depends on the graph size; 0 or -T2S_ERR_NOMEM. */
static int kmb_alloc(struct kmb *K)
{
	size_t n = (size_t)K->n, e = K->e, ln = n + 1;

	K->adj_start = calloc(n + 1, sizeof(size_t));
	K->adj_node = malloc((2 * e + 1) * sizeof(int));
	K->adj_edge = malloc((2 * e + 1) * sizeof(size_t));
	K->term = malloc((n + 1) * sizeof(int));
	K->term_idx = malloc((n + 1) * sizeof(int));
	K->group = malloc((n + 1) * sizeof(int));
	K->loc = malloc((n + 1) * sizeof(int));
	K->set_nodes = malloc((n + 1) * sizeof(int));
	K->set_edges = malloc((e + 1) * sizeof(size_t));
	K->uf = malloc(ln * sizeof(int));
	K->deg = malloc(ln * sizeof(int));
	K->head = malloc(ln * sizeof(int));
	K->root_mark = malloc(ln * sizeof(int));
	K->queue = malloc(ln * sizeof(int));
	K->chosen = malloc(ln * sizeof(size_t));
	K->xe = malloc((e + 1) * sizeof(size_t));
	K->sort_tmp = malloc((e + 1) * sizeof(size_t));
	K->link_next = malloc(2 * ln * sizeof(int));
	K->link_edge = malloc(2 * ln * sizeof(int));
	K->alive = malloc(ln * sizeof(bool));
	K->stamp = calloc(n + 1, sizeof(int));
	K->keep_edges = malloc(ln * sizeof(size_t));
	K->keep_nodes = malloc(ln * sizeof(int));
	if (!K->adj_start || !K->adj_node || !K->adj_edge || !K->term || !K->term_idx ||
	    !K->group || !K->loc || !K->set_nodes || !K->set_edges || !K->uf || !K->deg ||
	    !K->head || !K->root_mark || !K->queue || !K->chosen || !K->xe || !K->sort_tmp ||
	    !K->link_next || !K->link_edge || !K->alive || !K->stamp || !K->keep_edges ||
	    !K->keep_nodes)
		return -T2S_ERR_NOMEM;
	return 0;
}

static void build_adjacency(struct kmb *K)
{
	const struct steiner_edge *E = K->g->edges;

	for (size_t i = 0; i < K->e; i++) {
		if (E[i].u == E[i].v)
			continue;
		K->adj_start[E[i].u + 1]++;
		K->adj_start[E[i].v + 1]++;
	}
	for (int v = 0; v < K->n; v++)
		K->adj_start[v + 1] += K->adj_start[v];
	/* Fill, with queue[v] as the cursor of node v. */
	for (int v = 0; v < K->n; v++)
		K->queue[v] = 0;
	for (size_t i = 0; i < K->e; i++) {
		int u = E[i].u, v = E[i].v;
		if (u == v)
			continue;
		size_t pu = K->adj_start[u] + (size_t)K->queue[u]++;
		size_t pv = K->adj_start[v] + (size_t)K->queue[v]++;
		K->adj_node[pu] = v;
		K->adj_edge[pu] = i;
		K->adj_node[pv] = u;
		K->adj_edge[pv] = i;
	}
}

/* Total order on edges: cost, then index. */
static bool edge_less(const struct steiner_graph *g, size_t a, size_t b)
{
	if (g->edges[a].cost != g->edges[b].cost)
		return g->edges[a].cost < g->edges[b].cost;
	return a < b;
}

/* Bottom-up merge sort of edge indices a[0..n) by edge_less; tmp holds n. */
static void sort_edges(const struct steiner_graph *g, size_t *a, size_t n, size_t *tmp)
{
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, o = lo;
			while (i < mid && j < hi)
				tmp[o++] = edge_less(g, a[j], a[i]) ? a[j++] : a[i++];
			while (i < mid)
				tmp[o++] = a[i++];
			while (j < hi)
				tmp[o++] = a[j++];
		}
		memcpy(a, tmp, n * sizeof(size_t));
	}
}

/* ------------------------------------------------------------- dijkstra */

struct heap_item {
	double d;
	int v;
};

struct heap {
	struct heap_item *a;
	size_t n;
};

static void heap_push(struct heap *h, double d, int v)
{
	size_t i = h->n++;

	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (h->a[p].d <= d)
			break;
		h->a[i] = h->a[p];
		i = p;
	}
	h->a[i] = (struct heap_item){d, v};
}

static struct heap_item heap_pop(struct heap *h)
{
	struct heap_item top = h->a[0], last = h->a[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->a[c + 1].d < h->a[c].d)
			c++;
		if (last.d <= h->a[c].d)
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (h->n)
		h->a[i] = last;
	return top;
}

/*
 * Shortest paths from node src: dist (n entries) and pred (n entries: the
 * edge by which each node is reached, -1 for src and unreached nodes).
 * Stops once every terminal is settled.  The heap holds 2e + 1 items.
 */
static void dijkstra(const struct kmb *K, int src, double *dist, long *pred, struct heap *h)
{
	size_t settled_terms = 0;

	for (int v = 0; v < K->n; v++) {
		dist[v] = INFINITY;
		pred[v] = -1;
	}
	dist[src] = 0.0;
	h->n = 0;
	heap_push(h, 0.0, src);
	while (h->n) {
		struct heap_item it = heap_pop(h);
		if (it.d > dist[it.v])
			continue;  /* stale entry */
		if (K->term_idx[it.v] >= 0 && ++settled_terms == K->k)
			break;
		for (size_t a = K->adj_start[it.v]; a < K->adj_start[it.v + 1]; a++) {
			int w = K->adj_node[a];
			double nd = it.d + K->g->edges[K->adj_edge[a]].cost;
			if (nd < dist[w]) {
				dist[w] = nd;
				pred[w] = (long)K->adj_edge[a];
				heap_push(h, nd, w);
			}
		}
	}
}

/* ------------------------------------------------------------- node sets */

static int uf_find(int *uf, int x)
{
	while (uf[x] != x) {
		uf[x] = uf[uf[x]];
		x = uf[x];
	}
	return x;
}

/* Replace the current set by nodes[0..n) and rebuild its sorted induced edges. */
static void set_assign(struct kmb *K, const int *nodes, size_t n)
{
	for (size_t i = 0; i < K->s; i++)
		K->loc[K->set_nodes[i]] = -1;
	if (nodes != K->set_nodes)
		memmove(K->set_nodes, nodes, n * sizeof(int));
	K->s = n;
	for (size_t i = 0; i < n; i++)
		K->loc[K->set_nodes[i]] = (int)i;
	K->m = 0;
	for (size_t i = 0; i < n; i++) {
		int x = K->set_nodes[i];
		for (size_t a = K->adj_start[x]; a < K->adj_start[x + 1]; a++) {
			size_t e = K->adj_edge[a];
			if (K->g->edges[e].u == x && K->loc[K->adj_node[a]] >= 0)
				K->set_edges[K->m++] = e;
		}
	}
	sort_edges(K->g, K->set_edges, K->m, K->sort_tmp);
}

/*
 * One evaluation of a node set: the current set plus node extra (-1: none),
 * which takes local index K->s, minus node skip (-1: none; never a
 * terminal), which keeps its local index but loses its edges.
 */
struct eval_view {
	int extra;
	int skip;
	int skip_local;       /* local index of skip, or -1 */
	size_t n_local;       /* local indices 0..n_local-1 */
	size_t n_extra_edges; /* K->xe[0..n_extra_edges): extra's edges into the set, sorted */
	size_t n_chosen;      /* K->chosen[0..n_chosen): the MST's edges */
};

/* Local index of graph node node in view v. */
static int local_of(const struct kmb *K, const struct eval_view *v, int node)
{
	return node == v->extra ? (int)K->s : K->loc[node];
}

/* Graph node of local index x in view v. */
static int node_of(const struct kmb *K, const struct eval_view *v, size_t x)
{
	return x == K->s ? v->extra : K->set_nodes[x];
}

/* Phase 1: fresh union-find, degrees and adjacency lists over the local indices; extra's edges collected. */
static void eval_begin(struct kmb *K, struct eval_view *v)
{
	for (size_t x = 0; x < v->n_local; x++) {
		K->uf[x] = (int)x;
		K->deg[x] = 0;
		K->head[x] = -1;
		K->root_mark[x] = 0;
	}
	v->n_extra_edges = 0;
	if (v->extra < 0)
		return;
	for (size_t a = K->adj_start[v->extra]; a < K->adj_start[v->extra + 1]; a++)
		if (K->loc[K->adj_node[a]] >= 0 && K->adj_node[a] != v->skip)
			K->xe[v->n_extra_edges++] = K->adj_edge[a];
	sort_edges(K->g, K->xe, v->n_extra_edges, K->sort_tmp);
}

static bool edge_touches(const struct steiner_edge *edge, int node)
{
	return edge->u == node || edge->v == node;
}

/* Phase 2: Kruskal over the merge of the set's sorted edges (minus skip's) and extra's. */
static void eval_spanning_tree(struct kmb *K, struct eval_view *v)
{
	const struct steiner_edge *edges = K->g->edges;
	size_t set_pos = 0, extra_pos = 0;
	v->n_chosen = 0;
	while ((set_pos < K->m || extra_pos < v->n_extra_edges) && v->n_chosen + 1 < v->n_local) {
		size_t e;
		if (set_pos < K->m && edge_touches(&edges[K->set_edges[set_pos]], v->skip)) {
			set_pos++;
			continue;
		}
		if (extra_pos >= v->n_extra_edges ||
		    (set_pos < K->m && edge_less(K->g, K->set_edges[set_pos], K->xe[extra_pos])))
			e = K->set_edges[set_pos++];
		else
			e = K->xe[extra_pos++];
		int a = local_of(K, v, edges[e].u), b = local_of(K, v, edges[e].v);
		int root_a = uf_find(K->uf, a), root_b = uf_find(K->uf, b);
		if (root_a == root_b)
			continue;
		K->uf[root_a] = root_b;
		K->chosen[v->n_chosen++] = e;
		K->deg[a]++;
		K->deg[b]++;
	}
}

/* Phase 3: true when each group of terminals lies in one component of the tree. */
static bool eval_groups_connected(struct kmb *K)
{
	size_t roots = 0;
	for (size_t t = 0; t < K->k; t++) {
		int root = uf_find(K->uf, K->loc[K->term[t]]);
		if (!K->root_mark[root]) {
			K->root_mark[root] = 1;
			roots++;
		}
	}
	return roots == K->n_groups;
}

/* Phase 4: cut non-terminal leaves, repeatedly (K->alive[c] false for each cut edge). */
static void eval_prune_leaves(struct kmb *K, const struct eval_view *v)
{
	const struct steiner_edge *edges = K->g->edges;
	for (size_t c = 0; c < v->n_chosen; c++) {
		int ends[2] = {local_of(K, v, edges[K->chosen[c]].u), local_of(K, v, edges[K->chosen[c]].v)};
		for (int side = 0; side < 2; side++) {
			K->link_edge[2 * c + side] = (int)c;
			K->link_next[2 * c + side] = K->head[ends[side]];
			K->head[ends[side]] = (int)(2 * c + side);
		}
		K->alive[c] = true;
	}
	size_t q_head = 0, q_tail = 0;
	for (size_t x = 0; x < v->n_local; x++)
		if ((int)x != v->skip_local && K->term_idx[node_of(K, v, x)] < 0 && K->deg[x] == 1)
			K->queue[q_tail++] = (int)x;
	while (q_head < q_tail) {
		int leaf = K->queue[q_head++];
		if (K->deg[leaf] != 1)
			continue;
		for (int l = K->head[leaf]; l >= 0; l = K->link_next[l]) {
			int c = K->link_edge[l];
			if (!K->alive[c])
				continue;
			size_t e = K->chosen[c];
			int a = local_of(K, v, edges[e].u), b = local_of(K, v, edges[e].v);
			int other = a == leaf ? b : a;
			K->alive[c] = false;
			K->deg[leaf] = 0;
			if (--K->deg[other] == 1 && K->term_idx[node_of(K, v, (size_t)other)] < 0)
				K->queue[q_tail++] = other;
			break;
		}
	}
}

static double eval_tree_cost(const struct kmb *K, const struct eval_view *v)
{
	double cost = 0.0;
	for (size_t c = 0; c < v->n_chosen; c++)
		if (K->alive[c])
			cost += K->g->edges[K->chosen[c]].cost;
	return cost;
}

/* Phase 5 (with keep): the pruned tree's edges and nodes into K->keep_*. */
static void eval_keep_tree(struct kmb *K, const struct eval_view *v)
{
	K->n_keep_edges = 0;
	for (size_t c = 0; c < v->n_chosen; c++)
		if (K->alive[c])
			K->keep_edges[K->n_keep_edges++] = K->chosen[c];
	K->n_keep_nodes = 0;
	for (size_t x = 0; x < v->n_local; x++) {
		int node = node_of(K, v, x);
		if ((int)x != v->skip_local && (K->deg[x] > 0 || K->term_idx[node] >= 0))
			K->keep_nodes[K->n_keep_nodes++] = node;
	}
}

/*
 * Cost of the pruned MST of the current set plus node extra (-1: none) minus
 * node skip (-1: none; never a terminal).  Returns false when the node set
 * does not keep each group of terminals connected.  With keep, the pruned
 * tree's edges and nodes go to K->keep_*.
 */
static bool eval(struct kmb *K, int extra, int skip, bool keep, double *ret_cost)
{
	struct eval_view v = {.extra = extra, .skip = skip, .skip_local = skip >= 0 ? K->loc[skip] : -1,
			      .n_local = K->s + (extra >= 0 ? 1 : 0)};
	eval_begin(K, &v);
	eval_spanning_tree(K, &v);
	if (!eval_groups_connected(K))
		return false;
	eval_prune_leaves(K, &v);
	*ret_cost = eval_tree_cost(K, &v);
	if (keep)
		eval_keep_tree(K, &v);
	return true;
}

/* Does node v, outside the set, touch at least two distinct set nodes? */
static bool touches_two(struct kmb *K, int v)
{
	int seen = 0, gen = ++K->stamp_gen;

	for (size_t a = K->adj_start[v]; a < K->adj_start[v + 1]; a++) {
		int w = K->adj_node[a];
		if (K->loc[w] >= 0 && K->stamp[w] != gen) {
			K->stamp[w] = gen;
			if (++seen == 2)
				return true;
		}
	}
	return false;
}

/*
 * Insert or remove single nodes while that strictly lowers the cost.
 * First improvement: nodes are visited in id order, a move is applied as soon
 * as it helps, and passes repeat until one pass changes nothing, or the work
 * budget (edges and nodes visited by eval) runs out - so a huge tree on a
 * dense graph costs bounded time, and the answer stays deterministic.
 */
static void local_search(struct kmb *K, double *cost)
{
	uint64_t work = 0;

	for (int pass = 0; pass < LOCAL_SEARCH_MAX_PASSES; pass++) {
		bool improved = false;

		for (int v = 0; v < K->n; v++) {
			double c, bar = *cost - 1e-9 * (1.0 + *cost);
			int extra = -1, skip = -1;

			if (work > LOCAL_SEARCH_MAX_WORK)
				return;
			if (K->loc[v] >= 0) {
				if (K->term_idx[v] >= 0)
					continue;
				skip = v;
			} else {
				work += K->adj_start[v + 1] - K->adj_start[v];
				if (!touches_two(K, v))
					continue;
				extra = v;
			}
			work += K->m + K->s + (K->adj_start[v + 1] - K->adj_start[v]) + 1;
			if (!eval(K, extra, skip, false, &c) || c >= bar)
				continue;
			eval(K, extra, skip, true, &c);
			set_assign(K, K->keep_nodes, K->n_keep_nodes);
			eval(K, -1, -1, true, cost);
			work += K->m + K->s;
			improved = true;
		}
		if (!improved)
			return;
	}
}

/* ------------------------------------------------------------------ kmb */

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return (x > y) - (x < y);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/*
 * Renumber the groups so that group 0 is the main one: the group with the
 * most distinct terminals, and among groups of equal size the one holding
 * the earliest terminal (callers list terminals most relevant first).  The
 * other groups keep their order of first appearance.  Prim numbers groups
 * by first appearance, so the main group's old number m becomes 0 and the
 * groups before it move up by one.  k == 0 or one group: nothing to do.
 */
static void kmb_main_group_first(struct kmb *K)
{
	if (K->n_groups < 2)
		return;
	int *size = K->root_mark; /* eval() scratch of n + 1 >= n_groups entries, free until eval runs */
	memset(size, 0, K->n_groups * sizeof(int));
	for (size_t t = 0; t < K->k; t++)
		size[K->group[t]]++;
	int main_group = 0;
	for (size_t g = 1; g < K->n_groups; g++)
		if (size[g] > size[main_group])
			main_group = (int)g;
	for (size_t t = 0; t < K->k; t++)
		K->group[t] = K->group[t] == main_group ? 0 : K->group[t] < main_group ? K->group[t] + 1 : K->group[t];
}

/*
 * Metric closure over the terminals, its minimum spanning forest (Prim,
 * O(k^2)), groups, and the union of the expanded shortest paths as the
 * initial node set.  Returns 0 or -T2S_ERR_NOMEM.
 */
static int kmb_initial_set(struct kmb *K)
{
	size_t k = K->k, n = (size_t)K->n;
	double *closure = malloc(k * k * sizeof(double));
	long *preds = malloc(k * n * sizeof(long));
	double *dist = malloc(n * sizeof(double));
	struct heap h = {malloc((2 * K->e + 1) * sizeof(struct heap_item)), 0};
	double *best = malloc(k * sizeof(double));
	size_t *from = malloc(k * sizeof(size_t));
	bool *done = calloc(k, sizeof(bool));
	int rc = -T2S_ERR_NOMEM;

	if (!closure || !preds || !dist || !h.a || !best || !from || !done)
		goto out;
	for (size_t a = 0; a < k; a++) {
		dijkstra(K, K->term[a], dist, preds + a * n, &h);
		for (size_t b = 0; b < k; b++)
			closure[a * k + b] = dist[K->term[b]];
	}

	/* Prim forest; each new tree starts at the earliest unvisited terminal. */
	size_t in_set = 0;
	for (size_t t = 0; t < k; t++) {
		K->loc[K->term[t]] = (int)in_set;
		K->set_nodes[in_set++] = K->term[t];
		best[t] = INFINITY;
	}
	K->n_groups = 0;
	for (size_t added = 0; added < k; added++) {
		size_t pick = k;
		for (size_t t = 0; t < k; t++)
			if (!done[t] && isfinite(best[t]) && (pick == k || best[t] < best[pick]))
				pick = t;
		if (pick == k) {  /* no finite link: a new group */
			for (pick = 0; done[pick]; pick++)
				;
			K->group[pick] = (int)K->n_groups++;
		} else {
			K->group[pick] = K->group[from[pick]];
			/* Expand closure edge (from, pick) into its shortest path. */
			const long *pred = preds + from[pick] * n;
			int v = K->term[pick];
			while (v != K->term[from[pick]]) {
				const struct steiner_edge *e = &K->g->edges[pred[v]];
				v = e->u == v ? e->v : e->u;
				if (K->loc[v] < 0) {
					K->loc[v] = (int)in_set;
					K->set_nodes[in_set++] = v;
				}
			}
		}
		done[pick] = true;
		for (size_t t = 0; t < k; t++)
			if (!done[t] && closure[pick * k + t] < best[t]) {
				best[t] = closure[pick * k + t];
				from[t] = pick;
			}
	}
	kmb_main_group_first(K);
	for (size_t i = 0; i < in_set; i++)
		K->loc[K->set_nodes[i]] = -1;
	K->s = 0;
	set_assign(K, K->set_nodes, in_set);
	rc = 0;
out:
	free(closure);
	free(preds);
	free(dist);
	free(h.a);
	free(best);
	free(from);
	free(done);
	return rc;
}

/* Copy the kept tree and the terminal bookkeeping into a fresh result. */
static int kmb_result(const struct kmb *K, struct steiner_result *ret)
{
	struct steiner_result r;
	size_t nu = 0;

	memset(&r, 0, sizeof(r));
	r.n_edges = K->n_keep_edges;
	r.n_nodes = K->n_keep_nodes;
	r.n_terminals = K->k;
	r.n_groups = K->n_groups;
	for (size_t t = 0; t < K->k; t++)
		nu += K->group[t] != 0;
	r.n_unreached = nu;
	if ((r.n_edges && !(r.edges = malloc(r.n_edges * sizeof(size_t)))) ||
	    (r.n_nodes && !(r.nodes = malloc(r.n_nodes * sizeof(int)))) ||
	    (r.n_terminals && !(r.terminals = malloc(r.n_terminals * sizeof(int)))) ||
	    (r.n_terminals && !(r.groups = malloc(r.n_terminals * sizeof(int)))) ||
	    (nu && !(r.unreached = malloc(nu * sizeof(int))))) {
		steiner_result_release(&r);
		return -T2S_ERR_NOMEM;
	}
	if (r.n_edges)
		memcpy(r.edges, K->keep_edges, r.n_edges * sizeof(size_t));
	if (r.n_nodes)
		memcpy(r.nodes, K->keep_nodes, r.n_nodes * sizeof(int));
	if (r.n_edges)
		qsort(r.edges, r.n_edges, sizeof(size_t), cmp_size);
	if (r.n_nodes)
		qsort(r.nodes, r.n_nodes, sizeof(int), cmp_int);
	for (size_t i = 0; i < r.n_edges; i++)
		r.cost += K->g->edges[r.edges[i]].cost;
	nu = 0;
	for (size_t t = 0; t < K->k; t++) {
		r.terminals[t] = K->term[t];
		r.groups[t] = K->group[t];
		if (K->group[t] != 0)
			r.unreached[nu++] = K->term[t];
	}
	*ret = r;
	return 0;
}

int steiner_kmb(const struct steiner_graph *g, const int *terminals, size_t n_terminals,
		struct steiner_result *ret, struct t2s_error *err)
{
	return steiner_kmb_ex(g, terminals, n_terminals, 0, ret, err);
}

int steiner_kmb_ex(const struct steiner_graph *g, const int *terminals, size_t n_terminals,
		   unsigned flags, struct steiner_result *ret, struct t2s_error *err)
{
	struct kmb K;
	double cost;
	int rc;

	if (n_terminals > 0 && !terminals)
		return t2s_error_set(err, T2S_ERR_INVALID, "terminals missing");
	for (size_t i = 0; i < n_terminals; i++)
		if (terminals[i] < 0 || terminals[i] >= g->n_nodes)
			return t2s_error_set(err, T2S_ERR_INVALID,
					     "terminal %d is not a node of the graph (%d nodes)",
					     terminals[i], g->n_nodes);
	memset(&K, 0, sizeof(K));
	K.g = g;
	K.n = g->n_nodes;
	K.e = g->n_edges;
	if (kmb_alloc(&K) != 0)
		goto nomem;
	build_adjacency(&K);
	for (int v = 0; v < K.n; v++) {
		K.term_idx[v] = -1;
		K.loc[v] = -1;
	}
	for (size_t i = 0; i < n_terminals; i++) {
		if (K.term_idx[terminals[i]] >= 0)
			continue;
		K.term_idx[terminals[i]] = (int)K.k;
		K.term[K.k++] = terminals[i];
	}
	if (K.k > 0) {
		if (kmb_initial_set(&K) != 0)
			goto nomem;
		eval(&K, -1, -1, true, &cost);
		set_assign(&K, K.keep_nodes, K.n_keep_nodes);
		eval(&K, -1, -1, true, &cost);
		if (K.k > 1 && !(flags & STEINER_PLAIN_KMB))
			local_search(&K, &cost);
	}
	rc = kmb_result(&K, ret);
	kmb_free(&K);
	if (rc)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory building the Steiner tree");
	return 0;
nomem:
	kmb_free(&K);
	return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory building the Steiner tree");
}
