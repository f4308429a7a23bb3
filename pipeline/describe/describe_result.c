/*
 * describe_result.c - the result of a describe run (describe.h,
 * describe_internal.h): the item sources' names, the errors the steps add to
 * it, and its release.  The bottom of the stage: the driver (describe.c),
 * the model phase (describe_model.c) and the serving layer
 * (describe_serve.c) call it; it calls none of them.
 */
#include "pipeline/describe/describe_internal.h"

#include <stdlib.h>
#include <string.h>

const char describe_source_model[] = "model";
const char describe_source_metadata[] = "metadata";
const char describe_source_override[] = "override";

int describe_push_error(struct describe_result *res, const char *table, const struct t2s_error *e)
{
	char **v = realloc(res->errors, (res->n_errors + 1) * sizeof(*v));
	struct strbuf sb;

	if (!v)
		return -T2S_ERR_NOMEM;
	res->errors = v;
	strbuf_init(&sb, 1024 + T2S_ERROR_MESSAGE_MAX);
	if (strbuf_addf(&sb, "%s: %s", table, e->message[0] ? e->message : t2s_code_title(e->code)) < 0 ||
	    !(v[res->n_errors] = strbuf_detach(&sb, NULL))) {
		strbuf_release(&sb);
		return -T2S_ERR_NOMEM;
	}
	res->n_errors++;
	return 0;
}

void describe_result_release(struct describe_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_items; i++)
		free(r->items[i].text);
	free(r->items);
	for (size_t i = 0; i < r->n_errors; i++)
		free(r->errors[i]);
	free(r->errors);
	memset(r, 0, sizeof(*r));
}
