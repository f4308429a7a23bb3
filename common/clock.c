/*
 * clock.c - time helpers (see clock.h).
 */
#include "common/clock.h"

#include <stdio.h>
#include <time.h>

double clock_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

struct timespec clock_realtime_in(double ms)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	long long ns = (long long)t.tv_nsec + (long long)(ms * 1e6);
	t.tv_sec += (time_t)(ns / 1000000000LL);
	t.tv_nsec = (long)(ns % 1000000000LL);
	return t;
}

void clock_rfc3339(char *buf, unsigned long size)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}
