#!/usr/bin/env python3
"""test_stream.py - POST /query with Accept: text/event-stream: one
server-sent event per pipeline stage as it completes, then the whole
answer, against the real binary, a SQLite database written here and the
model stub (tests/stub/model_stub.py) scripted per part.

Covers:
  - the events arrive in pipeline order (link, evidence, describe, prompt,
    generation, correction, validation, rows, result), each one JSON line,
    the link event before the model is asked (it arrives while the stub
    still sleeps), and the final event equals the plain answer's sql, rows,
    columns and corrections;
  - an unanswerable question (relating to nothing, or the model's sentinel)
    ends the stream with an "error" event carrying the plain 422 problem;
  - a generation failure ends the stream with an "error" event carrying the
    same problem body as the plain answer (type, status, detail, sql); a
    request error found before the pipeline starts (unknown database) is an
    ordinary 404 problem, not a stream; Accept without text/event-stream,
    or with q=0, gets the plain JSON answer;
  - without a model, a question the built-in refuses ends the stream with an
    "error" event carrying the plain answer's 422 builtin-refused problem
    (status 422, the built-in's reason), and the plain answer has no
    Retry-After;
  - a cached answer streams "result" alone, with the fresh answer's
    validation score and row count (the playground draws both from it);
  - a client that disconnects mid-stream stops further model calls: with
    every statement wrong and five correction rounds allowed, the stub is
    asked at most twice (the call in flight when the client left finishes),
    the log says the client went away, and the service keeps serving.
Every service is stopped with SIGTERM and must exit 0.
"""

import json
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-stream-")
DB = "concert"
SCHEMA, ROWS = fixtures.SMALL_CONCERT_SCHEMA, fixtures.SMALL_CONCERT_ROWS
DB_PATH = fixtures.write_sqlite(os.path.join(TMP, "concert.sqlite"), SCHEMA, ROWS)
WRONG = "```sql\nSELECT count(*) FROM singer WHERE nation = 'France'\n```"
RIGHT = "```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```"
STAGES = ["link", "evidence", "describe", "prompt", "generation", "correction", "validation", "rows", "result"]


def config(stub):
    return {"databases": [{"name": DB, "url": "sqlite://" + DB_PATH}],
            "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % time.monotonic_ns())},
            "generate": {"cache_ttl_s": 0},
            "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 20000,
                                    "retries": 0}},
            "log": {"level": "info", "access": False}}


class EventStream:
    """A POST with Accept: text/event-stream on a raw socket: status and
    headers first, then events one at a time (chunked transfer decoded)."""

    def __init__(self, svc, body, accept="text/event-stream", timeout=60):
        data = json.dumps(body).encode()
        self.sock = socket.create_connection((svc.host, svc.port), timeout=timeout)
        self.sock.sendall(("POST /query HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                           "Accept: %s\r\nContent-Length: %d\r\n\r\n" % (accept, len(data))).encode() + data)
        self.buf = b""
        head = self._until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        self.status = int(head[0].split()[1])
        self.headers = t2s.Headers([tuple(x.strip() for x in h.split(":", 1)) for h in head[1:] if ":" in h])
        self.chunked = "chunked" in (self.headers.get("Transfer-Encoding") or "").lower()
        self.text = b""   # decoded body bytes not yet parsed into events
        self.done = False

    def _fill(self):
        more = self.sock.recv(65536)
        if not more:
            raise EOFError("connection closed")
        self.buf += more

    def _until(self, sep):
        while sep not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(sep, 1)
        return head

    def _read_body(self):
        """Moves the next piece of the body into self.text; False at its end."""
        if not self.chunked:
            if not self.buf:
                try:
                    self._fill()
                except EOFError:
                    return False
            self.text += self.buf
            self.buf = b""
            return True
        size = int(self._until(b"\r\n").split(b";")[0], 16)
        if size == 0:
            self._until(b"\r\n")
            return False
        while len(self.buf) < size + 2:
            self._fill()
        self.text += self.buf[:size]
        self.buf = self.buf[size + 2:]
        return True

    def next_event(self):
        """(name, parsed data, arrival time) of the next event; None at the end of the stream."""
        while True:
            if b"\n\n" in self.text:
                raw, self.text = self.text.split(b"\n\n", 1)
                name, data = "message", []
                for line in raw.decode("utf-8").split("\n"):
                    if line.startswith(":"):
                        continue
                    key, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if key == "event":
                        name = value
                    elif key == "data":
                        data.append(value)
                if not data:
                    continue
                return name, json.loads("\n".join(data)), time.monotonic()
            if self.done or not self._read_body():
                self.done = True
                return None

    def all_events(self):
        out = []
        while True:
            ev = self.next_event()
            if ev is None:
                return out
            out.append(ev)

    def close(self):
        self.sock.close()


def wait_values(svc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = svc.request("POST", "/evidence", json={"database": DB, "question": "probe"})
        if r.status == 200 and r.json.get("value_index") == "ready":
            return True
        time.sleep(0.05)
    return False


def part_events_in_order(stub):
    stub.rules([{"match": {"contains": "no such column"}, "respond": {"content": RIGHT, "delay_ms": 300}},
                {"match": {"path": "/v1/chat/completions"}, "respond": {"content": WRONG, "delay_ms": 600}}])
    with fixtures.serving(tap, config(stub), "events_service_exits_0") as svc:
        wait_values(svc)
        question = {"database": DB, "question": "How many singers are from France?"}
        t0 = time.monotonic()
        es = EventStream(svc, question)
        tap.eq(es.status, 200, "stream_answers_200")
        tap.eq((es.headers.get("Content-Type") or "").split(";")[0], "text/event-stream",
               "stream_content_type_is_text_event_stream")
        tap.ok(es.headers.get("X-Request-Id"), "stream_carries_x_request_id")
        events = es.all_events()
        es.close()
        names = [e[0] for e in events]
        tap.eq(names, STAGES, "events_arrive_in_pipeline_order")
        by = {e[0]: e for e in events}
        if "link" in by:
            tap.ok(by["link"][2] - t0 < 0.6 and by["result"][2] - by["link"][2] >= 0.8,
                   "link_event_arrives_before_the_model_answers",
                   diag="link at %.3f s, result at %.3f s" % (by["link"][2] - t0, by["result"][2] - t0))
            tap.ok(any(t["name"] == "singer" and t["reasons"] for t in by["link"][1].get("tables", [])),
                   "link_event_has_tables_with_scores_and_reasons", diag=json.dumps(by["link"][1])[:800])
        if "prompt" in by:
            p = by["prompt"][1]
            tap.ok(p.get("chars", 0) > 100 and p.get("estimated_tokens", 0) > 0 and p.get("messages"),
                   "prompt_event_has_its_size_and_messages", diag=json.dumps(p)[:500])
        if "generation" in by:
            g = by["generation"][1]
            tap.ok(g.get("round") == 0 and "nation" in (g.get("sql") or "") and g.get("ok") is False and
                   any(c["check"] == "names_resolve" and not c["ok"] for c in g.get("validation", [])),
                   "generation_event_has_the_first_sql_and_its_failed_validation", diag=json.dumps(g)[:800])
        if "correction" in by:
            c = by["correction"][1]
            tap.ok(c.get("round") == 1 and c.get("check") == "names_resolve" and "country" in c.get("sql", "")
                   and c.get("ok") is True and c.get("validation"),
                   "correction_event_has_the_round_the_error_and_the_new_sql", diag=json.dumps(c)[:800])
        if "rows" in by:
            tap.eq(by["rows"][1].get("rows"), [[2]], "rows_event_has_the_result")
        final = by.get("result", (None, {}))[1]
        tap.eq(len(stub.requests()), 2, "stream_made_two_model_calls")
        stub.rules([{"match": {"contains": "no such column"}, "respond": {"content": RIGHT}}],
                   default_content=WRONG)
        plain = svc.request("POST", "/query", json=question, timeout=60)
        pj = plain.json or {}
        tap.eq(plain.status, 200, "plain_query_answers_200")
        for field in ("sql", "rows", "columns", "column_types", "row_count", "ok"):
            tap.eq(final.get(field), pj.get(field), "final_event_equals_plain_answer_" + field)
        tap.eq([(c["level"], c["check"], c["ok"]) for c in final.get("validation", [])],
               [(c["level"], c["check"], c["ok"]) for c in pj.get("validation", [])],
               "final_event_equals_plain_answer_validation_checks")
        tap.eq([(c["round"], c["check"], c["sql"]) for c in final.get("corrections", [])],
               [(c["round"], c["check"], c["sql"]) for c in pj.get("corrections", [])],
               "final_event_equals_plain_answer_corrections")
        tap.eq(set(final), set(pj), "final_event_has_the_same_members_as_the_plain_answer")

        # Plain JSON unless the client asks for the stream.
        for accept in ("application/json", "text/event-stream;q=0", "*/*"):
            r = svc.request("POST", "/query", json=question, headers={"Accept": accept}, timeout=60)
            tap.ok(r.status == 200 and (r.headers.get("Content-Type") or "").startswith("application/json"),
                   "accept_%s_gets_plain_json" % accept.replace("/", "_").replace("*", "any"), diag=repr(r))
        r = svc.request("POST", "/generate", json=question, headers={"Accept": "text/event-stream"}, timeout=60)
        tap.ok(r.status == 200 and r.json and r.json.get("sql"), "generate_ignores_the_stream_accept", diag=repr(r))


def part_errors(stub):
    stub.rules([], default_content="I cannot answer that.")
    with fixtures.serving(tap, config(stub), "errors_service_exits_0") as svc:
        body = {"database": DB, "question": "How many singers are there?", "options": {"max_rounds": 1}}
        es = EventStream(svc, body)
        events = es.all_events()
        es.close()
        names = [e[0] for e in events]
        tap.eq(names[-1:], ["error"], "failed_generation_ends_with_an_error_event", )
        tap.ok("result" not in names and names[:4] == ["link", "evidence", "describe", "prompt"],
               "error_stream_has_the_stages_before_it", diag=repr(names))
        problem = events[-1][1] if events else {}
        plain = svc.request("POST", "/query", json=body, timeout=60)
        tap.eq(plain.status, 422, "plain_failed_generation_is_422")
        for field in ("type", "title", "status", "detail", "instance"):
            tap.eq(problem.get(field), (plain.json or {}).get(field), "error_event_problem_equals_plain_" + field)
        tap.eq(problem.get("request_id"), es.headers.get("X-Request-Id"), "error_event_names_the_request_id")

        es = EventStream(svc, {"database": "nope", "question": "x"})
        rest = es.sock.recv(65536)
        es.close()
        tap.ok(es.status == 404 and "application/problem+json" in (es.headers.get("Content-Type") or ""),
               "request_error_before_the_pipeline_is_a_plain_problem",
               diag="%s %r %r" % (es.status, es.headers, rest[:300]))
        es = EventStream(svc, {"database": DB})
        es.close()
        tap.eq(es.status, 400, "missing_question_is_a_plain_400")


def part_disconnect(stub):
    # A new wrong statement each round (a repeated one would end the loop by itself).
    wrong = ["```sql\nSELECT count(*) FROM singer WHERE nation%d = 'France'\n```" % i for i in range(8)]
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"sequence": wrong, "delay_ms": 1500}}])
    with fixtures.serving(tap, config(stub), "disconnect_service_exits_0") as svc:
        es = EventStream(svc, {"database": DB, "question": "How many singers are from France?",
                               "options": {"max_rounds": 5}})
        seen = []
        while True:
            ev = es.next_event()
            if ev is None:
                break
            seen.append(ev[0])
            if ev[0] == "generation":
                break
        es.close()
        t_left = time.monotonic()
        tap.eq(seen[-1:], ["generation"], "client_saw_the_first_generation_before_leaving")
        time.sleep(4.5)  # three more rounds' worth of the stub's delay
        calls = len(stub.requests())
        tap.ok(1 <= calls <= 2, "disconnect_stops_further_model_calls",
               diag="%d model calls (6 without cancelling)" % calls)
        tap.ok("went away" in svc.log_text(), "log_says_the_client_went_away", diag=svc.log_tail(10))
        time.sleep(max(0, 2.0 - (time.monotonic() - t_left)))
        tap.eq(len(stub.requests()), calls, "no_model_call_after_the_stop")
        stub.rules([], default_content=RIGHT)
        r = svc.request("POST", "/query", json={"database": DB, "question": "How many singers are from France?"},
                        timeout=60)
        tap.eq((r.status, (r.json or {}).get("rows")), (200, [[2]]), "service_keeps_answering_after_a_disconnect")


def part_unanswerable(stub):
    stub.rules([], default_content="```sql\nSELECT count(*) FROM singer\n```")
    with fixtures.serving(tap, config(stub), "unanswerable_service_exits_0") as svc:
        for question, stages, name in (("Ok", ["link"], "relating_to_nothing"),
                                       ("Tell me a joke about singers", ["link", "evidence", "describe", "prompt"],
                                        "sentinel")):
            if name == "sentinel":
                stub.rules([], default_content="UNANSWERABLE: this database holds no jokes.")
            body = {"database": DB, "question": question}
            es = EventStream(svc, body)
            events = es.all_events()
            es.close()
            names = [e[0] for e in events]
            tap.eq(names, stages + ["error"], "unanswerable_%s_stream_ends_with_an_error_event" % name)
            problem = events[-1][1] if events else {}
            plain = svc.request("POST", "/query", json=body, timeout=60)
            tap.ok(fixtures.is_problem(plain, 422, "unanswerable"), "unanswerable_%s_plain_is_422" % name,
                   diag=plain.text[:300])
            for field in ("type", "title", "status", "detail"):
                tap.eq(problem.get(field), (plain.json or {}).get(field),
                       "unanswerable_%s_error_event_equals_plain_%s" % (name, field))


def part_builtin_refusal(stub):
    cfg = config(stub)
    del cfg["models"]
    with fixtures.serving(tap, cfg, "builtin_refusal_service_exits_0") as svc:
        body = {"database": DB, "question": "Which singers sang the saddest songs?"}
        es = EventStream(svc, body)
        events = es.all_events()
        es.close()
        tap.eq((es.status, [e[0] for e in events][-1:]), (200, ["error"]), "builtin_refusal_stream_ends_with_an_error_event")
        problem = events[-1][1] if events else {}
        plain = svc.request("POST", "/query", json=body, timeout=60)
        tap.ok(fixtures.is_problem(plain, 422, "builtin-refused") and plain.headers.get("Retry-After") is None
               and ((plain.json or {}).get("builtin") or {}).get("reason"),
               "builtin_refusal_plain_is_422_without_retry_after", diag=repr(plain))
        for field in ("type", "status", "detail", "builtin"):
            tap.eq(problem.get(field), (plain.json or {}).get(field), "builtin_refusal_error_event_equals_plain_" + field)


def part_cached_answer(stub):
    stub.rules([], default_content="```sql\nSELECT name FROM singer ORDER BY name\n```")
    cfg = config(stub)
    cfg["generate"]["cache_ttl_s"] = 60
    with fixtures.serving(tap, cfg, "cached_stream_service_exits_0") as svc:
        body = {"database": DB, "question": "What are the names of the singers?"}
        fresh, cached = EventStream(svc, body), None
        fresh_events = fresh.all_events()
        fresh.close()
        cached = EventStream(svc, body)
        cached_events = cached.all_events()
        cached.close()
        tap.eq([e[0] for e in cached_events], ["result"], "cached_answer_streams_result_alone")
        by = {e[0]: e[1] for e in fresh_events}
        got = cached_events[-1][1] if cached_events else {}
        want_score, want_rows = (by.get("validation") or {}).get("score"), (by.get("rows") or {}).get("row_count")
        tap.ok(got.get("cached") is True and isinstance(want_score, int) and want_rows and want_rows > 1
               and (got.get("score"), got.get("row_count")) == (want_score, want_rows)
               and (by.get("result") or {}).get("score") == want_score,
               "cached_answer_carries_the_fresh_score_and_row_count",
               diag="fresh score %r rows %r; cached %r" % (want_score, want_rows,
                                                            {k: got.get(k) for k in ("cached", "score", "row_count")}))
        tap.eq(len(stub.requests()), 1, "cached_stream_made_no_model_call")


def main():
    stub = fixtures.ModelStub()
    try:
        for part in (part_events_in_order, part_errors, part_unanswerable, part_disconnect, part_builtin_refusal,
                     part_cached_answer):
            try:
                part(stub)
            except Exception:
                fixtures.report_exception(tap)
    finally:
        stub.close()


if __name__ == "__main__":
    sys.exit(fixtures.run_with_binary(tap, "stream_tests", main))
