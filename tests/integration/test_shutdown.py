#!/usr/bin/env python3
"""test_shutdown.py - graceful shutdown of the real text2sqld binary.

SIGTERM with a request in flight: readiness on a new connection turns 503
"draining" (with Connection: close), new work (POST /execute) is refused
with a 503 "draining" problem and Retry-After, the request finishes with 200
and its full rows, and the process exits 0. A request that outlives
limits.drain_timeout_ms does not keep the process alive much beyond the
bound, and its client gets a 503 "draining" problem, never a closed
connection (a /query waiting for a slow model too); a drain shorter than
the longest request budget is warned about at start. SIGINT behaves like SIGTERM. A second SIGTERM while draining stops
promptly. Idle keep-alive connections do not prevent exit. Slow requests are
recursive CTEs on a small SQLite file, sized by measuring this machine.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import http.client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-shutdown-test-")
EXIT_BOUND_S = 8.0  # generous: a hang is the failure mode, not speed
NEVER_ENDING = 10 ** 12  # a count no statement finishes before execution.timeout_ms (20 s here)


DB = fixtures.write_sqlite(os.path.join(TMP, "items.sqlite"), "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)",
                           {"item": [(i, "item %d" % i) for i in range(1, 11)]})


def config(drain_ms=30000, timeout_ms=120000, **limits):
    lim = {"drain_timeout_ms": drain_ms, "connection_timeout_s": 60}
    lim.update(limits)
    return {"limits": lim, "execution": {"timeout_ms": timeout_ms},
            "databases": [{"name": "items", "url": "sqlite://" + DB}]}


def slow_sql(n, rows=5):
    """Counts to n and returns `rows` rows (every n/rows-th number)."""
    step = max(1, n // rows)
    return ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) "
            "SELECT x FROM c WHERE x %% %d = 0 ORDER BY x" % (n, step)), [[step * (i + 1)] for i in range(n // step)]


class SlowRequest:
    """POST /execute in a background thread; .resp or .error when done."""

    def __init__(self, svc, sql):
        self.svc = svc
        self.sql = sql
        self.resp = None
        self.error = None
        self.done_at = None
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self):
        try:
            self.resp = self.svc.request("POST", "/execute", json={"database": "items", "sql": self.sql},
                                         timeout=120)
        except (OSError, http.client.HTTPException) as e:
            self.error = e
        self.done_at = time.monotonic()

    def running(self):
        return self.thread.is_alive()

    def join(self, timeout=120):
        self.thread.join(timeout)


def wait_exit(svc, timeout):
    """Waits for the process; returns (exit code or None, seconds waited)."""
    t0 = time.monotonic()
    try:
        code = svc.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    return code, time.monotonic() - t0


class Resp:
    def __init__(self, r):
        self.status = r.status
        self.headers = r.headers
        self.text = r.read().decode("utf-8", "replace")
        try:
            self.json = json.loads(self.text)
        except ValueError:
            self.json = None


def poll_draining_readyz(svc, slow, conn, timeout=10):
    """GET /readyz on conn (a keep-alive connection opened before the signal:
    with no drain delay the listening socket closes at once) until it reports
    draining (or the slow request ends / the process exits). Returns the last
    response or None."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline and svc.alive():
        try:
            conn.request("GET", "/readyz")
            last = Resp(conn.getresponse())
            if last.status == 503 and (last.json or {}).get("status") == "draining":
                return last
        except (OSError, http.client.HTTPException):
            return last
        if slow is not None and not slow.running():
            break
        time.sleep(0.02)
    return last


def served_connection(svc):
    """A keep-alive connection the service has already served (GET /healthz answered on it): one
    only connected could still wait in the listen backlog when the signal closes the listening
    socket (no drain delay here), and be reset instead of answered."""
    conn = http.client.HTTPConnection(svc.host, svc.port, timeout=10)
    conn.request("GET", "/healthz")
    r = conn.getresponse()
    r.read()
    if r.status != 200 or r.will_close:
        raise RuntimeError("GET /healthz on a new connection answered %d (close: %s)" % (r.status, r.will_close))
    return conn


def wait_log(svc, text, timeout=10):
    """Waits until the service's log holds text (an event, not a time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and text not in svc.log_text():
        time.sleep(0.02)


def discard(svc, slow=None):
    """Kills svc if it still runs, removes its files, then waits for slow's thread."""
    svc.stop(signal.SIGKILL)
    svc.close()
    if slow is not None:
        slow.join(120)


# --------------------------------------------------------------------------- checks

def graceful_in_flight(sig, label, target_s):
    svc = t2s.Service(config(drain_ms=60000))
    slow = None
    try:
        svc.start()
        n = fixtures.calibrate_count(svc, "items", lambda k: slow_sql(k)[0], target_s)
        sql, rows = slow_sql(n)
        slow = SlowRequest(svc, sql)
        in_flight = fixtures.wait_in_flight(svc, 2)
        tap.ok(in_flight and slow.running(), "%s_slow_request_in_flight_before_signal" % label)
        ready_conn = served_connection(svc)
        work_conn = served_connection(svc)
        svc.proc.send_signal(sig)
        r = poll_draining_readyz(svc, slow, ready_conn)
        still_running = slow.running()
        tap.ok(r is not None and r.status == 503 and (r.json or {}).get("status") == "draining" and still_running,
               "%s_readyz_on_new_connection_is_503_draining_while_request_runs" % label,
               diag=lambda: "readyz %r, slow running %s, log:\n%s" % (r, still_running, svc.log_tail()))
        tap.ok(r is not None and (r.headers.get("Connection") or "").lower() == "close",
               "%s_responses_while_draining_carry_connection_close" % label, diag=lambda: repr(r and r.headers))
        wait_log(svc, "draining:")
        try:
            work_conn.request("POST", "/execute", body=json.dumps({"database": "items", "sql": "SELECT 1"}),
                              headers={"Content-Type": "application/json"})
            w = Resp(work_conn.getresponse())
        except (OSError, http.client.HTTPException) as e:
            w = e
        tap.ok(not isinstance(w, Exception) and fixtures.is_problem(w, 503, "draining") and
               (w.headers.get("Retry-After") or "").isdigit() and
               slow.running(), "%s_new_work_while_draining_is_refused_503_draining_with_retry_after" % label,
               diag=lambda: "%r %s" % (w, getattr(w, "text", "")[:300]))
        slow.join(120)
        resp = slow.resp
        tap.ok(resp is not None and resp.status == 200 and (resp.json or {}).get("rows") == rows and
               (resp.json or {}).get("truncated") is False,
               "%s_in_flight_request_completes_with_200_and_full_rows" % label,
               diag=lambda: "resp %r error %r" % (resp, slow.error))
        code, waited = wait_exit(svc, 60)
        tap.ok(code == 0 and slow.done_at is not None, "%s_process_exits_0_after_drain" % label,
               diag=lambda: "exit %r after %.1fs; log:\n%s" % (code, waited, svc.log_tail()))
        tap.ok('draining:' in svc.log_text(), "%s_logs_draining" % label, diag=svc.log_tail)
    except RuntimeError as e:
        tap.ok(False, "%s_service_starts" % label, diag=str(e))
    finally:
        discard(svc, slow)


def drain_bound():
    svc = t2s.Service(config(drain_ms=300, timeout_ms=20000))
    slow = None
    try:
        svc.start()
        # Counts far beyond what 20 s allow: the statement runs until the
        # execution timeout, well past the drain bound.
        slow = SlowRequest(svc, slow_sql(NEVER_ENDING)[0])
        tap.ok(fixtures.wait_in_flight(svc, 2) and slow.running(), "drain_bound_slow_request_in_flight_before_signal")
        t0 = time.monotonic()
        svc.proc.send_signal(signal.SIGTERM)
        code, waited = wait_exit(svc, 60)
        tap.ok(code == 0 and time.monotonic() - t0 <= EXIT_BOUND_S,
               "drain_timeout_bounds_exit_despite_20s_request",
               diag=lambda: "exit %r after %.1fs (bound %.0fs); log:\n%s" % (code, waited, EXIT_BOUND_S,
                                                                           svc.log_tail()))
        tap.ok("drain time" in svc.log_text(), "drain_timeout_expiry_is_logged", diag=svc.log_tail)
        slow.join(30)
        cut_is_a_503_problem(slow.resp, slow.error, "request_cut_by_the_drain_gets_a_503_problem")
    except RuntimeError as e:
        tap.ok(False, "drain_bound_service_starts", diag=str(e))
    finally:
        discard(svc, slow)


def cut_is_a_503_problem(resp, error, name):
    """Issue 30: a request the drain must cut is answered 503 draining (with Retry-After), never a
    closed connection."""
    ok = error is None and resp is not None and resp.status == 503 and \
        (resp.json or {}).get("type", "").endswith(":draining") and resp.headers.get("Retry-After")
    tap.ok(ok, name, diag=lambda: "error %r, response %s %s" % (error, getattr(resp, "status", None),
                                                                   getattr(resp, "text", "")[:300]))


def drain_cuts_a_long_generation():
    """A /query waiting for a slow model when the drain time is up gets a 503 problem."""
    stub = fixtures.ModelStub()
    stub.rules([{"match": {"path": "/v1/chat/completions"},
                 "respond": {"content": "```sql\nSELECT count(*) FROM item\n```", "delay_ms": 8000}}])
    cfg = config(drain_ms=500, timeout_ms=20000)
    cfg.update({"generate": {"cache_ttl_s": 0, "candidates": 1, "max_rounds": 0},
                "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 30000,
                                        "retries": 0}}})
    svc = t2s.Service(cfg)
    out = {}

    def ask():
        try:
            out["resp"] = svc.request("POST", "/query", json={"database": "items", "question": "How many items?"},
                                      timeout=60)
        except (OSError, http.client.HTTPException) as e:
            out["error"] = e
    try:
        svc.start()
        tap.ok("drain shorter than the longest request" in svc.log_text(),
               "start_warns_when_the_drain_is_shorter_than_the_longest_budget", diag=svc.log_tail)
        t = threading.Thread(target=ask)
        t.start()
        tap.ok(fixtures.wait_in_flight(svc, 2), "long_generation_in_flight_before_signal")
        svc.proc.send_signal(signal.SIGTERM)
        t.join(30)
        cut_is_a_503_problem(out.get("resp"), out.get("error"), "generation_cut_by_the_drain_gets_a_503_problem")
        code, _ = wait_exit(svc, 60)
        tap.eq(code, 0, "service_exits_0_after_cutting_a_generation")
    except RuntimeError as e:
        tap.ok(False, "drain_cut_service_starts", diag=str(e))
    finally:
        svc.close()
        stub.close()


def second_signal():
    svc = t2s.Service(config(drain_ms=60000, timeout_ms=20000))
    slow = None
    try:
        svc.start()
        slow = SlowRequest(svc, slow_sql(NEVER_ENDING)[0])
        tap.ok(fixtures.wait_in_flight(svc, 2) and slow.running(), "second_signal_slow_request_in_flight")
        conn = served_connection(svc)
        svc.proc.send_signal(signal.SIGTERM)
        r = poll_draining_readyz(svc, slow, conn)
        tap.ok(r is not None and r.status == 503 and slow.running(), "second_signal_first_sigterm_starts_draining",
               diag=repr(r))
        t0 = time.monotonic()
        svc.proc.send_signal(signal.SIGTERM)
        code, waited = wait_exit(svc, 60)
        tap.ok(code == 0 and time.monotonic() - t0 <= EXIT_BOUND_S, "second_sigterm_during_drain_stops_promptly_with_0",
               diag=lambda: "exit %r after %.1fs; log:\n%s" % (code, waited, svc.log_tail()))
    except RuntimeError as e:
        tap.ok(False, "second_signal_service_starts", diag=str(e))
    finally:
        discard(svc, slow)


def idle_connections():
    svc = t2s.Service(config(drain_ms=30000, connection_timeout_s=300))
    conns = []
    try:
        svc.start()
        # Two keep-alive connections that served a request and stay open,
        # and one that never sent anything.
        for _ in range(2):
            c = http.client.HTTPConnection(svc.host, svc.port, timeout=30)
            c.request("GET", "/healthz")
            resp = c.getresponse()
            resp.read()
            conns.append(c)
        s = socket.create_connection((svc.host, svc.port), timeout=30)
        conns.append(s)
        time.sleep(0.3)
        t0 = time.monotonic()
        svc.proc.send_signal(signal.SIGTERM)
        code, waited = wait_exit(svc, 60)
        tap.ok(code == 0 and time.monotonic() - t0 <= EXIT_BOUND_S, "idle_keep_alive_connections_do_not_prevent_exit",
               diag=lambda: "exit %r after %.1fs; log:\n%s" % (code, waited, svc.log_tail()))
    except RuntimeError as e:
        tap.ok(False, "idle_connections_service_starts", diag=str(e))
    finally:
        for c in conns:
            c.close()
        discard(svc)


def idle_service(sig, label):
    svc = t2s.Service(config())
    try:
        svc.start()
        code = svc.stop(sig, timeout=30)
        tap.eq(code, 0, "%s_on_idle_service_exits_0" % label)
    except RuntimeError as e:
        tap.ok(False, "%s_idle_service_starts" % label, diag=str(e))
    finally:
        discard(svc)


def body_after_signal():
    """A POST whose head arrived before SIGTERM and whose body comes after it
    is work the drain waits for: it runs and answers 200 (before, the drain
    counted only requests already dispatched and exited under it)."""
    svc = t2s.Service(config(drain_ms=20000))
    sock = None
    try:
        svc.start()
        body = json.dumps({"database": "items", "sql": "SELECT 1 AS one"}).encode()
        sock = socket.create_connection(("127.0.0.1", svc.port), timeout=20)
        sock.sendall(b"POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        tap.ok(fixtures.wait_in_flight(svc, 2), "head_before_signal_is_in_flight")
        svc.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        tap.ok(svc.alive(), "drain_waits_for_a_request_whose_body_is_still_arriving")
        sock.sendall(body)
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
        tap.ok(reply.startswith(b"HTTP/1.1 200") and b'"rows":[[1]]' in reply.replace(b" ", b""),
               "body_after_signal_request_answers_200", diag=repr(reply[:300]))
        code, waited = wait_exit(svc, 30)
        tap.ok(code == 0, "body_after_signal_process_exits_0", diag="exit %r after %.1fs" % (code, waited))
    except (RuntimeError, OSError) as e:
        tap.ok(False, "body_after_signal_runs", diag=str(e))
    finally:
        if sock is not None:
            sock.close()
        discard(svc)


def signals_in_turn():
    idle_service(signal.SIGTERM, "sigterm")
    idle_service(signal.SIGINT, "sigint")
    graceful_in_flight(signal.SIGTERM, "sigterm", 3.0)
    graceful_in_flight(signal.SIGINT, "sigint", 3.0)


def main():
    return fixtures.run_with_binary(tap, "shutdown_tests", signals_in_turn, drain_bound, drain_cuts_a_long_generation,
                                    second_signal,
                                    idle_connections, body_after_signal)


if __name__ == "__main__":
    sys.exit(main())
