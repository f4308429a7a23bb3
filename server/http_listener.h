/*
 * http_listener.h - the service's front door: the listening socket and one
 * thread that accepts connections and holds each new one until the head of
 * its first request has arrived, before libmicrohttpd gives it a thread.
 *
 * Why: libmicrohttpd serves a connection with one thread from the moment it
 * accepts it, and its only timeout is an idle one, so clients that trickle a
 * header line every few seconds could hold every slot (slowloris).  Here a
 * connection whose head is still arriving costs one file descriptor in an
 * epoll set, never a thread, and
 *   - its head must be complete within head_timeout_ms (else 408);
 *   - at most max_pending such connections are held; a new one beyond that
 *     evicts the oldest (503), so a flood of slow heads cannot keep a normal
 *     client out;
 *   - the head is checked (http_head.h) and a bad one answered with a problem
 *     (400/413/414/431/501/505) instead of the library's HTML;
 *   - at most max_pending_per_ip of them come from one address (429),
 *     unless the trusted callback says the address is a gateway's;
 *   - a sound head goes to hand_off only while fewer than max_active
 *     connections are served; beyond that the client gets 503 with
 *     Retry-After at once.
 * Every answer given here closes the connection after a short lingering
 * read, so the client reads the answer rather than a reset.
 *
 * The socket has SO_REUSEADDR; SO_REUSEPORT only when reuse_port is set, so
 * that a second instance on the same port fails with "address in use"
 * instead of silently taking half the traffic.
 *
 * Threads: the callbacks run on the listener thread, except that
 * http_listener_connection_closed may be called from any thread.
 */
#ifndef T2S_HTTP_LISTENER_H
#define T2S_HTTP_LISTENER_H

#include "common/contract.h"
#include "server/http_head.h"
#include "common/error.h"

#include <stdbool.h>
#include <sys/socket.h>

struct http_listener;

struct http_listener_options {
	const char *host;
	int port;                 /* 0: any free port (see http_listener_port) */
	bool reuse_port;          /* SO_REUSEPORT: let other processes bind the same port */
	unsigned max_active;      /* connections handed off and not yet closed */
	unsigned max_pending;     /* connections whose first head is still arriving */
	unsigned max_pending_per_ip; /* of those, from one address (429 beyond; served connections
					have no cap per address) */
	long head_timeout_ms;     /* first head complete within this */
	struct http_head_limits head;
};

struct http_listener_callbacks {
	/*
	 * Take fd, whose first request head is complete and sound; the fd is
	 * owned by the callee from now on, also when it refuses (-1, having
	 * closed fd).  0 when taken.
	 */
	int (*hand_off)(void *ctx, int fd, const struct sockaddr *addr, socklen_t addrlen);
	/*
	 * The listener answered a connection itself and closes it: the peer's
	 * address, status, the
	 * method label ("" when the request line was unreadable), why
	 * ("bad_head", "overflow", "per_ip_limit", "pending_evicted",
	 * "head_timeout"), the
	 * response's request id and detail.
	 */
	void (*answered)(void *ctx, const struct sockaddr *addr, int status, const char *method, const char *reason,
			 const char *request_id, const char *detail);
	/* Whether addr is a trusted gateway (no per-address cap). May be NULL (none is). */
	bool (*trusted)(void *ctx, const struct sockaddr *addr);
	/* About every 100 ms, on the listener thread (connection deadlines). May be NULL. */
	void (*tick)(void *ctx);
	void *ctx;
};

/* Resolve host and port as the listener will bind them (also for --check-config). */
T2S_MUST_CHECK
int http_listener_resolve(const char *host, int port, struct sockaddr_storage *ret, socklen_t *ret_len,
			  struct t2s_error *err);

/*
 * Bind and listen (no thread yet).  -T2S_ERR_INVALID when the host does not
 * resolve, -T2S_ERR_UNAVAILABLE when the address is in use or cannot be
 * bound.  *ret is freed with http_listener_free.
 */
T2S_MUST_CHECK
int http_listener_open(const struct http_listener_options *o, const struct http_listener_callbacks *cb,
		       struct http_listener **ret, struct t2s_error *err);
/* The port bound (the chosen one when options.port was 0). */
int http_listener_port(const struct http_listener *l);
/* Start the accepting thread. */
T2S_MUST_CHECK
int http_listener_start(struct http_listener *l, struct t2s_error *err);
/* A connection handed off has closed (any thread). */
void http_listener_connection_closed(struct http_listener *l);
/* Connections handed off and open; connections waiting for their first head. */
unsigned http_listener_active(const struct http_listener *l);
unsigned http_listener_pending(const struct http_listener *l);
/* Close the listening socket within a tick (~100 ms), from any thread; held connections stay. */
void http_listener_stop_accepting(struct http_listener *l);
/*
 * Stop the thread, close the socket and every connection still held (not
 * the ones handed off).  http_listener_connection_closed stays valid until
 * http_listener_free.
 */
void http_listener_stop(struct http_listener *l);
/* http_listener_stop if not done, and free. Accepts NULL. */
void http_listener_free(struct http_listener *l);

#endif
