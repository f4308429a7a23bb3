/*
 * redis_client.c - see redis_client.h.
 */
#include "pipeline/models/redis_client.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct redis_target {
	char host[256];
	int port;
	char socket_path[256];
	char password[256];
	int db;
};

static int parse_url(const char *url, struct redis_target *t, struct t2s_error *err)
{
	memset(t, 0, sizeof(*t));
	t->port = 6379;
	if (strncmp(url, "unix://", 7) == 0) {
		const char *path = url + 7;
		size_t n = strcspn(path, "?");
		if (n == 0 || n >= sizeof(t->socket_path))
			return t2s_error_set(err, T2S_ERR_INVALID, "redis URL: bad socket path");
		memcpy(t->socket_path, path, n);
		const char *q = strstr(path + n, "db=");
		t->db = q ? (int)strtol(q + 3, NULL, 10) : 0;
		return 0;
	}
	if (strncmp(url, "redis://", 8) != 0)
		return t2s_error_set(err, T2S_ERR_INVALID, "redis URL must start with redis:// or unix://");
	const char *p = url + 8;
	const char *at = strchr(p, '@');
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		const char *pw = colon ? colon + 1 : p;
		size_t n = (size_t)(at - pw);
		if (n >= sizeof(t->password))
			return t2s_error_set(err, T2S_ERR_INVALID, "redis URL: password too long");
		memcpy(t->password, pw, n);
		p = at + 1;
	}
	size_t hn = strcspn(p, ":/");
	if (hn == 0 || hn >= sizeof(t->host))
		return t2s_error_set(err, T2S_ERR_INVALID, "redis URL: missing host");
	memcpy(t->host, p, hn);
	p += hn;
	if (*p == ':') {
		t->port = (int)strtol(p + 1, (char **)&p, 10);
		if (t->port <= 0 || t->port > 65535)
			return t2s_error_set(err, T2S_ERR_INVALID, "redis URL: bad port");
	}
	if (*p == '/' && p[1])
		t->db = (int)strtol(p + 1, NULL, 10);
	return 0;
}

int redis_url_check(const char *url, struct t2s_error *err)
{
	struct redis_target t;
	return parse_url(url, &t, err);
}

/* Run a command whose reply must not be an error. */
static int command_ok(redisContext *c, const char *what, struct t2s_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (!r)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "redis %s: %s", what, c->errstr);
	int rc = r->type == REDIS_REPLY_ERROR ? t2s_error_set(err, T2S_ERR_UNAVAILABLE, "redis %s: %s", what, r->str) : 0;
	freeReplyObject(r);
	return rc;
}

int redis_connect(const char *url, long timeout_ms, redisContext **ret, struct t2s_error *err)
{
	struct redis_target t;
	int rc = parse_url(url, &t, err);
	if (rc < 0)
		return rc;
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	redisContext *c = t.socket_path[0] ? redisConnectUnixWithTimeout(t.socket_path, tv)
					   : redisConnectWithTimeout(t.host, t.port, tv);
	if (!c)
		return t2s_error_set(err, T2S_ERR_NOMEM, "redis: out of memory");
	if (c->err) {
		rc = t2s_error_set(err, T2S_ERR_UNAVAILABLE, "redis connect: %s", c->errstr);
		redisFree(c);
		return rc;
	}
	redisSetTimeout(c, tv);
	if (t.password[0])
		rc = command_ok(c, "AUTH", err, "AUTH %s", t.password);
	if (rc == 0 && t.db)
		rc = command_ok(c, "SELECT", err, "SELECT %d", t.db);
	if (rc < 0) {
		redisFree(c);
		return rc;
	}
	*ret = c;
	return 0;
}

int redis_ping(const char *url, long timeout_ms, struct t2s_error *err)
{
	redisContext *c;
	int rc = redis_connect(url, timeout_ms, &c, err);
	if (rc < 0)
		return rc;
	rc = command_ok(c, "PING", err, "PING");
	redisFree(c);
	return rc;
}
