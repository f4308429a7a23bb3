/*
 * column_index_documents.c - the texts a column index embeds (see
 * column_index.h, column_index_internal.h): a column's document (its table,
 * name, type, keys, comment and a few sample values) and a table's (its
 * name, twice, and its columns' names), identifiers followed by their
 * spelled-out form when they hold an abbreviation.  The bottom of the
 * build: the driver (column_index.c) and the lexical step
 * (column_index_lexical.c) call it; it calls neither.
 */
#include "pipeline/link/column_index_internal.h"

#include "common/strbuf.h"
#include "pipeline/text/lexicon.h"

#include <stdlib.h>
#include <string.h>

#define DOC_SAMPLES 3          /* sample values quoted in a column document */
#define DOC_SAMPLE_MAX_LEN 40  /* longer samples are left out of documents */

/*
 * Words of an identifier for documents: "SingerID" -> "SingerID" (the
 * embedder splits it), followed by its spelled-out form when it holds an
 * abbreviation ("Lname" -> "Lname last name").
 */
static void add_words(struct strbuf *sb, const char *s)
{
	strbuf_adds(sb, s);
	strbuf_adds(sb, " ");
	char **words = NULL;
	bool abbreviated = false;
	if (embed_lexical_words(s, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &words, NULL) == 0)
		for (char **w = words; *w && !abbreviated; w++)
			abbreviated = lexicon_abbreviation(*w, strlen(*w)) != NULL;
	free(words);
	char *spelled = abbreviated ? lexicon_spell_out(s) : NULL;
	if (spelled) {
		strbuf_adds(sb, spelled);
		strbuf_adds(sb, " ");
	}
	free(spelled);
}

char *link_column_document(const struct schema *s, int table, int column)
{
	const struct schema_table *t = &s->tables[table];
	const struct schema_column *c = &t->columns[column];
	struct strbuf sb;
	strbuf_init(&sb, 1 << 16);
	add_words(&sb, t->name);
	add_words(&sb, c->name);
	add_words(&sb, c->type);
	if (c->primary_key)
		strbuf_adds(&sb, "primary key ");
	if (c->reference) {
		strbuf_adds(&sb, "foreign key to ");
		add_words(&sb, c->reference->ref_table);
	}
	if (c->comment)
		add_words(&sb, c->comment);
	if (t->comment && column == 0)
		add_words(&sb, t->comment);
	int shown = 0;
	for (size_t i = 0; i < c->n_samples && shown < DOC_SAMPLES; i++) {
		if (strlen(c->samples[i]) > DOC_SAMPLE_MAX_LEN)
			continue;
		strbuf_adds(&sb, shown ? ", " : "values ");
		strbuf_adds(&sb, c->samples[i]);
		shown++;
	}
	return strbuf_detach(&sb, NULL);
}

char *column_index_table_document(const struct schema_table *t)
{
	struct strbuf sb;
	strbuf_init(&sb, 1 << 20);
	add_words(&sb, t->name);
	add_words(&sb, t->name); /* the table's own name weighs more than any one column */
	for (size_t c = 0; c < t->n_columns; c++)
		add_words(&sb, t->columns[c].name);
	if (t->comment)
		add_words(&sb, t->comment);
	return strbuf_detach(&sb, NULL);
}
