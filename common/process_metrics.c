/*
 * process_metrics.c - build_info and the process_* metrics read from /proc
 * at every scrape (see process_metrics.h).
 */
#include "common/process_metrics.h"

#include "common/metrics.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static struct metric_family *m_cpu, *m_rss, *m_vsize, *m_fds, *m_max_fds, *m_start;
static const char *build_version, *build_commit;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Entries of /proc/self/fd (less ".", ".." and the directory's own descriptor), or -1. */
static long count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	long n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0;
}

/* /proc/self/stat's fields after the command (which may hold spaces and parentheses). */
static void read_stat(void)
{
	FILE *f = fopen("/proc/self/stat", "r");
	if (!f)
		return;
	char buf[1024];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	unsigned long utime, stime, vsize;
	long rss;
	/* Fields 3..24 (proc(5)): state ... utime(14) stime(15) ... starttime(22) vsize(23) rss(24). */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d %*u %lu %ld",
			 &utime, &stime, &vsize, &rss) != 4)
		return;
	long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	if (hz <= 0 || page <= 0)
		return;
	metrics_set(m_cpu, NULL, (double)(utime + stime) / (double)hz);
	metrics_set(m_vsize, NULL, (double)vsize);
	metrics_set(m_rss, NULL, (double)rss * (double)page);
}

static void collect(void *ctx)
{
	(void)ctx;
	read_stat();
	long fds = count_open_fds();
	if (fds >= 0)
		metrics_set(m_fds, NULL, (double)fds);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		metrics_set(m_max_fds, NULL, (double)rl.rlim_cur);
}

static void register_once(void)
{
	static const char *const build_labels[] = {"version", "commit", NULL};
	struct metric_family *info = metrics_family("text2sqld_build_info",
						    "The running build: its version and source commit (always 1).",
						    METRIC_GAUGE, build_labels, NULL, 0);
	metrics_set(info, (const char *const[]){build_version, build_commit, NULL}, 1);
	m_cpu = metrics_family("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
			       METRIC_COUNTER, NULL, NULL, 0);
	m_rss = metrics_family("process_resident_memory_bytes", "Resident memory size in bytes.", METRIC_GAUGE,
			       NULL, NULL, 0);
	m_vsize = metrics_family("process_virtual_memory_bytes", "Virtual memory size in bytes.", METRIC_GAUGE,
				 NULL, NULL, 0);
	m_fds = metrics_family("process_open_fds", "Number of open file descriptors.", METRIC_GAUGE, NULL, NULL, 0);
	m_max_fds = metrics_family("process_max_fds", "Maximum number of open file descriptors.", METRIC_GAUGE,
				   NULL, NULL, 0);
	m_start = metrics_family("process_start_time_seconds",
				 "Start time of the process since unix epoch in seconds.", METRIC_GAUGE, NULL, NULL, 0);
	/* The wall clock now (registration is among main's first steps): /proc's boot time plus the start
	   jiffies drifts from the wall clock by seconds on machines whose clock was stepped since boot. */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	metrics_set(m_start, NULL, (double)now.tv_sec + (double)now.tv_nsec / 1e9);
	collect(NULL);
	metrics_add_collector(collect, NULL);
}

void process_metrics_register(const char *version, const char *commit)
{
	build_version = version ? version : "";
	build_commit = commit ? commit : "";
	pthread_once(&once, register_once);
}
