/*
 * fuzz_reply.c - libFuzzer target: a model's answer, as each stage that
 * reads one parses it:
 *   - generate: the SQL in the answer (pipeline/generate/reply.h,
 *     reply_extract_sql), which must be non-empty and no longer than the
 *     answer;
 *   - link: the table names the link model picked (link_parse_answer),
 *     each a candidate, without repeats;
 *   - describe: the sentences for one table (describe_parse_answer), one
 *     slot per column of the table.
 * The schema is a small concert database built once.
 */
#include "pipeline/describe/describe.h"
#include "pipeline/generate/reply.h"
#include "pipeline/link/link.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct schema *schema;

static void add_table(struct schema_table *t, const char *name, const char *const *cols, size_t n)
{
	struct arena *a = &schema->arena;
	t->schema = "main";
	t->name = name;
	t->kind = "table";
	t->row_count = -1;
	t->n_columns = n;
	t->columns = arena_calloc(a, n, sizeof(struct schema_column));
	for (size_t i = 0; i < n; i++) {
		t->columns[i].name = cols[i];
		t->columns[i].type = i == 0 ? "INTEGER" : "TEXT";
	}
	t->primary_key = arena_calloc(a, 1, sizeof(char *));
	t->primary_key[0] = cols[0];
	t->n_primary_key = 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	static const char *const singer[] = {"Singer_ID", "Name", "Country", "Age"};
	static const char *const concert[] = {"concert_ID", "concert_Name", "Year", "Stadium_ID"};
	static const char *const stadium[] = {"Stadium_ID", "Location", "Capacity"};
	static const char *const singer_in_concert[] = {"concert_ID", "Singer_ID"};
	schema = schema_new("concert_singer", DB_ENGINE_SQLITE);
	if (!schema)
		abort();
	schema->n_tables = 4;
	schema->tables = arena_calloc(&schema->arena, 4, sizeof(struct schema_table));
	add_table(&schema->tables[0], "singer", singer, 4);
	add_table(&schema->tables[1], "concert", concert, 4);
	add_table(&schema->tables[2], "stadium", stadium, 3);
	add_table(&schema->tables[3], "singer_in_concert", singer_in_concert, 2);
	if (schema_finish(schema) < 0)
		abort();
	return 0;
}

static void generate_reply(const char *answer)
{
	int nomem = 0;
	char *sql = reply_extract_sql(answer, &nomem);
	if (sql && (sql[0] == '\0' || strlen(sql) > strlen(answer)))
		abort();
	free(sql);
}

static void link_reply(const char *answer)
{
	static const int candidates[] = {2, 0, 1}; /* singer_in_concert is not offered */
	int tables[3];
	size_t n = 0, n_unknown = 0;
	char **unknown = NULL;
	if (link_parse_answer(schema, candidates, 3, answer, tables, &n, &unknown, &n_unknown) == 0) {
		for (size_t i = 0; i < n; i++) {
			if (tables[i] == 3)
				abort(); /* not a candidate */
			for (size_t k = 0; k < i; k++)
				if (tables[k] == tables[i])
					abort();
		}
	}
	for (size_t i = 0; i < n_unknown; i++)
		free(unknown[i]);
	free(unknown);
}

static void describe_reply(const char *answer)
{
	char *table = NULL, **cols = NULL;
	int unknown = -1;
	struct t2s_error err = {0};
	if (describe_parse_answer(schema, 1, answer, &table, &cols, &unknown, &err) == 0) {
		if (unknown < 0)
			abort();
		for (size_t i = 0; i < schema->tables[1].n_columns; i++)
			free(cols[i]);
		free(cols);
		free(table);
	} else if (table || cols) {
		abort(); /* outputs are written only on success */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *answer = strndup((const char *)data, size); /* the text up to the first NUL */
	if (!answer)
		return 0;
	generate_reply(answer);
	link_reply(answer);
	describe_reply(answer);
	free(answer);
	return 0;
}
