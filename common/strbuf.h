/*
 * strbuf.h - growable NUL-terminated byte buffer with a hard maximum.
 *
 * Invariant: after strbuf_init, sb->buf is never NULL (it points at a static
 * empty string until the first append).  Appends past sb->max fail with
 * -T2S_ERR_INVALID and leave the buffer unchanged, so user-controlled input
 * can never grow a buffer without bound.  strbuf_detach hands the malloc'd
 * string to the caller, who frees it with free().
 */
#ifndef T2S_STRBUF_H
#define T2S_STRBUF_H

#include <stddef.h>

struct strbuf {
	char *buf;
	size_t len;
	size_t alloc; /* 0 while buf points at the static empty string */
	size_t max;   /* largest len allowed */
};

void strbuf_init(struct strbuf *sb, size_t max);
void strbuf_release(struct strbuf *sb);
int strbuf_add(struct strbuf *sb, const void *data, size_t len);
int strbuf_adds(struct strbuf *sb, const char *s);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Returns the malloc'd string (never NULL unless out of memory) and resets sb. */
char *strbuf_detach(struct strbuf *sb, size_t *ret_len);

#endif
