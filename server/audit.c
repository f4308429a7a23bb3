/*
 * audit.c - the audit log file (see audit.h): opened for appending, one
 * write(2) per JSON line under a lock, reopened on SIGHUP.
 */
#include "server/audit.h"

#include "common/clock.h"
#include "common/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t audit_lock = PTHREAD_MUTEX_INITIALIZER;
static int audit_fd = -1;       /* guarded by audit_lock */
static char *audit_path;        /* set once by audit_open, freed by audit_close */
static struct metric_family *m_records, *m_failures;

static void register_metrics(void)
{
	m_records = metrics_family("text2sqld_audit_records_total", "Lines written to the audit log (log.audit_file).",
				   METRIC_COUNTER, NULL, NULL, 0);
	m_failures = metrics_family("text2sqld_audit_write_failures_total",
				    "Audit log lines that could not be written, and reopens (SIGHUP) that failed; the "
				    "requests they recorded were answered all the same.",
				    METRIC_COUNTER, NULL, NULL, 0);
}

static int open_file(const char *path)
{
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
}

int audit_open(const char *path, struct t2s_error *err)
{
	register_metrics();
	if (!path)
		return 0;
	int fd = open_file(path);
	if (fd < 0)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "log.audit_file: cannot open %s: %s", path, strerror(errno));
	char *copy = strdup(path);
	if (!copy) {
		close(fd);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_lock(&audit_lock);
	audit_fd = fd;
	audit_path = copy;
	pthread_mutex_unlock(&audit_lock);
	return 0;
}

int audit_reopen(struct t2s_error *err)
{
	if (!audit_path)
		return 0;
	int fd = open_file(audit_path);
	if (fd < 0) {
		metrics_add(m_failures, NULL, 1);
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "log.audit_file: cannot open %s again (still writing to "
				     "the file open before): %s", audit_path, strerror(errno));
	}
	pthread_mutex_lock(&audit_lock);
	int old = audit_fd;
	audit_fd = fd;
	pthread_mutex_unlock(&audit_lock);
	if (old >= 0)
		close(old);
	return 0;
}

bool audit_enabled(void)
{
	return audit_path != NULL;
}

/* e as one compact JSON object (a new reference), or NULL when out of memory. */
static json_t *entry_json(const struct audit_entry *e)
{
	char ts[40];
	clock_rfc3339(ts, sizeof(ts));
	json_t *o = json_pack("{s:s, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:i, s:f}", "time", ts,
			      "request_id", e->request_id, "caller", e->caller, "action", e->action, "method", e->method,
			      "route", e->route, "database", e->database, "question", e->question, "sql", e->sql,
			      "generator", e->generator, "status", e->status, "elapsed_ms", e->elapsed_ms);
	if (!o)
		return NULL;
	json_object_set_new(o, "rows", e->rows >= 0 ? json_integer((json_int_t)e->rows) : json_null());
	json_object_set_new(o, "confidence", isnan(e->confidence) ? json_null() : json_real(e->confidence));
	return o;
}

/* Write all of buf to fd (a short write is continued); false on an error. */
static bool write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

void audit_write(const struct audit_entry *e)
{
	if (!audit_path)
		return;
	json_t *o = entry_json(e);
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(o);
	size_t len = text ? strlen(text) : 0;
	char *line = text ? realloc(text, len + 2) : NULL;
	bool ok = false;
	if (line) {
		line[len] = '\n';
		line[len + 1] = '\0';
		pthread_mutex_lock(&audit_lock);
		ok = audit_fd >= 0 && write_all(audit_fd, line, len + 1);
		pthread_mutex_unlock(&audit_lock);
		free(line);
	} else {
		free(text);
	}
	metrics_add(ok ? m_records : m_failures, NULL, 1);
}

void audit_close(void)
{
	pthread_mutex_lock(&audit_lock);
	if (audit_fd >= 0)
		close(audit_fd);
	audit_fd = -1;
	pthread_mutex_unlock(&audit_lock);
	free(audit_path);
	audit_path = NULL;
}
