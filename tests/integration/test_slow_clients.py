#!/usr/bin/env python3
"""test_slow_clients.py - slow and greedy clients cannot take the service.

Covers (issue 10, item 5): clients that trickle their request head
(slowloris) or body, more of them than the service has slots, while a normal
client keeps getting answers; the deadline for finishing the head (first
request and later keep-alive requests) and the body, each answered 408 with
a problem; the cap on served connections, whose overflow gets a clear 503
problem with Retry-After at once; the cap on connections whose head is still
arriving (the oldest is evicted with 503); a request line trickled on a
keep-alive connection is cut off after connection_timeout_s; the counters of
/metrics. Uses one small SQLite file written by this test.
"""

import json
import os
import re
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-slow-test-")
DB = fixtures.write_sqlite(os.path.join(TMP, "m.sqlite"), "CREATE TABLE t (a INTEGER)", {"t": [(1,), (2,)]})
# Sanitizer builds answer several times slower: the same behaviour is checked in wider windows.
SLOW = 3 if fixtures.binary_is_sanitized() else 1
HEAD_MS = 2000 * SLOW
BODY_MS = 2000 * SLOW
ACTIVE = 4
PENDING = 8
IDLE_S = 3


def config():
    return {"limits": {"max_connections": ACTIVE, "max_pending_connections": PENDING,
                       "max_connections_per_ip": 1000, "request_head_timeout_ms": HEAD_MS,
                       "request_body_timeout_ms": BODY_MS, "connection_timeout_s": IDLE_S},
            "databases": [{"name": "m", "url": "sqlite://" + DB}]}


def parse_raw(data):
    """(status, headers lower-cased, parsed JSON body or None) of a raw response, or None."""
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    if not m:
        return None
    head, _, body = data.partition(b"\r\n\r\n")
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        headers[k.decode("latin-1").strip().lower()] = v.decode("latin-1").strip()
    try:
        parsed = json.loads(body.decode("utf-8"))
    except ValueError:
        parsed = None
    return int(m.group(1)), headers, parsed


def is_problem(p, status, slug):
    return (p is not None and p[0] == status and p[1].get("content-type") == "application/problem+json"
            and isinstance(p[2], dict) and p[2].get("status") == status
            and p[2].get("type") == "urn:text2sqld:problem:" + slug)


class SlowClient(threading.Thread):
    """Opens a connection, sends first, then one of pieces every interval
    seconds (forever when pieces is a callable), and records what the server
    answers, when, and when the connection ended."""

    def __init__(self, port, first, pieces, interval=0.3, limit_s=15):
        super().__init__(daemon=True)
        self.port, self.first, self.pieces, self.interval, self.limit_s = port, first, pieces, interval, limit_s
        self.data = b""
        self.answered_after = None
        self.ended_after = None
        self.error = None
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.start_t = time.monotonic()

    def run(self):
        s = self.sock
        try:
            s.sendall(self.first)
            s.settimeout(self.interval)
            i = 0
            while time.monotonic() - self.start_t < self.limit_s:
                try:
                    b = s.recv(65536)
                    if not b:
                        self.ended_after = time.monotonic() - self.start_t
                        return
                    self.data += b
                    if self.answered_after is None:
                        self.answered_after = time.monotonic() - self.start_t
                    continue
                except socket.timeout:
                    pass
                piece = self.pieces(i) if callable(self.pieces) else (self.pieces[i] if i < len(self.pieces) else None)
                i += 1
                if piece:
                    try:
                        s.sendall(piece)
                    except OSError:
                        pass  # the server closed its side; keep reading what it said
        except OSError as e:
            self.error = e
            self.ended_after = time.monotonic() - self.start_t
        finally:
            s.close()


def trickle_header(i):
    return b"X-Slow-%d: yes\r\n" % i


def metric(svc, name, **labels):
    # Connection: close, so that the server ends the probe's connection itself right after answering.
    text = svc.request("GET", "/metrics", headers={"Connection": "close"}).body.decode()
    want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    for line in text.splitlines():
        m = re.match(r"^(\w+)\{([^}]*)\} (\S+)$", line)
        if m and m.group(1) == name and ",".join(sorted(m.group(2).split(","))) == want:
            return float(m.group(3))
    return 0.0


def wait_for_free_slots(svc, timeout=10):
    """Wait until the connections of earlier parts are gone: none pending, and no active one
    but the /metrics request asking."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (metric(svc, "text2sqld_http_connections", state="active") <= 1 and
                metric(svc, "text2sqld_http_connections", state="pending") == 0):
            return
        time.sleep(0.1)


def hold_every_slot(svc, head, attempts=4):
    """ACTIVE slow-body clients, each holding a served slot.  The connection of the request
    just before (even the /metrics one asking whether slots are free) may hold a slot for a
    moment after its client is done: a sanitizer build under a loaded machine closes it
    slowly.  A slow client that meets it is answered 503 at once; it is replaced by a new
    one a moment later, and those already holding a slot keep it (their body deadline runs
    from their own start, which the checks measure from)."""
    wait_for_free_slots(svc)
    time.sleep(0.3)  # the last probe's connection closes
    held = []
    for attempt in range(attempts):
        new = [SlowClient(svc.port, head, lambda i: b" ") for _ in range(ACTIVE - len(held))]
        for c in new:
            c.start()
        # Let every slow client reach a served slot or be refused (sanitizer builds hand
        # connections over slowly); the attempts together stay well inside the body deadline.
        time.sleep(0.5 if SLOW == 1 else 1.0)
        refused = [c for c in new if c.answered_after is not None]
        held += [c for c in new if c.answered_after is None]
        if not refused:
            return held
        tap.diag("a slot was still held when %d slow bodies arrived (%s): replacing them"
                 % (len(refused), [parse_raw(c.data)[0] if parse_raw(c.data) else None for c in refused]))
        for c in refused:
            c.join(5)
        time.sleep(0.2)
    return held


def normal_get(svc, timeout=5):
    try:
        return svc.request("GET", "/databases", timeout=timeout)
    except OSError as e:
        return e


def test_slow_heads(svc):
    """More slow heads than served slots and pending slots together; a normal client is served throughout."""
    n_slow = ACTIVE + PENDING + 8
    slow = [SlowClient(svc.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", trickle_header) for _ in range(n_slow)]
    for c in slow:
        c.start()
        time.sleep(0.02)
    time.sleep(0.3)
    answers = []
    for _ in range(3):
        answers.append(normal_get(svc))
        time.sleep(0.3)
    tap.ok(all(getattr(r, "status", None) == 200 for r in answers),
           "normal_client_is_served_while_more_slow_heads_than_slots_trickle", diag=repr(answers))
    for c in slow:
        c.join(HEAD_MS / 1000 + 10)
    parsed = [parse_raw(c.data) for c in slow]
    statuses = sorted(p[0] if p else None for p in parsed)
    bad = [(c.data[:300], c.error) for c, p in zip(slow, parsed)
           if not (is_problem(p, 408, "request-timeout") or is_problem(p, 503, "overloaded"))]
    tap.ok(not bad, "every_slow_head_is_answered_408_or_503_problem", diag=lambda: "%r\n%r" % (statuses, bad[:3]))
    late = [c.answered_after for c in slow if c.answered_after is None or c.answered_after > HEAD_MS / 1000 + 1.5]
    tap.ok(not late, "every_slow_head_is_answered_within_the_head_deadline",
           diag=lambda: "answered after %r" % [c.answered_after for c in slow])
    tap.ok(all(c.ended_after is not None and c.ended_after < HEAD_MS / 1000 + 4 for c in slow),
           "every_slow_head_connection_is_closed_by_the_server",
           diag=lambda: "ended after %r" % [c.ended_after for c in slow])
    n503 = statuses.count(503)
    n408 = statuses.count(408)
    tap.ok(n503 >= n_slow - PENDING and n408 >= 1, "oldest_pending_heads_are_evicted_the_rest_time_out",
           diag="%d x 503, %d x 408 of %d" % (n503, n408, n_slow))
    evicted = [p for p in parsed if p and p[0] == 503]
    tap.ok(evicted and all(p[1].get("retry-after", "").isdigit() for p in evicted),
           "evicted_heads_get_an_integer_retry_after", diag=repr(evicted[:1]))
    tap.ok(metric(svc, "text2sqld_http_connections_closed_total", reason="head_timeout") >= n408 and
           metric(svc, "text2sqld_http_connections_closed_total", reason="pending_evicted") >= n503,
           "head_timeouts_and_evictions_are_counted_in_metrics",
           diag=lambda: svc.request("GET", "/metrics").body.decode()[-3000:])
    r = normal_get(svc)
    tap.ok(getattr(r, "status", None) == 200, "normal_client_is_served_after_the_slow_heads")


def test_slow_bodies(svc):
    """Slow bodies hold every served slot: the overflow gets 503 at once, the slow ones 408 at their deadline."""
    head = (b"POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{")
    slow = hold_every_slot(svc, head)
    t0 = time.monotonic()
    r = normal_get(svc)
    took = time.monotonic() - t0
    ok = isinstance(r, t2s.Response) and not fixtures.problem_faults(r, 503, "overloaded")
    tap.ok(ok and took < 1.5 and (r.headers.get("Retry-After") or "").isdigit(),
           "request_beyond_max_connections_gets_503_problem_with_retry_after_at_once",
           diag=lambda: "%r after %.2fs" % (r, took))
    for c in slow:
        c.join(BODY_MS / 1000 + 10)
    # A slow client the listener reached late (a loaded machine running a sanitizer build) may
    # still have met a slot held a moment longer by an earlier connection: it was refused 503
    # at hand-off, well before any body deadline, so it held no slot and has no deadline.
    late_refused = [c for c in slow if c.answered_after is not None and c.answered_after < BODY_MS / 2000
                    and is_problem(parse_raw(c.data), 503, "overloaded")]
    held = [c for c in slow if c not in late_refused]
    if late_refused:
        tap.diag("%d slow bodies were refused 503 at hand-off after %s s"
                 % (len(late_refused), [round(c.answered_after, 2) for c in late_refused]))
    parsed = [parse_raw(c.data) for c in held]
    tap.ok(held and all(is_problem(p, 408, "request-timeout") for p in parsed),
           "slow_bodies_are_answered_408_problem",
           diag=lambda: repr([(c.answered_after, c.ended_after, c.error, c.data[:300]) for c in slow]))
    # The deadline runs from the moment the server has read the head; the margin covers the
    # hand-off and the reaper's tick, wider where a sanitizer build hands connections over slowly.
    tap.ok(held and all(c.answered_after is not None and c.answered_after < BODY_MS / 1000 + 2 * SLOW for c in held),
           "slow_bodies_are_answered_within_the_body_deadline",
           diag=lambda: repr([(c.answered_after, c.ended_after, c.error, c.data[:120]) for c in slow]))
    deadline = time.monotonic() + 5
    r = None
    while time.monotonic() < deadline:
        r = normal_get(svc)
        if getattr(r, "status", None) == 200:
            break
        time.sleep(0.2)
    tap.ok(getattr(r, "status", None) == 200, "slots_are_free_again_after_the_body_deadline", diag=repr(r))
    tap.ok(metric(svc, "text2sqld_http_connections_closed_total", reason="body_timeout") >= ACTIVE and
           metric(svc, "text2sqld_http_connections_closed_total", reason="overflow") >= 1,
           "body_timeouts_and_overflow_are_counted_in_metrics")
    line = None
    for text in svc.log_text().splitlines():
        try:
            obj = json.loads(text)
        except ValueError:
            continue
        if obj.get("msg") == "request" and obj.get("route") == "/execute" and obj.get("status") == 408:
            line = obj
    tap.ok(line is not None and line.get("reason") == "body_timeout",
           "slow_body_is_logged_as_408_on_its_route", diag=lambda: svc.log_tail(10))


def wait_until_served_connections_closed(svc, deadline_s=30):
    """Waits until only the probing connection itself is served: connections
    of earlier checks still closing would otherwise count towards the
    fair-share rule (an answer closes its connection once three quarters of
    the served slots are in use) and end a keep-alive connection early."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if metric(svc, "text2sqld_http_connections", state="active") <= 1:
            return True
        time.sleep(0.1)
    return False


def test_keepalive_slow_second_head(svc):
    tap.ok(wait_until_served_connections_closed(svc), "earlier_slow_connections_are_released",
           diag=lambda: svc.log_tail(10))
    first = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    seen = {}

    def pieces(i):
        if i == 0:
            seen["first"] = True
            return b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
        return trickle_header(i)

    c = SlowClient(svc.port, first, pieces)
    c.start()
    c.join(HEAD_MS / 1000 + 10)
    answers = c.data.split(b"HTTP/1.1 ")
    second = parse_raw(b"HTTP/1.1 " + answers[2]) if len(answers) >= 3 else None
    tap.ok(len(answers) == 3 and answers[1].startswith(b"200") and is_problem(second, 408, "request-timeout"),
           "slow_head_of_a_keepalive_request_gets_408_problem", diag=repr(c.data[:800]))
    tap.ok(c.ended_after is not None and c.ended_after < HEAD_MS / 1000 + 3,
           "slow_keepalive_head_connection_is_closed_at_its_deadline", diag=repr(c.ended_after))


def test_keepalive_trickled_request_line(svc):
    first = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    c = SlowClient(svc.port, first, lambda i: b"G" if i < 200 else None)
    c.start()
    c.join(IDLE_S + 10)
    tap.ok(c.ended_after is not None and c.ended_after < IDLE_S + 2,
           "request_line_trickled_on_keepalive_connection_is_cut_after_connection_timeout",
           diag="ended after %r; data %r" % (c.ended_after, c.data[:300]))


def test_all():
    with fixtures.serving(tap, config(), "slow_clients_service_exits_0_on_sigterm") as svc:
        try:
            test_slow_heads(svc)
            test_slow_bodies(svc)
            test_keepalive_slow_second_head(svc)
            test_keepalive_trickled_request_line(svc)
        except Exception:
            fixtures.report_exception(tap, svc)


def main():
    return fixtures.run_with_binary(tap, "slow_client_tests", test_all)


if __name__ == "__main__":
    sys.exit(main())
