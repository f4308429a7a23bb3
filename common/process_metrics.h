/*
 * process_metrics.h - the standard process metrics and the build's identity.
 *
 * process_metrics_register registers, once per process:
 *   text2sqld_build_info{version,commit}  gauge, always 1
 *   process_cpu_seconds_total             user + system CPU time (counter)
 *   process_resident_memory_bytes         resident set size
 *   process_virtual_memory_bytes          virtual memory size
 *   process_open_fds                      open file descriptors
 *   process_max_fds                       the soft RLIMIT_NOFILE
 *   process_start_time_seconds            start time, seconds since the epoch
 * with the names and meanings of the Prometheus client libraries' process
 * collector, so dashboards written for any exporter read them.  The process_
 * values are read from /proc/self at every scrape (a metrics collector);
 * where /proc is absent they stay at their last value (0 at first).
 *
 * version and commit must be static strings (they become label values
 * once, at registration).  Thread-safe; later calls do nothing.
 */
#ifndef T2S_PROCESS_METRICS_H
#define T2S_PROCESS_METRICS_H

void process_metrics_register(const char *version, const char *commit);

#endif
