/*
 * column_index_internal.h - what the files building a column index share
 * (pipeline/link/ only, never included from outside): the build's steps,
 * which column_index_build (column_index.c) takes in turn, and the
 * documents they embed (column_index_documents.c, which calls no step).
 */
#ifndef T2S_COLUMN_INDEX_INTERNAL_H
#define T2S_COLUMN_INDEX_INTERNAL_H

#include "common/contract.h"
#include "pipeline/link/column_index.h"

/* column_index_documents.c: the document of table t (its name, its columns' names, its comment); malloc'd, NULL when out
   of memory. */
char *column_index_table_document(const struct schema_table *t);

/* column_index_lexical.c: fit the lexical embedder on docs (one per flat column) and fill the lexical column and
   table vectors, the name words and their keys, and the related-word index. */
T2S_MUST_CHECK
int column_index_lexical_vectors(struct column_index *idx, char **docs, const struct column_index_options *o,
				 struct t2s_error *err);

/* column_index_remote.c: fill idx->remote_vectors for docs with o->embed_model, from the cache where possible. */
T2S_MUST_CHECK
int column_index_remote_vectors(struct column_index *idx, char **docs, const struct column_index_options *o,
				struct t2s_error *err);

/* column_index_graph.c: the schema graph (idx->edges, idx->graph) with the weights w. */
T2S_MUST_CHECK
int column_index_build_edges(struct column_index *idx, const struct link_weights *w);

#endif
