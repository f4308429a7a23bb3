/*
 * memory.h - giving freed heap memory back to the system.
 *
 * A background build (value index, column index) frees large temporary
 * buffers in its own thread's malloc arena; memory_give_back() returns them
 * to the system (glibc's malloc_trim).  Under AddressSanitizer or
 * ThreadSanitizer the sanitizer's allocator owns the heap and glibc's arenas
 * are not ours to walk (malloc_trim there has crashed in CI): it does nothing.
 * The server also calls it every MEMORY_TRIM_INTERVAL_S while it serves, so
 * pages freed by requests go back too, and bounds the arenas at start
 * (memory_limit_arenas).
 */
#ifndef T2S_MEMORY_H
#define T2S_MEMORY_H

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
static inline void memory_give_back(void)
{
}

static inline void memory_limit_arenas(void)
{
}
#else
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>
static inline void memory_give_back(void)
{
	malloc_trim(0);
}

/*
 * glibc gives each thread that meets a locked arena a new one, up to 8 per
 * core; with a thread per connection, hundreds of threads spread the same
 * working set over that many heaps, each keeping its own free fragments
 * (bench/soak.py --endpoints mixed measured the RSS growth this causes).
 * At start, before other threads: at most MEMORY_ARENAS_PER_CPU arenas a
 * core, unless MALLOC_ARENA_MAX or GLIBC_TUNABLES says otherwise.
 */
#define MEMORY_ARENAS_PER_CPU 2
/* How often the serving process gives freed pages back (server/main.c). */
#define MEMORY_TRIM_INTERVAL_S 10
static inline void memory_limit_arenas(void)
{
	if (getenv("MALLOC_ARENA_MAX") || getenv("GLIBC_TUNABLES"))
		return;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	mallopt(M_ARENA_MAX, (int)(cpus > 0 ? cpus * MEMORY_ARENAS_PER_CPU : MEMORY_ARENAS_PER_CPU));
}
#endif

#endif
