/*
 * column_index.c - building the shared per-database column index (see column_index.h):
 * the build in order (the column documents: column_index_documents.c;
 * lexical vectors: column_index_lexical.c; remote vectors:
 * column_index_remote.c; the schema graph: column_index_graph.c) and the
 * index's reference count.
 */
#include "pipeline/link/column_index_internal.h"

#include "common/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void column_index_options_init(struct column_index_options *o)
{
	*o = (struct column_index_options){
		.lexical_dim = EMBED_LEXICAL_DEFAULT_DIM,
		.weights = {.connect = 0.4, .semantic = 0.4, .statistical = 0.2},
		.remote_retry_ms = 30000,
	};
}

static int flatten_columns(struct column_index *idx)
{
	const struct schema *s = idx->schema;
	size_t n = 0;
	for (size_t t = 0; t < s->n_tables; t++)
		n += s->tables[t].n_columns;
	idx->columns = calloc(n ? n : 1, sizeof(*idx->columns));
	idx->table_first_column = calloc(s->n_tables + 1, sizeof(*idx->table_first_column));
	if (!idx->columns || !idx->table_first_column)
		return -T2S_ERR_NOMEM;
	size_t k = 0;
	for (size_t t = 0; t < s->n_tables; t++) {
		idx->table_first_column[t] = k;
		for (size_t c = 0; c < s->tables[t].n_columns; c++)
			idx->columns[k++] = (struct link_column_ref){(int)t, (int)c};
	}
	idx->table_first_column[s->n_tables] = k;
	idx->n_columns = n;
	return 0;
}

int column_index_build(struct schema *s, const struct column_index_options *o, struct column_index **ret,
		     struct t2s_error *err)
{
	double start = clock_now_ms();
	struct column_index *idx = calloc(1, sizeof(*idx));
	if (!idx)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	atomic_init(&idx->refs, 1);
	idx->schema = schema_ref(s);
	idx->wordnet = o->wordnet;
	int rc = flatten_columns(idx);
	char **docs = rc == 0 ? calloc(idx->n_columns ? idx->n_columns : 1, sizeof(*docs)) : NULL;
	if (!docs)
		rc = -T2S_ERR_NOMEM;
	for (size_t i = 0; rc == 0 && i < idx->n_columns; i++)
		if (!(docs[i] = link_column_document(s, idx->columns[i].table, idx->columns[i].column)))
			rc = -T2S_ERR_NOMEM;
	if (rc == 0)
		rc = column_index_lexical_vectors(idx, docs, o, err);
	if (rc == 0 && o->embed_model) {
		rc = column_index_remote_vectors(idx, docs, o, err);
		if (rc < 0 && rc != -T2S_ERR_NOMEM && o->lexical_on_remote_failure) {
			/* The lexical vectors are complete: keep them, and say why the remote ones are missing. */
			free(idx->remote_vectors);
			idx->remote_vectors = NULL;
			idx->remote_dim = 0;
			idx->remote_failure = fallback_reason_of(rc, idx->remote_http_status);
			snprintf(idx->remote_failure_detail, sizeof(idx->remote_failure_detail), "%.*s",
				 (int)sizeof(idx->remote_failure_detail) - 1, err ? err->message : "the embedding server failed");
			rc = 0;
		}
	}
	if (rc == 0)
		rc = column_index_build_edges(idx, &o->weights);
	for (size_t i = 0; docs && i < idx->n_columns; i++)
		free(docs[i]);
	free(docs);
	if (rc < 0) {
		if (rc == -T2S_ERR_NOMEM)
			t2s_error_set(err, T2S_ERR_NOMEM, "out of memory building the linking index");
		column_index_unref(idx);
		return rc;
	}
	idx->build_ms = clock_now_ms() - start;
	*ret = idx;
	return 0;
}

struct column_index *column_index_ref(struct column_index *idx)
{
	if (idx)
		atomic_fetch_add(&idx->refs, 1);
	return idx;
}

struct column_index *column_index_unref(struct column_index *idx)
{
	if (!idx || atomic_fetch_sub(&idx->refs, 1) != 1)
		return NULL;
	for (size_t i = 0; idx->column_vectors && i < idx->n_columns; i++)
		embed_sparse_release(&idx->column_vectors[i]);
	free(idx->column_vectors);
	for (size_t k = 0; idx->expansions && k < idx->n_expansions; k++)
		embed_sparse_release(&idx->expansions[k]);
	free(idx->expansions);
	free(idx->column_expansion);
	free(idx->column_expansion_scale);
	free(idx->table_vectors);
	for (size_t t = 0; idx->table_words && t < idx->schema->n_tables; t++)
		free(idx->table_words[t]);
	free(idx->table_words);
	related_words_release(&idx->related);
	related_words_release(&idx->related_spelled);
	for (size_t i = 0; idx->column_words && i < idx->n_columns; i++)
		free(idx->column_words[i]);
	free(idx->column_words);
	free(idx->column_word_keys);
	free(idx->column_word_first);
	free(idx->column_name_id);
	free(idx->name_first_column);
	free(idx->remote_vectors);
	free(idx->columns);
	free(idx->table_first_column);
	free(idx->edges);
	steiner_graph_release(&idx->graph);
	embed_lexical_release(&idx->lexical);
	schema_unref(idx->schema);
	free(idx);
	return NULL;
}
