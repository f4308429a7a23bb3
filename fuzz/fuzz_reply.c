/*
 * fuzz_reply.c - libFuzzer target: a model's answer as the generate stage
 * reads it (pipeline/generate/reply.h, reply_extract_sql).  The SQL it
 * returns, when any, must be a non-empty string no longer than the answer.
 */
#include "pipeline/generate/reply.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *answer = malloc(size + 1);
	if (!answer)
		return 0;
	memcpy(answer, data, size);
	answer[size] = '\0';
	int nomem = 0;
	char *sql = reply_extract_sql(answer, &nomem);
	if (sql && (sql[0] == '\0' || strlen(sql) > strlen(answer)))
		abort();
	free(sql);
	free(answer);
	return 0;
}
