/*
 * builtin.c - the built-in generator's entry point (see builtin.h): the
 * question read whole (builtin_phases.c); when refused, read as two clauses
 * of a set operation (builtin_compound.c); the reading written as SQL
 * (builtin_sql.c); the claims (which rule read each word) copied into the
 * result.  It calls the reading, the set operations and the writer, which
 * call none of it.
 */
#include "pipeline/builtin/builtin_internal.h"

#include "common/clock.h"
#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reading's claims into ret (malloc'd); 0 or -T2S_ERR_NOMEM. */
static int put_claims(const struct bi_claims *c, struct builtin_result *ret)
{
	if (c->n == 0)
		return 0;
	ret->claims = calloc(c->n, sizeof(*ret->claims));
	if (!ret->claims)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < c->n; i++) {
		memcpy(ret->claims[i].word, c->word[i], sizeof(ret->claims[i].word));
		ret->claims[i].rule = c->rule[i];
	}
	ret->n_claims = c->n;
	return 0;
}

int builtin_generate(const struct builtin_input *in, struct builtin_result *ret)
{
	double t0 = clock_now_ms();
	*ret = (struct builtin_result){0};
	struct bi_query q;
	struct bi_refusal why = {0};
	struct bi_claims *claims = calloc(1, sizeof(*claims));
	if (!claims)
		return -T2S_ERR_NOMEM;
	int rc = in->question && in->schema ? builtin_read(in, &q, &why, claims) : BI_REFUSED_QUESTION;
	int set_op = BI_COMPOUND_NONE;
	if (rc == BI_REFUSED_QUESTION && why.code)
		set_op = builtin_read_compound(in, ret); /* BI_COMPOUND_NONE: the whole question's refusal stands */
	if (rc >= 0 && set_op >= 0)
		rc = put_claims(claims, ret) < 0 ? -T2S_ERR_NOMEM : rc;
	free(claims);
	if (rc < 0 || set_op < 0) {
		builtin_result_release(ret);
		return rc < 0 ? rc : set_op;
	}
	if (set_op == BI_COMPOUND_READ) {
		/* ret's sql, shape and confidence are the set operation's; the claims the whole reading's */
	} else if (rc == BI_REFUSED_QUESTION) {
		ret->refusal = why.code ? why.code : "no_input";
		ret->refused_by = why.code ? why.rule : NULL;
		snprintf(ret->reason, sizeof(ret->reason), "%s", why.code ? why.reason : "no question or schema");
	} else {
		if (!(ret->sql = builtin_write_sql(in->schema, &q))) {
			builtin_result_release(ret);
			return -T2S_ERR_NOMEM;
		}
		ret->shape = q.shape;
		ret->confidence = q.confidence;
	}
	ret->ms = clock_now_ms() - t0;
	return 0;
}

void builtin_result_release(struct builtin_result *r)
{
	free(r->sql);
	free(r->claims);
	*r = (struct builtin_result){0};
}
