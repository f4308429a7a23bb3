/*
 * memory.h - giving freed heap memory back to the system.
 *
 * A background build (value index, column index) frees large temporary
 * buffers in its own thread's malloc arena; memory_give_back() returns them
 * to the system (glibc's malloc_trim).  Under AddressSanitizer or
 * ThreadSanitizer the sanitizer's allocator owns the heap and glibc's arenas
 * are not ours to walk (malloc_trim there has crashed in CI): it does nothing.
 */
#ifndef T2S_MEMORY_H
#define T2S_MEMORY_H

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
static inline void memory_give_back(void)
{
}
#else
#include <malloc.h>
static inline void memory_give_back(void)
{
	malloc_trim(0);
}
#endif

#endif
