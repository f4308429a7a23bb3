/*
 * http_listener.c - accepting connections and holding them until their
 * first request head is complete (see http_listener.h).
 *
 * One thread, one epoll set with four kinds of members, told apart by the
 * tag in the event data (with a generation, so that an event for a closed
 * and reused table entry is ignored):
 *   listen  the listening socket (level-triggered; taken out of the set for
 *           100 ms when accept runs out of file descriptors; closed at the
 *           next tick after http_listener_stop_accepting);
 *   wake    an eventfd that http_listener_free writes to stop the thread;
 *   pending a connection whose head is still arriving.  Edge-triggered: each
 *           arrival of bytes wakes us once, and we peek (MSG_PEEK) at all
 *           bytes so far, so that libmicrohttpd later reads the request
 *           itself from the socket;
 *   linger  a connection we answered: its input is read and dropped until
 *           the client closes or 2 s pass, then it is closed (closing with
 *           unread input would send a reset that can destroy the answer).
 */
#include "server/http_listener.h"

#include "common/clock.h"
#include "server/http.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define LINGER_MS 2000.0
#define LINGER_SLOTS 256
#define TICK_MS 100

enum tag { TAG_LISTEN = 0, TAG_WAKE = 1, TAG_PENDING = 2, TAG_LINGER = 3 };

struct pending {
	int fd;            /* -1: free */
	uint32_t gen;
	double start_ms;
	struct sockaddr_storage addr;
	socklen_t addr_len;
};

struct lingering {
	int fd; /* -1: free */
	uint32_t gen;
	double deadline_ms;
};

struct http_listener {
	struct http_listener_options o;
	struct http_listener_callbacks cb;
	int listen_fd, epoll_fd, wake_fd, port;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	atomic_bool stop_accepting; /* close listen_fd at the next tick */
	atomic_uint active;
	atomic_uint n_pending;
	struct pending *pending;    /* o.max_pending entries */
	struct lingering lingering[LINGER_SLOTS];
	char *peek;                 /* o.head.max_header_bytes + 1 bytes */
	size_t peek_size;
	double accept_paused_until; /* 0: accepting */
	double next_tick;
};

static uint64_t ev_data(enum tag tag, uint32_t gen, uint32_t idx)
{
	return ((uint64_t)tag << 62) | ((uint64_t)(gen & 0x3fffffffu) << 32) | idx;
}

int http_listener_resolve(const char *host, int port, struct sockaddr_storage *ret, socklen_t *ret_len,
			  struct t2s_error *err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *ai = NULL;
	char port_s[16];
	snprintf(port_s, sizeof(port_s), "%d", port);
	int rc = getaddrinfo(host, port_s, &hints, &ai);
	if (rc != 0 || !ai)
		return t2s_error_set(err, T2S_ERR_INVALID, "listen.host %s: %s", host,
				     rc ? gai_strerror(rc) : "no address");
	memset(ret, 0, sizeof(*ret));
	memcpy(ret, ai->ai_addr, ai->ai_addrlen);
	*ret_len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static int bind_socket(struct http_listener *l, struct t2s_error *err)
{
	struct sockaddr_storage addr;
	socklen_t len;
	int rc = http_listener_resolve(l->o.host, l->o.port, &addr, &len, err);
	if (rc < 0)
		return rc;
	l->listen_fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->listen_fd < 0)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot listen on %s:%d: %s", l->o.host, l->o.port,
				     strerror(errno));
	int one = 1;
	setsockopt(l->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l->o.reuse_port)
		setsockopt(l->listen_fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (bind(l->listen_fd, (struct sockaddr *)&addr, len) < 0) {
		int e = errno;
		if (e == EADDRINUSE)
			return t2s_error_set(err, T2S_ERR_UNAVAILABLE,
					     "cannot listen on %s:%d: address in use (another process holds the port; "
					     "set listen.reuse_port to share it on purpose)",
					     l->o.host, l->o.port);
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot listen on %s:%d: %s", l->o.host, l->o.port,
				     strerror(e));
	}
	if (listen(l->listen_fd, SOMAXCONN) < 0)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot listen on %s:%d: %s", l->o.host, l->o.port,
				     strerror(errno));
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	getsockname(l->listen_fd, (struct sockaddr *)&bound, &blen);
	l->port = bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
					      : ntohs(((struct sockaddr_in *)&bound)->sin_port);
	return 0;
}

int http_listener_open(const struct http_listener_options *o, const struct http_listener_callbacks *cb,
		       struct http_listener **ret, struct t2s_error *err)
{
	struct http_listener *l = calloc(1, sizeof(*l));
	if (!l)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	l->o = *o;
	l->cb = *cb;
	l->listen_fd = l->epoll_fd = l->wake_fd = -1;
	l->peek_size = o->head.max_header_bytes + 1;
	l->pending = calloc(o->max_pending ? o->max_pending : 1, sizeof(*l->pending));
	l->peek = malloc(l->peek_size);
	int rc = 0;
	if (!l->pending || !l->peek) {
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; i < o->max_pending; i++)
		l->pending[i].fd = -1;
	for (int i = 0; i < LINGER_SLOTS; i++)
		l->lingering[i].fd = -1;
	if ((rc = bind_socket(l, err)) < 0)
		goto fail;
	l->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct epoll_event le = {.events = EPOLLIN, .data.u64 = ev_data(TAG_LISTEN, 0, 0)};
	struct epoll_event we = {.events = EPOLLIN, .data.u64 = ev_data(TAG_WAKE, 0, 0)};
	if (l->epoll_fd < 0 || l->wake_fd < 0 || epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, l->listen_fd, &le) < 0 ||
	    epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, l->wake_fd, &we) < 0) {
		rc = t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot set up the listener: %s", strerror(errno));
		goto fail;
	}
	*ret = l;
	return 0;
fail:
	http_listener_free(l);
	return rc;
}

int http_listener_port(const struct http_listener *l)
{
	return l->port;
}

unsigned http_listener_active(const struct http_listener *l)
{
	return atomic_load(&((struct http_listener *)l)->active);
}

unsigned http_listener_pending(const struct http_listener *l)
{
	return atomic_load(&((struct http_listener *)l)->n_pending);
}

void http_listener_connection_closed(struct http_listener *l)
{
	atomic_fetch_sub(&l->active, 1);
}

/* ------------------------------------------------------------ lingering close */

static void linger_close(struct http_listener *l, struct lingering *g)
{
	epoll_ctl(l->epoll_fd, EPOLL_CTL_DEL, g->fd, NULL);
	close(g->fd);
	g->fd = -1;
	g->gen++;
}

/* Half-close fd (our answer is written) and read what the client still sends, for a short while. */
static void linger_add(struct http_listener *l, int fd, double now)
{
	shutdown(fd, SHUT_WR);
	struct lingering *slot = NULL;
	for (int i = 0; i < LINGER_SLOTS; i++) {
		struct lingering *g = &l->lingering[i];
		if (g->fd < 0) {
			slot = g;
			break;
		}
		if (!slot || g->deadline_ms < slot->deadline_ms)
			slot = g;
	}
	if (slot->fd >= 0)
		linger_close(l, slot); /* all busy: the oldest goes now */
	slot->fd = fd;
	slot->deadline_ms = now + LINGER_MS;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP,
				 .data.u64 = ev_data(TAG_LINGER, slot->gen, (uint32_t)(slot - l->lingering))};
	if (epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
		linger_close(l, slot);
}

static void linger_read(struct http_listener *l, struct lingering *g)
{
	char sink[16384];
	for (int i = 0; i < 4; i++) {
		ssize_t n = recv(g->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		linger_close(l, g); /* end of input or an error */
		return;
	}
}

/* Write a problem on fd (a fresh socket: its send buffer has room), then close it gently. */
static void answer(struct http_listener *l, int fd, const struct sockaddr_storage *addr, double now, int status,
		   const char *slug, const char *title, const char *detail, const char *method, const char *reason,
		   int retry_after_s)
{
	char id[33], buf[1024];
	http_request_id_new(id);
	size_t n = http_problem_raw(buf, sizeof(buf), status, slug, title, detail, id, retry_after_s);
	if (n)
		(void)!send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (l->cb.answered)
		l->cb.answered(l->cb.ctx, (const struct sockaddr *)addr, status, method, reason, id, detail);
	linger_add(l, fd, now);
}

/* ------------------------------------------------------------ pending heads */

/* Take p out of the pending set without closing its fd; returns the fd. */
static int pending_take(struct http_listener *l, struct pending *p)
{
	int fd = p->fd;
	epoll_ctl(l->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
	p->fd = -1;
	p->gen++;
	atomic_fetch_sub(&l->n_pending, 1);
	return fd;
}

static void pending_evict_oldest(struct http_listener *l, double now)
{
	struct pending *oldest = NULL;
	for (unsigned i = 0; i < l->o.max_pending; i++)
		if (l->pending[i].fd >= 0 && (!oldest || l->pending[i].start_ms < oldest->start_ms))
			oldest = &l->pending[i];
	if (oldest)
		answer(l, pending_take(l, oldest), &oldest->addr, now, 503, "overloaded", "Service unavailable",
		       "too many connections are still sending their request; this one was the oldest", "",
		       "pending_evicted", 1);
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return true;
}

static unsigned pending_from(const struct http_listener *l, const struct sockaddr_storage *addr)
{
	unsigned n = 0;
	for (unsigned i = 0; i < l->o.max_pending; i++)
		n += l->pending[i].fd >= 0 && same_host(&l->pending[i].addr, addr);
	return n;
}

static void pending_add(struct http_listener *l, int fd, const struct sockaddr_storage *addr, socklen_t len,
			double now)
{
	if (pending_from(l, addr) >= l->o.max_pending_per_ip &&
	    !(l->cb.trusted && l->cb.trusted(l->cb.ctx, (const struct sockaddr *)addr))) {
		char detail[128];
		snprintf(detail, sizeof(detail), "too many connections from this address (limit %u); retry shortly",
			 l->o.max_pending_per_ip);
		answer(l, fd, addr, now, 429, "too-many-connections", "Too many requests", detail, "", "per_ip_limit", 1);
		return;
	}
	if (atomic_load(&l->n_pending) >= l->o.max_pending)
		pending_evict_oldest(l, now);
	struct pending *p = NULL;
	for (unsigned i = 0; i < l->o.max_pending && !p; i++)
		if (l->pending[i].fd < 0)
			p = &l->pending[i];
	if (!p) {
		close(fd);
		return;
	}
	p->fd = fd;
	p->start_ms = now;
	p->addr = *addr;
	p->addr_len = len;
	atomic_fetch_add(&l->n_pending, 1);
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
				 .data.u64 = ev_data(TAG_PENDING, p->gen, (uint32_t)(p - l->pending))};
	if (epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
		close(pending_take(l, p));
}

/* The head is complete and sound: hand the connection off, or answer 503 when every slot is taken. */
static void pending_ready(struct http_listener *l, struct pending *p, const char *method, double now)
{
	struct sockaddr_storage addr = p->addr;
	socklen_t len = p->addr_len;
	int fd = pending_take(l, p);
	if (atomic_load(&l->active) >= l->o.max_active) {
		char detail[128];
		snprintf(detail, sizeof(detail), "the server is serving its limit of %u connections; retry shortly",
			 l->o.max_active);
		answer(l, fd, &addr, now, 503, "overloaded", "Service unavailable", detail, method, "overflow", 1);
		return;
	}
	atomic_fetch_add(&l->active, 1);
	if (l->cb.hand_off(l->cb.ctx, fd, (struct sockaddr *)&addr, len) < 0)
		atomic_fetch_sub(&l->active, 1);
}

static void pending_event(struct http_listener *l, struct pending *p, uint32_t events, double now)
{
	ssize_t n = recv(p->fd, l->peek, l->peek_size, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) && !(events & (EPOLLERR | EPOLLHUP)))
		return;
	if (n <= 0) { /* the client went away before its request was complete */
		close(pending_take(l, p));
		return;
	}
	struct http_head_verdict v;
	switch (http_head_check(l->peek, (size_t)n, &l->o.head, &v)) {
	case HTTP_HEAD_OK:
		pending_ready(l, p, v.method, now);
		return;
	case HTTP_HEAD_BAD:
		answer(l, pending_take(l, p), &p->addr, now, v.status, v.slug, v.title, v.detail, v.method, "bad_head", 0);
		return;
	case HTTP_HEAD_INCOMPLETE:
		if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			close(pending_take(l, p)); /* it can no longer be completed */
		return;
	}
}

static void pending_expire(struct http_listener *l, double now)
{
	for (unsigned i = 0; i < l->o.max_pending; i++) {
		struct pending *p = &l->pending[i];
		if (p->fd < 0 || now - p->start_ms < (double)l->o.head_timeout_ms)
			continue;
		char detail[128];
		snprintf(detail, sizeof(detail), "the request head was not complete within %ld ms",
			 l->o.head_timeout_ms);
		answer(l, pending_take(l, p), &p->addr, now, 408, "request-timeout", "Request timeout", detail, "",
		       "head_timeout", 0);
	}
}

/* ------------------------------------------------------------ the thread */

/* Accept what is queued, at most 256 at a time (the socket is level-triggered: the rest wake us again). */
static void accept_all(struct http_listener *l, double now)
{
	for (int i = 0; i < 256; i++) {
		struct sockaddr_storage addr;
		socklen_t len = sizeof(addr);
		int fd = accept4(l->listen_fd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			pending_add(l, fd, &addr, len, now);
			continue;
		}
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* out of descriptors: stop polling the socket for a while rather than spin */
			struct epoll_event ev = {.events = 0, .data.u64 = ev_data(TAG_LISTEN, 0, 0)};
			epoll_ctl(l->epoll_fd, EPOLL_CTL_MOD, l->listen_fd, &ev);
			l->accept_paused_until = now + 100;
		}
		return; /* EAGAIN, or an error of the one connection (ECONNABORTED...) */
	}
}

void http_listener_stop_accepting(struct http_listener *l)
{
	atomic_store(&l->stop_accepting, true);
}

static void housekeeping(struct http_listener *l, double now)
{
	if (atomic_load(&l->stop_accepting) && l->listen_fd >= 0) {
		epoll_ctl(l->epoll_fd, EPOLL_CTL_DEL, l->listen_fd, NULL);
		close(l->listen_fd);
		l->listen_fd = -1;
		l->accept_paused_until = 0;
	}
	pending_expire(l, now);
	for (int i = 0; i < LINGER_SLOTS; i++)
		if (l->lingering[i].fd >= 0 && now >= l->lingering[i].deadline_ms)
			linger_close(l, &l->lingering[i]);
	if (l->accept_paused_until && now >= l->accept_paused_until) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = ev_data(TAG_LISTEN, 0, 0)};
		epoll_ctl(l->epoll_fd, EPOLL_CTL_MOD, l->listen_fd, &ev);
		l->accept_paused_until = 0;
	}
	if (l->cb.tick && now >= l->next_tick) {
		l->cb.tick(l->cb.ctx);
		l->next_tick = now + TICK_MS;
	}
}

static void *run(void *arg)
{
	struct http_listener *l = arg;
	struct epoll_event evs[64];
	while (!atomic_load(&l->stop)) {
		int n = epoll_wait(l->epoll_fd, evs, 64, TICK_MS);
		double now = clock_now_ms();
		for (int i = 0; i < n && !atomic_load(&l->stop); i++) {
			uint64_t d = evs[i].data.u64;
			enum tag tag = (enum tag)(d >> 62);
			uint32_t gen = (uint32_t)(d >> 32) & 0x3fffffffu, idx = (uint32_t)d;
			if (tag == TAG_LISTEN) {
				accept_all(l, now);
			} else if (tag == TAG_PENDING) {
				struct pending *p = &l->pending[idx];
				if (p->fd >= 0 && (p->gen & 0x3fffffffu) == gen)
					pending_event(l, p, evs[i].events, now);
			} else if (tag == TAG_LINGER) {
				struct lingering *g = &l->lingering[idx];
				if (g->fd >= 0 && (g->gen & 0x3fffffffu) == gen)
					linger_read(l, g);
			}
		}
		housekeeping(l, now);
	}
	return NULL;
}

int http_listener_start(struct http_listener *l, struct t2s_error *err)
{
	l->next_tick = clock_now_ms() + TICK_MS;
	int rc = pthread_create(&l->thread, NULL, run, l);
	if (rc != 0)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot start the listener thread: %s", strerror(rc));
	l->started = true;
	return 0;
}

void http_listener_stop(struct http_listener *l)
{
	if (l->started) {
		atomic_store(&l->stop, true);
		uint64_t one = 1;
		(void)!write(l->wake_fd, &one, sizeof(one));
		pthread_join(l->thread, NULL);
		l->started = false;
	}
	for (unsigned i = 0; l->pending && i < l->o.max_pending; i++)
		if (l->pending[i].fd >= 0) {
			close(l->pending[i].fd);
			l->pending[i].fd = -1;
		}
	for (int i = 0; i < LINGER_SLOTS; i++)
		if (l->lingering[i].fd >= 0) {
			close(l->lingering[i].fd);
			l->lingering[i].fd = -1;
		}
	if (l->listen_fd >= 0)
		close(l->listen_fd);
	l->listen_fd = -1;
}

void http_listener_free(struct http_listener *l)
{
	if (!l)
		return;
	http_listener_stop(l);
	if (l->epoll_fd >= 0)
		close(l->epoll_fd);
	if (l->wake_fd >= 0)
		close(l->wake_fd);
	free(l->pending);
	free(l->peek);
	free(l);
}
