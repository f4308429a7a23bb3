#!/usr/bin/env python3
"""test_model_faults.py - a model server that misbehaves, and the request
budgets, seen through POST /generate (and /link in llm mode), against the
real binary, a SQLite database and the model stub (tests/stub/model_stub.py)
(TAP; issue 10, "model-server faults" and "per-request budgets").

For each fault the stub plays, one request gets exactly one terminal
answer within its budget (the generate model's timeout_ms * (retries + 1),
plus slack), a problem+json naming the model stage, and the next request,
with the stub behaving again, succeeds without a restart:
  - a body trickled at 1 byte a second, and accept-then-silence: 504
    upstream-timeout after two attempts;
  - the connection closed without an answer, and JSON cut mid-transfer:
    502 after two attempts (transport errors are retried);
  - truncated JSON sent whole, empty `choices`: 502, not retried;
  - a 100 MB body: 502 "larger than", cut off at the bound the generate
    model's max_tokens sets (1024 tokens: 16 bytes a token + 64 KiB = 81920
    bytes; the stub could not send it all; the service's peak RSS does not
    grow by 100 MB); a 400 KB reply (under the 8 MiB cap, far over
    max_tokens' bytes) is refused the same way and the problem stays small;
  - a 1 MB statement accepted (max_tokens large enough) that fails
    validation: the 422 generation-failed body quotes at most a 4 KiB
    excerpt of it (issue 19);
  - 5xx: retried (a 503 once then success is 200; a 500 always is 502
    after two attempts);
  - 400 and 401: 502 naming the status, asked exactly once;
  - 429 with Retry-After 999999: 502 at once (the wait would outlast the
    call's budget), one request; with an HTTP date in 2099 the same; with
    a date already past: retried at once, 200; with 1 s: honoured, then 200;
  - connection refused (the stub gone): 503 unavailable naming the stage;
    the stub back on the same port: 200;
  - /link in llm mode against a silent link model: 504 within the link
    model's budget; in hybrid mode against a 401: 200 with the fallback
    stated, each shuffle asked once.
Budgets:
  - the time budget (options.timeout_ms) running out during correction
    rounds: 200 with the best statement, budget_exhausted "time", within
    the budget; running out before any statement: 504 `timeout` with
    budget_exhausted "time" and the stage;
  - the token budget (generate.token_budget): no correction round after it
    is spent, budget_exhausted "tokens", trace.budget.tokens_spent;
  - the time budget bounds every stage: a silent describe model with a 3 s
    timeout of its own still gives a 504 within a 800 ms budget;
  - options.timeout_ms above generate.max_timeout_ms: 400 naming it;
  - text2sqld_budget_exhausted_total{kind} counts both kinds.
"""

import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-model-faults-")
DB = "concert"
DB_PATH = os.path.join(TMP, "concert.sqlite")
QUIET = {"level": "warn", "access": False}

MODEL_TIMEOUT_MS = 800
RETRIES = 1
CALL_BUDGET_S = MODEL_TIMEOUT_MS * (RETRIES + 1) / 1000.0
SLOW = 3.0 if fixtures.binary_is_sanitized() else 1.0
SLACK_S = 1.5 * SLOW
GOOD_SQL = "SELECT count(*) FROM singer"
TOKEN_BUDGET = 2000
MAX_TIMEOUT_MS = 20000


def config(stub_url, port=None):
    breaker = {"failures": 1000, "cooldown_ms": 1}  # the breaker is not what these checks are about
    model = {"base_url": stub_url, "timeout_ms": MODEL_TIMEOUT_MS, "connect_timeout_ms": 300,
             "retries": RETRIES, "breaker": breaker}
    return {"listen": {"host": "127.0.0.1", "port": port or t2s.free_port()},
            "databases": [{"name": DB, "url": "sqlite://" + DB_PATH}],
            "state": {"url": "sqlite://" + os.path.join(TMP, "state.sqlite")},
            "link": {"default_mode": "vector", "shuffles": 2},
            "generate": {"cache_ttl_s": 0, "max_rounds": 0, "token_budget": TOKEN_BUDGET,
                         "timeout_ms": 10000, "max_timeout_ms": MAX_TIMEOUT_MS},
            "models": {"generate": dict(model, model="gen"), "link": dict(model, model="linker")},
            "log": QUIET}


def gen_rule(respond):
    return {"match": {"path": "/v1/chat/completions", "model": "gen"}, "respond": respond}


GOOD = gen_rule({"content": "```sql\n%s\n```" % GOOD_SQL})
CHAT_JSON = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": GOOD_SQL}}]})


def generate(svc, **extra):
    # options.generator "model": the faults of the model itself (under "auto" the built-in generator
    # would answer this question in the model's place: test_builtin.py covers that fallback)
    body = {"database": DB, "question": "How many singers are there?"}
    body.update(extra)
    body["options"] = dict(body.get("options") or {}, generator="model")
    start = time.monotonic()
    r = svc.request("POST", "/generate", json=body, timeout=120)
    return r, time.monotonic() - start


def detail(r):
    return (r.json or {}).get("detail", "") if isinstance(r.json, dict) else ""


def recovered(svc, stub, name):
    stub.rules([GOOD])
    r, took = generate(svc)
    tap.ok(r.status == 200 and (r.json or {}).get("sql") == GOOD_SQL, name,
           diag=lambda: "%.2f s: %s" % (took, r.text[:300]))


# Each fault: (name, the generate model's rule(s), status, problem slug, words the detail holds,
#              chat requests the stub must have seen).
FAULTS = [
    ("trickle_1_byte_per_s", [gen_rule({"raw_body": CHAT_JSON, "trickle_bytes_per_s": 1})],
     504, "upstream-timeout", ["'generate'", "did not answer"], 2),
    ("accept_then_silence", [gen_rule({"hang": True})], 504, "upstream-timeout", ["'generate'"], 2),
    # libcurl itself sends a request again once when a reused keep-alive connection dies
    # unanswered, so the stub may see one request more than the retry layer makes.
    ("connection_closed_without_answer", [gen_rule({"close": True})], 502, "upstream-error",
     ["'generate'", "transport"], (2, 3)),
    ("json_cut_mid_transfer", [gen_rule({"raw_body": CHAT_JSON, "truncate_bytes": 20})], 502, "upstream-error",
     ["'generate'"], 2),
    ("truncated_json_sent_whole", [gen_rule({"raw_body": CHAT_JSON[:30]})], 502, "upstream-error",
     ["'generate'", "not a JSON object"], 1),
    ("empty_choices", [gen_rule({"raw_body": json.dumps({"choices": []})})], 502, "upstream-error",
     ["'generate'", "without choices"], 1),
    ("http_500_always", [gen_rule({"status": 500})], 502, "upstream-error", ["'generate'", "HTTP 500"], 2),
    ("http_400", [gen_rule({"status": 400, "content": "bad request from stub"})], 502, "upstream-error",
     ["'generate'", "HTTP 400"], 1),
    ("http_401", [gen_rule({"status": 401, "content": "invalid api key"})], 502, "upstream-error",
     ["'generate'", "HTTP 401"], 1),
    ("http_429_retry_after_999999", [gen_rule({"status": 429, "retry_after": 999999})], 502, "upstream-error",
     ["'generate'", "HTTP 429"], 1),
]


def check_fault(svc, stub, name, rules, status, slug, words, calls):
    stub.rules(rules)
    r, took = generate(svc)
    fixtures.check_problem(tap, r, status, slug, "%s_is_%d_%s" % (name, status, slug))
    tap.ok(all(w in detail(r) for w in words), "%s_detail_names_the_model_stage_and_cause" % name,
           diag=lambda: detail(r))
    tap.ok(took < CALL_BUDGET_S + SLACK_S, "%s_answered_within_the_call_budget" % name,
           diag="%.2f s (budget %.1f s)" % (took, CALL_BUDGET_S))
    low, high = calls if isinstance(calls, tuple) else (calls, calls)
    n = len(stub.requests())
    tap.ok(low <= n <= high, "%s_model_asked_%d_time%s" % (name, low, "" if low == 1 else "s"),
           diag="%d requests, expected %d..%d" % (n, low, high))
    recovered(svc, stub, "%s_then_recovers_without_restart" % name)


def check_big_body(svc, stub):
    pid = svc.proc.pid
    before = fixtures.peak_rss_kb(pid)
    stub.rules([gen_rule({"body_bytes": 100 << 20})])
    r, took = generate(svc)
    fixtures.check_problem(tap, r, 502, "upstream-error", "body_of_100_mb_is_502_upstream_error")
    tap.ok("larger than 81920 bytes" in detail(r) and "'generate'" in detail(r),
           "body_of_100_mb_detail_names_the_bound_and_stage", diag=lambda: detail(r))
    tap.ok(took < CALL_BUDGET_S + SLACK_S, "body_of_100_mb_answered_within_the_call_budget", diag="%.2f s" % took)
    tap.eq(len(stub.requests()), 1, "body_of_100_mb_not_retried")
    sent = stub.call("GET", "/_stub/requests").get("big_body_sent") or []
    tap.ok(len(sent) == 1 and sent[0] < (100 << 20), "body_of_100_mb_cut_off_before_the_stub_sent_it_all",
           diag=repr(sent))
    after = fixtures.peak_rss_kb(pid)
    if fixtures.under_sanitizer(pid) or before is None or after is None:
        tap.skip("body_of_100_mb_does_not_grow_peak_rss_by_its_size", "RSS figures mean nothing under a sanitizer")
    else:
        tap.ok((after - before) < 48 * 1024, "body_of_100_mb_does_not_grow_peak_rss_by_its_size",
               diag="peak RSS %d kB -> %d kB" % (before, after))
    recovered(svc, stub, "body_of_100_mb_then_recovers_without_restart")


def check_reply_over_max_tokens(svc, stub):
    stub.rules([gen_rule({"content": "```sql\nSELECT count(*) FROM singer WHERE name <> '%s'\n```" % ("x" * 400000)})])
    r, took = generate(svc)
    fixtures.check_problem(tap, r, 502, "upstream-error", "reply_far_over_max_tokens_is_502_upstream_error")
    tap.ok("larger than 81920 bytes" in detail(r) and "max_tokens" in detail(r),
           "reply_far_over_max_tokens_detail_names_the_bound", diag=lambda: detail(r))
    tap.ok(len(r.body) < 8192, "reply_far_over_max_tokens_problem_stays_small", diag="%d bytes" % len(r.body))
    tap.eq(len(stub.requests()), 1, "reply_far_over_max_tokens_not_retried")
    recovered(svc, stub, "reply_far_over_max_tokens_then_recovers_without_restart")


def check_failure_quotes_an_excerpt(stub):
    cfg = config(stub.base_url)
    cfg["models"]["generate"]["max_tokens"] = 1000000  # the 8 MiB cap applies: the reply is accepted
    cfg["execution"] = {"max_sql_bytes": 2 << 20}
    big = "SELECT nosuch FROM singer WHERE name = '%s'" % ("x" * 1000000)
    stub.rules([gen_rule({"content": "```sql\n%s\n```" % big})])
    with fixtures.serving(tap, cfg, "excerpt_service_exits_0_on_sigterm") as svc:
        r, _ = generate(svc)
        fixtures.check_problem(tap, r, 422, "generation-failed", "statement_of_1_mb_failing_is_422_generation_failed")
        p = r.json if isinstance(r.json, dict) else {}
        sql = p.get("sql") or ""
        tap.ok(len(r.body) < 16384, "problem_of_a_1_mb_statement_stays_under_16_kib", diag="%d bytes" % len(r.body))
        tap.ok(sql.startswith(big[:4000]) and sql.endswith("(%d bytes in all)" % len(big))
               and len(sql.encode()) <= 4096 + 64, "problem_sql_is_a_4_kib_excerpt_saying_the_whole_size",
               diag=lambda: sql[-80:])
        tap.ok(all(len(c.get("detail", "").encode()) <= 4096 + 64 for c in p.get("validation", [])),
               "problem_validation_details_are_bounded")


def check_retry_after(svc, stub):
    # An HTTP date is read as the time to wait: one in 2099 would outlast the call's budget,
    # so the call ends at once, like Retry-After 999999.
    stub.rules([gen_rule({"status": 429, "retry_after": "Thu, 01 Jan 2099 00:00:00 GMT"}), GOOD])
    r, took = generate(svc)
    fixtures.check_problem(tap, r, 502, "upstream-error", "http_429_with_far_future_date_is_502")
    tap.ok(took < 1.0 * SLOW + 0.5, "http_429_with_far_future_date_is_not_waited_for", diag="%.2f s" % took)
    tap.eq(len(stub.requests()), 1, "http_429_with_far_future_date_not_retried")
    # A date already past: retried at once.
    stub.rules([gen_rule({"status": 429, "retry_after": "Fri, 01 Jan 1999 00:00:00 GMT", "times": 1}), GOOD])
    r, took = generate(svc)
    tap.ok(r.status == 200 and (r.json or {}).get("sql") == GOOD_SQL, "http_429_with_past_date_then_success",
           diag=r.text[:300])
    tap.eq(len(stub.requests()), 2, "http_429_with_past_date_retried_once")
    # A short Retry-After is honoured.
    stub.rules([gen_rule({"status": 429, "retry_after": 1, "times": 1}), GOOD])
    r, took = generate(svc)
    tap.ok(r.status == 200, "http_429_with_retry_after_1_then_success", diag=r.text[:300])
    reqs = stub.requests()
    gap = reqs[1]["ts"] - reqs[0]["ts"] if len(reqs) == 2 else 0
    tap.ok(len(reqs) == 2 and 0.9 <= gap < 1.0 + SLACK_S, "http_429_retry_after_1_s_is_honoured",
           diag="%d requests, %.2f s apart" % (len(reqs), gap))
    # A 503 once: retried, then 200.
    stub.rules([gen_rule({"status": 503, "times": 1}), GOOD])
    r, took = generate(svc)
    tap.ok(r.status == 200 and len(stub.requests()) == 2, "http_503_once_is_retried_then_200",
           diag=r.text[:300])


def check_link_llm(svc, stub):
    link_budget = CALL_BUDGET_S
    stub.rules([{"match": {"model": "linker"}, "respond": {"hang": True}}])
    start = time.monotonic()
    r = svc.request("POST", "/link", json={"database": DB, "question": "How many singers?", "mode": "llm"},
                    timeout=60)
    took = time.monotonic() - start
    # A silent link model gives way to vector linking, and the answer says why.
    body = r.json or {}
    tap.ok(r.status == 200 and body.get("mode") == "vector" and body.get("tables"),
           "link_llm_silent_model_falls_back_to_vector_linking", diag=r.text[:300])
    tap.ok(any(f.get("stage") == "link_llm" and f.get("reason") == "timeout" for f in body.get("fallbacks") or []),
           "link_llm_silent_model_fallback_says_timeout", diag=repr(body.get("fallbacks")))
    tap.ok(took < link_budget + SLACK_S, "link_llm_silent_model_answered_within_the_call_budget",
           diag="%.2f s" % took)
    stub.rules([{"match": {"model": "linker"}, "respond": {"status": 401}}])
    r = svc.request("POST", "/link", json={"database": DB, "question": "How many singers?", "mode": "hybrid"},
                    timeout=60)
    tap.ok(r.status == 200 and "failed" in ((r.json or {}).get("fallback") or ""),
           "link_hybrid_with_401_model_answers_from_retrieval_and_says_so", diag=r.text[:300])
    tap.eq(len(stub.requests()), 2, "link_401_each_shuffle_asked_once")
    stub.rules([{"match": {"model": "linker"}, "respond": {"content": '["singer"]'}}])
    r = svc.request("POST", "/link", json={"database": DB, "question": "How many singers?", "mode": "llm"},
                    timeout=60)
    tap.ok(r.status == 200 and [t["name"] for t in r.json.get("tables", [])] == ["singer"],
           "link_llm_recovers_without_restart", diag=r.text[:300])


def check_refused(svc, stub):
    port = stub.port
    stub.kill()
    r, took = generate(svc)
    fixtures.check_problem(tap, r, 503, "unavailable", "connection_refused_is_503_unavailable")
    tap.ok("'generate'" in detail(r) and "unreachable" in detail(r),
           "connection_refused_detail_names_the_stage", diag=lambda: detail(r))
    tap.ok(r.headers.get("Retry-After", "").isdigit(), "connection_refused_503_carries_retry_after",
           diag=repr(r.headers))
    tap.ok(took < CALL_BUDGET_S + SLACK_S, "connection_refused_answered_within_the_call_budget", diag="%.2f s" % took)
    back = fixtures.ModelStub("--port", str(port))
    recovered(svc, back, "model_server_back_on_its_port_recovers_without_restart")
    return back


def empty_results(n):
    """n distinct statements that run and return no rows (each fails the result check)."""
    return ["```sql\nSELECT name FROM singer WHERE singer_id = %d\n```" % (100 + i) for i in range(n)]


def budget_metric(svc, kind):
    m = svc.request("GET", "/metrics").text
    mm = re.search(r'^text2sqld_budget_exhausted_total\{kind="%s"\} (\S+)' % kind, m, re.M)
    return float(mm.group(1)) if mm else None


def check_budgets(svc, stub, doc):
    tap.eq(budget_metric(svc, "time"), 0.0, "budget_metric_time_present_at_zero")
    tap.eq(budget_metric(svc, "tokens"), 0.0, "budget_metric_tokens_present_at_zero")

    # Time runs out during the correction rounds: the best statement so far, within the budget.
    tiny = {"prompt_tokens": 1, "completion_tokens": 1}
    stub.rules([gen_rule({"sequence": empty_results(12), "delay_ms": 400, "usage": tiny})])
    r, took = generate(svc, options={"timeout_ms": 1500, "max_rounds": 10})
    body = r.json or {}
    tap.ok(r.status == 200 and body.get("budget_exhausted") == "time",
           "time_budget_in_corrections_answers_best_so_far_with_budget_exhausted_time", diag=r.text[:400])
    tap.ok(took < 1.5 + SLACK_S, "time_budget_in_corrections_answered_within_the_budget", diag="%.2f s" % took)
    tap.ok(0 < len(body.get("corrections", [])) < 10, "time_budget_stopped_the_correction_rounds",
           diag=repr(body.get("corrections")))
    tap.eq((body.get("trace") or {}).get("budget", {}).get("time_ms"), 1500, "trace_budget_reports_the_time_budget")
    t2s.check_response(tap, doc, r, "POST", "/generate", "time_budget_answer_matches_documented_schema")

    # Time runs out before any statement: 504 timeout, naming the budget and the stage.
    stub.rules([gen_rule({"hang": True})])
    r, took = generate(svc, options={"timeout_ms": 600})
    fixtures.check_problem(tap, r, 504, "timeout", "time_budget_before_any_statement_is_504_timeout")
    tap.ok((r.json or {}).get("budget_exhausted") == "time" and (r.json or {}).get("stage") == "generate"
           and "time budget of 600 ms" in detail(r), "time_budget_problem_names_budget_and_stage",
           diag=r.text[:400])
    tap.ok(took < 0.6 + SLACK_S, "time_budget_problem_answered_within_the_budget", diag="%.2f s" % took)
    t2s.check_response(tap, doc, r, "POST", "/generate", "time_budget_problem_matches_documented_schema")
    recovered(svc, stub, "time_budget_then_next_request_succeeds")

    # Tokens: 1000 a call against a budget of 2000: the first generation and one correction, then stop.
    stub.rules([gen_rule({"sequence": empty_results(12), "usage": {"prompt_tokens": 900, "completion_tokens": 100}})])
    r, took = generate(svc, options={"max_rounds": 10})
    body = r.json or {}
    tap.ok(r.status == 200 and body.get("budget_exhausted") == "tokens",
           "token_budget_answers_best_so_far_with_budget_exhausted_tokens", diag=r.text[:400])
    tap.eq(len(body.get("corrections", [])), 1, "token_budget_allows_no_round_after_it_is_spent")
    tap.eq(len(stub.requests()), 2, "token_budget_model_asked_twice")
    budget = (body.get("trace") or {}).get("budget", {})
    tap.ok(budget.get("tokens") == TOKEN_BUDGET and budget.get("tokens_spent", 0) >= TOKEN_BUDGET,
           "trace_budget_reports_tokens_spent", diag=repr(budget))
    tap.ok(budget_metric(svc, "tokens") == 1.0 and (budget_metric(svc, "time") or 0) >= 2.0,
           "budget_exhausted_total_counts_each_kind",
           diag="time %r, tokens %r" % (budget_metric(svc, "time"), budget_metric(svc, "tokens")))

    # A request may not ask for more time than the config allows.
    r, _ = generate(svc, options={"timeout_ms": MAX_TIMEOUT_MS + 1})
    tap.ok(r.status == 400 and "options.timeout_ms" in detail(r), "options_timeout_ms_above_max_timeout_ms_is_400",
           diag=r.text[:300])
    # A whole answer (no budget hit) says so.
    stub.rules([GOOD])
    r, _ = generate(svc)
    tap.ok(r.status == 200 and "budget_exhausted" in (r.json or {}) and r.json["budget_exhausted"] is None,
           "answer_within_budgets_has_budget_exhausted_null", diag=r.text[:300])


def check_budget_bounds_every_stage(stub):
    """A silent describe model with a long timeout of its own: the request's time budget, not
    the describe model's 3 s * 2 attempts, bounds the answer."""
    cfg = config(stub.base_url)
    cfg["models"]["describe"] = {"base_url": stub.base_url, "model": "describer", "timeout_ms": 3000, "retries": 1}
    with fixtures.serving(tap, cfg, "describe_budget_service_exits_0_on_sigterm") as svc:
        stub.rules([{"match": {"model": "describer"}, "respond": {"hang": True}}, GOOD])
        r, took = generate(svc, options={"timeout_ms": 800})
        fixtures.check_problem(tap, r, 504, "timeout", "silent_describe_model_within_time_budget_is_504_timeout")
        tap.ok((r.json or {}).get("budget_exhausted") == "time", "silent_describe_model_problem_says_time_budget",
               diag=r.text[:300])
        tap.ok(took < 0.8 + SLACK_S, "silent_describe_model_answered_within_the_request_budget",
               diag="%.2f s (the describe model alone may take 6 s)" % took)


def main():
    fixtures.write_sqlite(DB_PATH, fixtures.SMALL_CONCERT_SCHEMA, fixtures.SMALL_CONCERT_ROWS)
    with open(os.path.join(t2s.SOURCE_ROOT, "openapi", "openapi.json"), encoding="utf-8") as f:
        doc = json.load(f)
    stub = fixtures.ModelStub()
    svc = None
    try:
        with fixtures.serving(tap, config(stub.base_url), "service_exits_0_on_sigterm") as svc:
            recovered(svc, stub, "generate_answers_with_a_healthy_model")
            for fault in FAULTS:
                check_fault(svc, stub, *fault)
            check_big_body(svc, stub)
            check_reply_over_max_tokens(svc, stub)
            check_retry_after(svc, stub)
            check_link_llm(svc, stub)
            check_budgets(svc, stub, doc)
            stub = check_refused(svc, stub)
        check_budget_bounds_every_stage(stub)
        check_failure_quotes_an_excerpt(stub)
    except Exception:
        fixtures.report_exception(tap, svc)
    finally:
        stub.close()


if __name__ == "__main__":
    sys.exit(fixtures.run_with_binary(tap, "model_faults", main))
