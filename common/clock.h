/*
 * clock.h - monotonic and wall-clock time in the units the service reports.
 */
#ifndef T2S_CLOCK_H
#define T2S_CLOCK_H

#include <time.h>

/* Monotonic milliseconds (fractional), for durations and deadlines. */
double clock_now_ms(void);
/* The CLOCK_REALTIME time ms (>= 0) from now, for pthread_cond_timedwait with a default condition. */
struct timespec clock_realtime_in(double ms);
/* Wall-clock time as RFC 3339 UTC with milliseconds into buf (>= 32 bytes). */
void clock_rfc3339(char *buf, unsigned long size);

#endif
