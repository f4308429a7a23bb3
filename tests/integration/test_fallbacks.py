#!/usr/bin/env python3
"""test_fallbacks.py - graceful model fallbacks, the user's evidence on /link
and /evidence, and the tables `disconnected` names (issue 9), against the
real binary, real SQLite files this test writes and the model stub
(tests/stub/model_stub.py) as the embed, link and generate servers.

  - models.embed failing (HTTP 500 and 404, garbage, another dimension, a
    hang past timeout_ms, nothing listening): /link, /evidence and /query
    answer 200; `fallbacks` names stage "embed" with the reason code
    (http_error, bad_response, dimension_mismatch, timeout, unreachable);
    /metrics counts text2sqld_fallbacks_total{stage="embed",reason}; the
    linked tables and column scores are exactly those of a service without
    models.embed (lexical vectors, comparable with the index's); once the
    embedder answers again and models.embed.breaker.cooldown_ms has passed,
    the index is rebuilt with remote vectors and the fallbacks stop;
    /query's trace reports the fallback (trace.fallbacks, trace.link.fallbacks).
  - mode llm with a link model answering prose that names no table: 200 in
    mode vector with fallbacks [link_llm unparseable], the tables vector
    linking finds, counted in /metrics.
  - `evidence` on /link and /evidence: read with the question (a value only
    the evidence names is found; a table only the evidence names is
    linked), echoed as user_evidence; a non-string or too long one is 400
    naming the field; responses match openapi/openapi.json.
  - disconnected: a world_1-like database (city, country, countrylanguage)
    with an unrelated note(id, txt): "Show the note txt and the city name"
    lists note as disconnected, never city or country.
Every service is stopped with SIGTERM and must exit 0.
"""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_ROOT, "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-fallbacks-")
QUIET = {"level": "warn", "access": False}
EMB = "/v1/embeddings"
CHAT = "/v1/chat/completions"

try:
    with open(os.path.join(SOURCE_ROOT, "openapi", "openapi.json")) as f:
        OPENAPI = json.load(f)
except (OSError, ValueError):
    OPENAPI = None

WORLD_SQL = """
CREATE TABLE country (Code TEXT PRIMARY KEY, Name TEXT, Continent TEXT, Region TEXT, Population INTEGER,
                      IndepYear INTEGER);
CREATE TABLE city (ID INTEGER PRIMARY KEY, Name TEXT, CountryCode TEXT REFERENCES country(Code), District TEXT,
                   Population INTEGER);
CREATE TABLE countrylanguage (CountryCode TEXT REFERENCES country(Code), Language TEXT, IsOfficial TEXT,
                              Percentage REAL, PRIMARY KEY (CountryCode, Language));
CREATE TABLE note (id INTEGER PRIMARY KEY, txt TEXT);
"""
WORLD_ROWS = {
    "country": [("ABW", "Aruba", "North America", "Caribbean", 103000, None),
                ("NLD", "Netherlands", "Europe", "Western Europe", 15864000, 1581),
                ("FRA", "France", "Europe", "Western Europe", 59225700, 843)],
    "city": [(1, "Oranjestad", "ABW", "Aruba", 29034), (2, "Amsterdam", "NLD", "Noord-Holland", 731200),
             (3, "Rotterdam", "NLD", "Zuid-Holland", 593321), (4, "Paris", "FRA", "Ile-de-France", 2125246)],
    "countrylanguage": [("ABW", "Dutch", "T", 5.3), ("NLD", "Dutch", "T", 95.6), ("FRA", "French", "T", 93.6)],
    "note": [(1, "remember the milk"), (2, "call back")],
}
WORLD = fixtures.write_sqlite(os.path.join(TMP, "world.sqlite"), WORLD_SQL, WORLD_ROWS)
Q_NOTE = "Show the note txt and the city name"
Q_CITIES = "Which cities have the largest population, and in which district are they?"


def config(models=None, **extra):
    cfg = {"listen": {"host": "127.0.0.1", "port": t2s.free_port()},
           "databases": [{"name": "world", "url": "sqlite://" + WORLD}],
           "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % time.monotonic_ns())},
           "generate": {"cache_ttl_s": 0},
           "log": QUIET}
    if models:
        cfg["models"] = models
    cfg.update(extra)
    return cfg


def embed_model(base_url, **kw):
    m = {"base_url": base_url, "model": "emb", "timeout_ms": 800, "connect_timeout_ms": 500, "retries": 0,
         "breaker": {"failures": 1, "cooldown_ms": 300}}
    m.update(kw)
    return m


def post(svc, path, **body):
    body.setdefault("database", "world")
    return svc.request("POST", path, json=body, timeout=60)


def reasons(j, stage=None):
    return [(f.get("stage"), f.get("reason")) for f in (j or {}).get("fallbacks", [])
            if stage is None or f.get("stage") == stage]


def linked(j):
    """What /link decided: tables, and columns with their scores (rounded)."""
    if not isinstance(j, dict):
        return None
    return (sorted(t["name"] for t in j.get("tables", [])),
            sorted((c["table"], c["column"], round(c["score"], 6)) for c in j.get("columns", [])))


def metric(svc, name, **labels):
    r = svc.request("GET", "/metrics")
    total = None
    for line in r.text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all('%s="%s"' % (k, v) in line for k, v in labels.items()):
            total = (total or 0.0) + float(line.rsplit(" ", 1)[1])
    return total


def check_openapi(resp, path, name):
    if OPENAPI is None:
        tap.skip(name, "openapi document unavailable")
        return
    t2s.check_response(tap, OPENAPI, resp, "POST", path, name)


def wait_values(svc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = post(svc, "/evidence", question="probe")
        if r.status == 200 and r.json.get("value_index") == "ready":
            return True
        time.sleep(0.05)
    return False


# --------------------------------------------------------------------------- lexical reference

REFERENCE = {}


def part_reference():
    """Link results of a service without models.embed: what the lexical fallback must reproduce."""
    with fixtures.serving(tap, config(), "reference_service_exits_0") as svc:
        for q in (Q_CITIES, Q_NOTE):
            r = post(svc, "/link", question=q)
            tap.ok(r.status == 200 and not r.json.get("fallbacks"), "lexical_only_link_has_no_fallbacks",
                   diag=r.text[:300])
            REFERENCE[q] = linked(r.json)


# --------------------------------------------------------------------------- embed fallbacks

def part_embed_failures(stub):
    cfg = config(models={"embed": embed_model(stub.base_url)}, link={"prebuild": False})
    with fixtures.serving(tap, cfg, "embed_failure_service_exits_0") as svc:
        # Down while the index is built: a lexical index serves, and says so.
        stub.rules([{"match": {"path": EMB}, "respond": {"status": 500, "content": "no gpu"}}])
        r = post(svc, "/link", question=Q_CITIES)
        j = r.json if r.status == 200 else {}
        tap.ok(r.status == 200 and reasons(j) == [("embed", "http_error")], "embed_500_at_build_link_answers_200",
               diag=r.text[:400])
        tap.ok(j.get("index", {}).get("remote_embedder") is None and "no gpu" in j["fallbacks"][0]["detail"],
               "embed_500_at_build_index_is_lexical_and_detail_says_why", diag=json.dumps(j.get("fallbacks")))
        tap.eq(linked(j), REFERENCE.get(Q_CITIES), "embed_fallback_links_exactly_as_the_lexical_embedder")
        check_openapi(r, "/link", "embed_fallback_link_matches_openapi")
        n_calls = len(stub.requests(EMB))
        r = post(svc, "/link", question=Q_CITIES)
        tap.ok(r.status == 200 and reasons(r.json) == [("embed", "http_error")] and
               r.json["index"]["built_now"] is False and len(stub.requests(EMB)) == n_calls,
               "within_the_cooldown_the_lexical_index_serves_without_calling_the_embedder", diag=r.text[:300])
        r = post(svc, "/evidence", question="How many cities are in Aruba?")
        tap.ok(r.status == 200 and reasons(r.json) == [("embed", "http_error")], "embed_500_evidence_answers_200",
               diag=r.text[:400])
        check_openapi(r, "/evidence", "embed_fallback_evidence_matches_openapi")
        v = metric(svc, "text2sqld_fallbacks_total", stage="embed", reason="http_error")
        tap.ok(v is not None and v >= 3, "metrics_count_embed_fallbacks_by_reason", diag=repr(v))

        # The embedder answers again: after the cooldown the index is rebuilt with its vectors.
        stub.rules([])
        time.sleep(0.4)
        r = post(svc, "/link", question=Q_CITIES)
        j = r.json if r.status == 200 else {}
        tap.ok(r.status == 200 and j["index"]["built_now"] is True and j["index"]["remote_embedder"] and
               j["index"]["remote_cache_misses"] == j["index"]["columns"] and reasons(j) == [],
               "index_is_rebuilt_with_the_embedder_once_it_recovers", diag=r.text[:400])

        # Failures of the question's embedding, with a remote index: lexical scores for that request.
        cases = [("http_404", {"status": 404, "content": "no such route"}, "http_error"),
                 ("garbage", {"raw_body": "<html>oops</html>"}, "bad_response"),
                 ("other_dimension", {"dim": 32}, "dimension_mismatch"),
                 ("hang", {"hang": True}, "timeout")]
        for name, respond, reason in cases:
            stub.rules([{"match": {"path": EMB}, "respond": respond}])
            t0 = time.monotonic()
            r = post(svc, "/link", question=Q_CITIES)
            j = r.json if r.status == 200 else {}
            tap.ok(r.status == 200 and reasons(j) == [("embed", reason)] and j["index"]["remote_embedder"],
                   "question_embedding_%s_falls_back_with_%s" % (name, reason), diag=r.text[:400])
            tap.eq(linked(j), REFERENCE.get(Q_CITIES), "question_embedding_%s_scores_lexically" % name)
            if name == "hang":
                tap.ok(time.monotonic() - t0 < 10, "hanging_embedder_is_abandoned_after_its_timeout")
        v = metric(svc, "text2sqld_fallbacks_total", stage="embed", reason="timeout")
        tap.ok(v is not None and v >= 1, "metrics_count_embed_timeouts", diag=repr(v))
        stub.rules([])
        r = post(svc, "/link", question=Q_CITIES)
        tap.ok(r.status == 200 and reasons(r.json) == [] and r.json["index"]["built_now"] is False,
               "healthy_embedder_again_no_fallback", diag=r.text[:300])


def part_embed_unreachable(stub):
    """Nothing listens where models.embed points; /query's linking falls back and its trace says so."""
    dead = t2s.free_port()
    models = {"embed": embed_model("http://127.0.0.1:%d/v1" % dead),
              "generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 5000, "retries": 0}}
    stub.rules([{"match": {"path": CHAT}, "respond": {"content": "```sql\nSELECT Name FROM city ORDER BY ID\n```"}}])
    with fixtures.serving(tap, config(models=models), "unreachable_embedder_service_exits_0") as svc:
        r = post(svc, "/link", question=Q_NOTE)
        tap.ok(r.status == 200 and reasons(r.json) == [("embed", "unreachable")],
               "unreachable_embedder_link_answers_200", diag=r.text[:400])
        tap.eq(linked(r.json if r.status == 200 else None), REFERENCE.get(Q_NOTE),
               "unreachable_embedder_links_as_the_lexical_embedder")
        r = post(svc, "/query", question="List the city names")
        j = r.json if r.status == 200 else {}
        trace = j.get("trace", {})
        tap.ok(r.status == 200 and j.get("rows") == [["Oranjestad"], ["Amsterdam"], ["Rotterdam"], ["Paris"]],
               "unreachable_embedder_query_answers_200", diag=r.text[:400])
        tap.ok(("embed", "unreachable") in reasons(trace) and
               reasons(trace.get("link")) == [("embed", "unreachable")] and
               all(f.get("detail") for f in trace.get("fallbacks", []) if f.get("stage") == "embed"),
               "query_trace_reports_the_embed_fallback", diag=json.dumps(trace.get("fallbacks")))
        tap.eq(reasons(trace).count(("embed", "unreachable")), 1, "query_reports_the_embed_fallback_once")
        check_openapi(r, "/query", "embed_fallback_query_matches_openapi")


# --------------------------------------------------------------------------- link model fallback

def part_llm_unparseable(stub):
    models = {"link": {"base_url": stub.base_url, "model": "linker", "timeout_ms": 3000, "retries": 0}}
    stub.rules([{"match": {"path": CHAT}, "respond": {"content": "I would need to look at the data first."}}])
    with fixtures.serving(tap, config(models=models, link={"shuffles": 2}), "llm_fallback_service_exits_0") as svc:
        r = post(svc, "/link", question=Q_CITIES, mode="llm")
        j = r.json if r.status == 200 else {}
        tap.ok(r.status == 200 and j.get("mode") == "vector" and reasons(j) == [("link_llm", "unparseable")] and
               j.get("model_calls") == 2, "llm_unparseable_answers_fall_back_to_vector", diag=r.text[:400])
        tap.eq(linked(j), REFERENCE.get(Q_CITIES), "llm_unparseable_links_as_vector_mode")
        check_openapi(r, "/link", "llm_fallback_matches_openapi")
        v = metric(svc, "text2sqld_fallbacks_total", stage="link_llm", reason="unparseable")
        tap.eq(v, 1.0, "metrics_count_the_link_llm_fallback")
        stub.rules([{"match": {"path": CHAT}, "respond": {"content": '["city"]'}}])
        r = post(svc, "/link", question=Q_CITIES, mode="llm")
        tap.ok(r.status == 200 and r.json.get("mode") == "llm" and reasons(r.json) == [] and
               [t["name"] for t in r.json["tables"]] == ["city"], "llm_answer_naming_a_table_is_no_fallback",
               diag=r.text[:300])


# --------------------------------------------------------------------------- user evidence

def part_evidence_field():
    with fixtures.serving(tap, config(), "evidence_field_service_exits_0") as svc:
        tap.ok(wait_values(svc), "value_index_ready")
        q = "Show the district of each city"
        hint = "in Europe refers to Continent = 'Europe'"
        plain = post(svc, "/link", question=q)
        r = post(svc, "/link", question=q, evidence=hint)
        tables = [t["name"] for t in r.json.get("tables", [])] if r.status == 200 else []
        tap.ok(plain.status == 200 and [t["name"] for t in plain.json["tables"]] == ["city"],
               "without_evidence_only_city_is_linked", diag=plain.text[:300])
        tap.ok(r.status == 200 and set(tables) == {"country", "city"} and
               ("country", "Continent") in [(c["table"], c["column"]) for c in r.json["columns"]],
               "link_reads_the_evidence_with_the_question", diag=repr(tables))
        tap.ok(r.status == 200 and r.json.get("user_evidence") == hint and r.json.get("question") == q,
               "link_echoes_question_and_user_evidence")
        check_openapi(r, "/link", "link_with_evidence_matches_openapi")

        q = "How many cities does this country have?"
        plain = post(svc, "/evidence", question=q)
        r = post(svc, "/evidence", question=q, evidence="this country refers to Aruba")
        vals = [(v["table"], v["column"], v["value"]) for v in r.json.get("values", [])] if r.status == 200 else []
        tap.ok(plain.status == 200 and not any(v["value"] == "Aruba" for v in plain.json["values"]),
               "without_evidence_no_value_is_found", diag=plain.text[:300])
        tap.ok(("country", "Name", "Aruba") in vals, "evidence_reads_the_user_evidence_for_values", diag=repr(vals))
        tap.ok(r.status == 200 and r.json.get("user_evidence") == "this country refers to Aruba",
               "evidence_echoes_user_evidence")
        check_openapi(r, "/evidence", "evidence_with_user_evidence_matches_openapi")

        for path in ("/link", "/evidence"):
            r = post(svc, path, question=q, evidence=42)
            tap.ok(fixtures.is_problem(r, 400, "invalid-request") and "evidence" in r.json.get("detail", ""),
                   "%s_non_string_evidence_is_400_naming_the_field" % path[1:], diag=r.text[:300])
            r = post(svc, path, question=q, evidence="x" * 4001)
            tap.ok(fixtures.is_problem(r, 400, "invalid-request") and "evidence" in r.json.get("detail", ""),
                   "%s_too_long_evidence_is_400_naming_the_field" % path[1:], diag=r.text[:300])
            r = post(svc, path, question="q" * 4000, evidence="y" * 4000)
            tap.eq(r.status, 200, "%s_question_and_evidence_each_at_the_limit_answer_200" % path[1:])
            r = post(svc, path, question=q, evidence=None)
            tap.eq(r.status, 200, "%s_null_evidence_is_no_evidence" % path[1:])


# --------------------------------------------------------------------------- disconnected

def part_disconnected():
    with fixtures.serving(tap, config(), "disconnected_service_exits_0") as svc:
        r = post(svc, "/link", question=Q_NOTE)
        j = r.json if r.status == 200 else {}
        names = [t["name"] for t in j.get("tables", [])]
        tap.ok({"note", "city"} <= set(names), "note_question_links_note_and_city", diag=repr(names))
        tap.eq(j.get("disconnected"), ["note"], "disconnected_lists_the_table_that_cannot_be_joined")
        joined = {e[s]["table"] for e in j.get("joins", []) for s in ("left", "right")}
        tap.ok("note" not in joined, "the_disconnected_table_has_no_join", diag=json.dumps(j.get("joins")))


def main():
    stub = fixtures.ModelStub()
    try:
        for part in (part_reference, lambda: part_embed_failures(stub), lambda: part_embed_unreachable(stub),
                     lambda: part_llm_unparseable(stub), part_evidence_field, part_disconnected):
            try:
                part()
            except Exception:
                fixtures.report_exception(tap)
    finally:
        stub.close()


if __name__ == "__main__":
    sys.exit(fixtures.run_with_binary(tap, "fallback_tests", main))
