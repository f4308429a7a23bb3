/*
 * arena.c - chunked bump allocator (see arena.h).
 */
#include "common/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_CHUNK_MIN 4096
#define ARENA_ALIGN 16

struct arena_chunk {
	struct arena_chunk *next;
	size_t size; /* usable bytes in data */
	size_t used;
	_Alignas(ARENA_ALIGN) unsigned char data[];
};

void arena_init(struct arena *a)
{
	a->head = NULL;
	a->used_total = 0;
}

void arena_release(struct arena *a)
{
	struct arena_chunk *c = a->head;
	while (c) {
		struct arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	arena_init(a);
}

void *arena_alloc(struct arena *a, size_t size)
{
	size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (need < size)
		return NULL;
	struct arena_chunk *c = a->head;
	if (!c || c->size - c->used < need) {
		size_t chunk = ARENA_CHUNK_MIN;
		if (c && c->size < (1u << 20))
			chunk = c->size * 2; /* grow geometrically up to 1 MiB */
		if (chunk < need)
			chunk = need;
		if (chunk > SIZE_MAX - sizeof(*c))
			return NULL;
		c = malloc(sizeof(*c) + chunk);
		if (!c)
			return NULL;
		c->size = chunk;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	void *p = c->data + c->used;
	c->used += need;
	a->used_total += need;
	return p;
}

void *arena_calloc(struct arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	size_t bytes = n * size;
	void *p = arena_alloc(a, bytes > 0 ? bytes : 1);
	if (p)
		memset(p, 0, n * size);
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	if (!s)
		return NULL;
	char *p = arena_alloc(a, n + 1);
	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return s ? arena_strndup(a, s, strlen(s)) : NULL;
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *p = arena_alloc(a, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void *arena_grow(struct arena *a, void *arr, size_t n, size_t *cap, size_t elem)
{
	if (n < *cap)
		return arr;
	size_t ncap = *cap ? *cap * 2 : 8;
	if (ncap < *cap || (elem && ncap > SIZE_MAX / elem))
		return NULL;
	void *p = arena_alloc(a, ncap * elem);
	if (!p)
		return NULL;
	if (n)
		memcpy(p, arr, n * elem);
	*cap = ncap;
	return p;
}
