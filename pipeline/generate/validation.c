/*
 * validation.c - the validation report's kernel (see validation.h): a check
 * appended, the first blocking failure, the report freed.  The bottom of
 * validation's files: every level appends through validation_add, and
 * nothing here calls a level.
 */
#include "pipeline/generate/validation.h"

#include "common/limits.h"
#include "common/utf8.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int validation_add(struct validation *v, int level, const char *check, bool ok, bool blocking, const char *fmt, ...)
{
	assert(check && fmt && level >= 1 && level <= 3);
	assert(v->n_checks <= v->cap_checks && v->failed < (int)v->n_checks);
	if (v->n_checks == v->cap_checks) {
		size_t cap = v->cap_checks ? v->cap_checks * 2 : 16;
		struct validation_check *c = realloc(v->checks, cap * sizeof(*c));
		if (!c)
			return -T2S_ERR_NOMEM;
		v->checks = c;
		v->cap_checks = cap;
	}
	char *detail = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&detail, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -T2S_ERR_NOMEM;
	if ((size_t)n > T2S_EXCERPT_MAX_BYTES) { /* a detail may quote a literal of the statement */
		char *cut = utf8_excerpt(detail, T2S_EXCERPT_MAX_BYTES);
		free(detail);
		if (!(detail = cut))
			return -T2S_ERR_NOMEM;
	}
	v->checks[v->n_checks] = (struct validation_check){level, check, ok, blocking, detail};
	if (!ok && blocking && v->failed < 0)
		v->failed = (int)v->n_checks;
	v->n_checks++;
	return 0;
}

const char *validation_error(const struct validation *v)
{
	assert(v->failed < (int)v->n_checks);
	return v->failed >= 0 ? v->checks[v->failed].detail : "";
}

void validation_release(struct validation *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n_checks; i++)
		free(v->checks[i].detail);
	free(v->checks);
	if (v->executed)
		exec_result_release(&v->result);
	free(v->unknown_name);
	free(v->stored_literal);
	free(v->stored_spelling);
	free(v->used_tables);
	for (size_t i = 0; i < v->n_literals; i++)
		free(v->literals[i].value);
	free(v->literals);
	memset(v, 0, sizeof(*v));
	v->failed = -1;
}
