/*
 * tokens.h - the one estimate of how many model tokens a text costs.
 *
 * Tokens are estimated as bytes / 4, rounded up: BPE tokenizers average
 * about four bytes per token on English and SQL, and the estimate errs high
 * on identifiers.  It is no model's tokenizer; it is cheap, stable and the
 * same everywhere a budget is kept (the generator's prompt, the columns
 * /link sends), so budgets in the config mean one thing.
 */
#ifndef T2S_TOKENS_H
#define T2S_TOKENS_H

#include <stddef.h>

/* Estimated tokens of n bytes of text: ceil(n / 4). */
long tokens_estimate_bytes(size_t n);
/* Estimated tokens of a NUL-terminated text (0 for NULL). */
long tokens_estimate(const char *text);

#endif
