/*
 * arena.h - a region allocator: many small allocations, one free.
 *
 * Used for request-scoped memory (one arena per HTTP request, released when
 * the response has been sent) and for long-lived immutable objects built in
 * one go (a schema model owns one arena).  Allocations are never freed
 * individually.  An arena is not thread-safe: one owner at a time.
 */
#ifndef T2S_ARENA_H
#define T2S_ARENA_H

#include <stddef.h>

struct arena_chunk;

struct arena {
	struct arena_chunk *head; /* newest chunk first; NULL when empty */
	size_t used_total;        /* bytes handed out, for limits and metrics */
};

void arena_init(struct arena *a);
/* Free every chunk; the arena is empty and reusable afterwards. */
void arena_release(struct arena *a);

/* size bytes aligned for any type, or NULL when out of memory. */
void *arena_alloc(struct arena *a, size_t size);
/* Zero-filled variant of arena_alloc for n elements of size bytes (overflow-checked). */
void *arena_calloc(struct arena *a, size_t n, size_t size);
/* Copies of strings into the arena; NULL in gives NULL out. */
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Make room for one more element in an arena-backed array of n elements of
 * elem bytes with capacity *cap: returns arr itself when there is room, else a
 * larger copy (the old block stays in the arena until release).  NULL when
 * out of memory.  Usage: v = arena_grow(a, v, n, &cap, sizeof(*v)); v[n++] = x;
 */
void *arena_grow(struct arena *a, void *arr, size_t n, size_t *cap, size_t elem);

#endif
