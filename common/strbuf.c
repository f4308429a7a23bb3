/*
 * strbuf.c - bounded growable buffer (see strbuf.h).
 */
#include "common/strbuf.h"

#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char strbuf_empty[1];

void strbuf_init(struct strbuf *sb, size_t max)
{
	sb->buf = strbuf_empty;
	sb->len = 0;
	sb->alloc = 0;
	sb->max = max;
}

void strbuf_release(struct strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	strbuf_init(sb, sb->max);
}

static int strbuf_grow(struct strbuf *sb, size_t extra)
{
	if (extra > sb->max || sb->len > sb->max - extra)
		return -T2S_ERR_INVALID;
	size_t want = sb->len + extra + 1;
	if (want <= sb->alloc)
		return 0;
	size_t n = sb->alloc ? sb->alloc : 64;
	while (n < want)
		n = n * 2 < n ? want : n * 2;
	char *p = sb->alloc ? realloc(sb->buf, n) : malloc(n);
	if (!p)
		return -T2S_ERR_NOMEM;
	if (!sb->alloc)
		p[0] = '\0';
	sb->buf = p;
	sb->alloc = n;
	return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	int r = strbuf_grow(sb, len);
	if (r < 0)
		return r;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_adds(struct strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -T2S_ERR_INVALID;
	int r = strbuf_grow(sb, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}

char *strbuf_detach(struct strbuf *sb, size_t *ret_len)
{
	char *s = sb->alloc ? sb->buf : strdup("");
	if (ret_len)
		*ret_len = sb->alloc ? sb->len : 0;
	strbuf_init(sb, sb->max);
	return s;
}
