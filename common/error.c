/*
 * error.c - messages and slugs of the codes in error.h.
 */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>

static const struct {
	const char *slug;
	const char *title;
} code_info[T2S_CODE_COUNT] = {
	[T2S_OK] = {"ok", "OK"},
	[T2S_ERR_NOMEM] = {"out-of-memory", "Out of memory"},
	[T2S_ERR_INVALID] = {"invalid-request", "Invalid request"},
	[T2S_ERR_NOT_FOUND] = {"not-found", "Not found"},
	[T2S_ERR_FORBIDDEN] = {"forbidden", "Forbidden"},
	[T2S_ERR_SQL_REJECTED] = {"sql-rejected", "SQL statement rejected"},
	[T2S_ERR_SQL_INVALID] = {"sql-invalid", "SQL statement invalid"},
	[T2S_ERR_SQL_FAILED] = {"sql-failed", "SQL statement failed"},
	[T2S_ERR_TIMEOUT] = {"timeout", "Time limit reached"},
	[T2S_ERR_UNAVAILABLE] = {"unavailable", "Dependency unavailable"},
	[T2S_ERR_UPSTREAM] = {"upstream-error", "Model server error"},
	[T2S_ERR_UPSTREAM_TIMEOUT] = {"upstream-timeout", "Model server timeout"},
	[T2S_ERR_GENERATION_UNAVAILABLE] = {"generation-unavailable", "SQL generation unavailable"},
	[T2S_ERR_GENERATION_FAILED] = {"generation-failed", "No valid SQL generated"},
	[T2S_ERR_UNANSWERABLE] = {"unanswerable", "Question not answerable from this database"},
	[T2S_ERR_INTERNAL] = {"internal", "Internal error"},
	[T2S_ERR_CANCELLED] = {"cancelled", "Cancelled"},
	[T2S_ERR_QUOTA] = {"quota-exceeded", "Storage quota reached"},
	[T2S_ERR_LOW_CONFIDENCE] = {"low-confidence", "Answer below the requested confidence"},
	[T2S_ERR_BUILTIN_REFUSED] = {"builtin-refused", "The built-in generator cannot answer this question"},
};

int t2s_error_set(struct t2s_error *err, enum t2s_code code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return -(int)code;
}

void t2s_error_clear(struct t2s_error *err)
{
	if (err) {
		err->code = T2S_OK;
		err->message[0] = '\0';
	}
}

const char *t2s_code_slug(enum t2s_code code)
{
	if ((int)code < 0 || code >= T2S_CODE_COUNT)
		return "internal";
	return code_info[code].slug;
}

const char *t2s_code_title(enum t2s_code code)
{
	if ((int)code < 0 || code >= T2S_CODE_COUNT)
		return "Internal error";
	return code_info[code].title;
}
