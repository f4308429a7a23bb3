#!/usr/bin/env python3
"""test_generate.py - POST /generate and POST /query: a question in, validated
SQL and its rows out, against the real binary, real SQLite and PostgreSQL,
and the model stub (tests/stub/model_stub.py) scripted per test.

Covers, on a concert database this test writes (SQLite) and, when the Spider
databases are loaded into PostgreSQL, on Spider's concert_singer there:
  - a correct answer executed (rows, validation, trace, prompt holds the
    linked schema as CREATE TABLE, the dialect notes, the question);
  - a wrong column corrected on round 2 from the database's error text, the
    debug turn carrying the previous SQL as the assistant's message;
  - an unknown column fixed by widening: the second prompt shows the nearest
    real column the first did not;
  - writes (DROP, DELETE, UPDATE, writable CTE, ATTACH, several statements)
    never executed: 422 generation-failed, the data checksum unchanged;
  - 429 then success (one call, two attempts); a hanging model -> 504
    upstream-timeout; a circuit breaker opening (503 without calling the
    model), shown in /metrics and /readyz, and closing after the cooldown;
    a fallback endpoint answering when the primary fails; several generate
    endpoints (models.generate_candidates) answering candidates in turn;
  - replies with no SQL, prose around a fence, several statements;
  - result sanity: an empty or 0 result passes when the literals are stored
    values (or groups are filtered by HAVING), fails naming an unstored
    literal and its stored spelling; the first row judged whatever the
    column order; GROUP BY through joined keys, unrelated-key joins and
    ORDER BY/LIMIT on a one-row aggregate as errors;
  - a follow-up with history; the user's evidence in the prompt;
  - budget trimming keeps join keys; the lite-sql profile's format;
  - unanswerable questions end early with 422 unanswerable: one that relates
    to nothing in the schema before any model call, a first answer that is
    the sentinel `UNANSWERABLE: <reason>` after that one call;
  - no generate model -> the built-in generator answers (test_builtin.py); options.generator "model"
    without one -> 422 generation-unavailable, a question the built-in refuses -> 422
    builtin-refused (neither with Retry-After: retrying cannot help), /readyz says "builtin_only";
  - bad options -> 400 naming the field; answers cached for identical
    requests (cached: true, the model asked once, the fresh answer's
    validation score and row count).
Every service is stopped with SIGTERM and must exit 0.
"""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-generate-")
QUIET = {"level": "warn", "access": False}

SCHEMA = """
CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, location TEXT, name TEXT, capacity INTEGER,
                      highest INTEGER, lowest INTEGER, average INTEGER);
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, song_name TEXT,
                     song_release_year TEXT, age INTEGER, is_male TEXT, birth_year INTEGER,
                     net_worth_millions REAL, citizenship TEXT);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, theme TEXT,
                      stadium_id INTEGER REFERENCES stadium(stadium_id), year TEXT);
CREATE TABLE singer_in_concert (concert_id INTEGER REFERENCES concert(concert_id),
                                singer_id INTEGER REFERENCES singer(singer_id),
                                PRIMARY KEY (concert_id, singer_id));
"""
ROWS = {
    "stadium": [(1, "Raith Rovers", "Stark's Park", 10104, 4812, 1294, 2106),
                (2, "Ayr United", "Somerset Park", 11998, 2363, 1057, 1477),
                (3, "East Fife", "Bayview Stadium", 2000, 1980, 533, 864)],
    "singer": [(1, "Joe Sharp", "Netherlands", "You", "1992", 52, "F", 1972, 30.0, "Netherlands"),
               (2, "Timbaland", "United States", "Dangerous", "2008", 32, "T", 1990, 28.0, "United States"),
               (3, "Justin Brown", "France", "Hey Oh", "2013", 29, "T", 1994, 12.5, "France"),
               (4, "Rose White", "France", "Sun", "2003", 41, "F", 1981, 8.0, "France")],
    "concert": [(1, "Auditions", "Free choice", 1, "2014"), (2, "Super bootcamp", "Free choice 2", 2, "2014"),
                (3, "Home Visits", "Bleeding Love", 2, "2015")],
    "singer_in_concert": [(1, 2), (1, 3), (2, 3), (3, 1), (3, 4)],
}
DB_PATH = fixtures.write_sqlite(os.path.join(TMP, "concert.sqlite"), SCHEMA, ROWS)
DB = "concert"


def config(stub, port=None, **extra):
    cfg = {"listen": {"host": "127.0.0.1", "port": port or t2s.free_port()},
           "databases": [{"name": DB, "url": "sqlite://" + DB_PATH}],
           "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % time.monotonic_ns())},
           "generate": {"cache_ttl_s": 0}, "auth": {"allow_anonymous_writes": True},
           "log": QUIET}
    if stub:
        cfg["models"] = {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 5000,
                                      "retries": 0}}
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(cfg.get(k), dict):
            cfg[k].update(v)
        else:
            cfg[k] = v
    return cfg


def chat(text):
    return {"match": {"path": "/v1/chat/completions"}, "respond": {"content": text}}


def ask(svc, path="/query", **body):
    body.setdefault("database", DB)
    return svc.request("POST", path, json=body, timeout=60)


def user_messages(req):
    return [m["content"] for m in req["body"]["messages"] if m["role"] == "user"]


def wait_values(svc, db=DB, timeout=120):
    """Waits until the database's value index is ready (evidence in the prompt depends on it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = svc.request("POST", "/evidence", json={"database": db, "question": "probe"})
        if r.status == 200 and r.json.get("value_index") == "ready":
            return True
        time.sleep(0.05)
    return False


def part_correct_answer(stub):
    stub.rules([chat("Sure.\n```sql\nSELECT name FROM singer WHERE country = 'France' ORDER BY name\n```\n"
                     "These are the French singers.")])
    with fixtures.serving(tap, config(stub), "correct_answer_service_exits_0") as svc:
        put = svc.request("PUT", "/databases/%s/descriptions" % DB, json={"descriptions": [
            {"table": "singer", "column": "country", "text": "Country the singer comes from"}]})
        tap.eq(put.status, 200, "description_override_stored")
        tap.ok(wait_values(svc), "value_index_ready")
        r = ask(svc, question="Which singers are from France?")
        tap.eq(r.status, 200, "query_answers_200")
        j = r.json or {}
        tap.eq(j.get("sql"), "SELECT name FROM singer WHERE country = 'France' ORDER BY name",
               "sql_is_taken_from_the_fence_without_the_prose")
        tap.eq(j.get("rows"), [["Justin Brown"], ["Rose White"]], "rows_of_the_final_sql_are_returned")
        tap.eq(j.get("columns"), ["name"], "columns_are_returned")
        tap.eq((j.get("row_count"), j.get("truncated")), (2, False), "row_count_and_truncated")
        tap.eq((j.get("dialect"), j.get("ok"), j.get("cached"), j.get("corrections")), ("sqlite", True, False, []),
               "dialect_ok_not_cached_no_corrections")
        levels = sorted({c["level"] for c in j.get("validation", [])})
        tap.eq(levels, [1, 2, 3], "validation_reports_all_three_levels")
        tap.ok(all(c["ok"] for c in j.get("validation", []) if c["severity"] == "error"),
               "every_blocking_check_passed", diag=json.dumps(j.get("validation"))[:2000])
        reqs = stub.requests()
        tap.eq(len(reqs), 1, "one_model_call")
        prompt = "\n".join(user_messages(reqs[0])) if reqs else ""
        tap.ok("CREATE TABLE singer (" in prompt and "country TEXT" in prompt, "prompt_has_create_table_of_singer",
               diag=prompt[:1500])
        tap.ok("Which singers are from France?" in prompt and "```sql" in prompt and "SQLite" in prompt,
               "prompt_has_question_fence_instruction_and_dialect")
        tap.ok("'France'" in prompt, "prompt_has_the_value_france_spelled_as_stored", diag=prompt[:2500])
        tap.ok("country TEXT, -- Country the singer comes from" in prompt or
               "country TEXT -- Country the singer comes from" in prompt,
               "the_users_description_override_is_in_the_prompt", diag=prompt[:2500])
        trace = j.get("trace", {})
        tap.ok(any(v.get("table") == "singer" and v.get("column") == "country" and v.get("value") == "France"
                   for v in (trace.get("evidence") or {}).get("values", [])),
               "evidence_of_the_stored_value_reaches_generation", diag=json.dumps(trace.get("evidence"))[:800])
        tap.eq(trace.get("prompt", {}).get("messages", [{}])[-1].get("content"), prompt,
               "trace_prompt_is_exactly_what_was_sent")
        tap.ok(trace.get("tokens", {}).get("prompt", 0) > 0 and trace.get("tokens", {}).get("completion", 0) > 0,
               "trace_counts_prompt_and_completion_tokens")
        tap.ok({"link", "evidence", "prompt", "generate", "validate", "total"} <= set(trace.get("timings_ms", {})),
               "trace_has_timings_per_stage")
        g = ask(svc, path="/generate", question="Which singers are from France?")
        tap.ok(g.status == 200 and "rows" not in (g.json or {}) and g.json.get("sql"),
               "generate_answers_sql_without_rows")
        m = svc.request("GET", "/metrics").text
        tap.ok('text2sqld_model_tokens_total{stage="generate",kind="prompt",outcome="ok"}' in m,
               "metrics_count_tokens_per_stage_and_outcome", diag=m[-1500:])


def header(req, name):
    return next((v for k, v in (req.get("headers") or {}).items() if k.lower() == name), None)


def part_traceparent_forwarded(stub):
    """A request's W3C traceparent reaches the model servers: each model call
    (the generator's, and the link model's from its shuffle threads) carries
    the same trace id and flags with a new span id; without one, none is sent."""
    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    stub.rules([chat("```sql\nSELECT name FROM singer ORDER BY name\n```")])
    models = {"link": {"base_url": stub.base_url, "model": "link", "timeout_ms": 5000, "retries": 0}}
    with fixtures.serving(tap, config(stub, models=models), "traceparent_service_exits_0") as svc:
        r = svc.request("POST", "/query", json={"database": DB, "question": "List the singers' names"},
                        headers={"traceparent": tp}, timeout=60)
        tap.ok(r.status == 200, "query_with_traceparent_answers_200", diag=r.text[:300])
        gen = [q for q in stub.requests() if q["body"].get("model") == "gen"]
        sent = [header(q, "traceparent") for q in gen]
        tap.ok(gen and all(s and s.startswith("00-" + tp[3:35] + "-") and s.endswith("-01") for s in sent),
               "generator_call_carries_the_requests_trace_id", diag=repr(sent))
        tap.ok(sent and all(s and s[36:52] != tp[36:52] and s[36:52] != "0" * 16 for s in sent),
               "generator_call_has_its_own_span_id", diag=repr(sent))
        stub.rules([chat("singer")])
        r = svc.request("POST", "/link", json={"database": DB, "question": "List the singers' names", "mode": "llm"},
                        headers={"traceparent": tp}, timeout=60)
        links = [header(q, "traceparent") for q in stub.requests() if q["body"].get("model") == "link"]
        tap.ok(r.status == 200 and links and all(s and s[3:35] == tp[3:35] for s in links),
               "link_model_calls_from_worker_threads_carry_the_trace_id", diag="%d %r" % (r.status, links))
        tap.ok(len(set(links)) == len(links), "each_link_model_call_has_its_own_span_id", diag=repr(links))
        stub.rules([chat("singer")])
        svc.request("POST", "/link", json={"database": DB, "question": "List the singers' names", "mode": "llm"},
                    timeout=60)
        plain = [header(q, "traceparent") for q in stub.requests()]
        tap.ok(plain and not any(plain), "no_traceparent_sent_when_the_request_had_none", diag=repr(plain))


def part_wrong_column_corrected(stub):
    stub.rules([{"match": {"contains": "no such column"}, "respond": {"content":
                 "```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```"}}],
               default_content="```sql\nSELECT count(*) FROM singer WHERE nation = 'France'\n```")
    with fixtures.serving(tap, config(stub), "wrong_column_service_exits_0") as svc:
        r = ask(svc, question="How many singers are from France?")
        j = r.json or {}
        tap.eq((r.status, j.get("rows")), (200, [[2]]), "wrong_column_is_corrected_and_executed")
        corr = j.get("corrections", [])
        tap.eq(len(corr), 1, "one_correction_round")
        if corr:
            tap.eq((corr[0]["round"], corr[0]["check"]), (1, "names_resolve"), "correction_names_the_failing_check")
            tap.ok("nation" in corr[0]["error"], "correction_carries_the_database_error", diag=corr[0]["error"])
        reqs = stub.requests()
        tap.eq(len(reqs), 2, "two_model_calls")
        if len(reqs) == 2:
            msgs = reqs[1]["body"]["messages"]
            roles = [m["role"] for m in msgs]
            tap.eq(roles[-3:], ["user", "assistant", "user"], "debug_turn_is_prompt_then_previous_sql_then_error")
            tap.ok("nation" in msgs[-2]["content"] and "Error Message" in msgs[-1]["content"]
                   and "no such column" in msgs[-1]["content"], "debug_turn_shows_previous_sql_and_error",
                   diag=json.dumps(msgs[-2:])[:1500])


def part_widening(stub):
    stub.rules([{"match": {"contains": "Error Message"}, "respond": {"content":
                 "```sql\nSELECT name FROM singer ORDER BY birth_year LIMIT 1\n```"}}],
               default_content="```sql\nSELECT name FROM singer ORDER BY birthyear LIMIT 1\n```")
    # A link budget too small to show the singer table whole (it would be: link_columns.c,
    # WHOLE_TABLE_TOKENS), so that the first prompt lacks the column widening adds.
    with fixtures.serving(tap, config(stub, link={"budget_tokens": 20}), "widening_service_exits_0") as svc:
        r = ask(svc, question="Who is the oldest singer from the Netherlands?")
        j = r.json or {}
        tap.eq((r.status, j.get("rows")), (200, [["Joe Sharp"]]), "unknown_column_fixed_after_widening")
        reqs = stub.requests()
        if len(reqs) == 2:
            first, second = reqs[0]["body"]["messages"][1]["content"], reqs[1]["body"]["messages"][1]["content"]
            tap.ok("birth_year" not in first, "first_prompt_lacks_the_column", diag=first[:1500])
            tap.ok("birth_year" in second, "second_prompt_shows_the_nearest_real_column", diag=second[:1500])
        else:
            tap.ok(False, "two_model_calls_for_widening", diag=str(len(reqs)))
        tap.ok(any(f.get("reason", "").startswith("schema widened") and "birth_year" in f.get("added", "")
                   for f in j.get("trace", {}).get("fallbacks", [])), "trace_says_what_was_widened",
               diag=json.dumps(j.get("trace", {}).get("fallbacks")))


WRITES = [
    "DROP TABLE singer",
    "DELETE FROM singer",
    "UPDATE singer SET name = 'x'",
    "WITH gone AS (DELETE FROM singer RETURNING *) SELECT * FROM gone",
    "ATTACH DATABASE '%s' AS other" % os.path.join(TMP, "other.sqlite"),
    "SELECT 1; DELETE FROM singer",
]


def part_join_replanned(stub):
    good = ("SELECT s.name, c.concert_name FROM singer s JOIN singer_in_concert sc ON sc.singer_id = s.singer_id "
            "JOIN concert c ON c.concert_id = sc.concert_id WHERE c.year = '2015' ORDER BY s.name")
    stub.rules([{"match": {"contains": "not joined"}, "respond": {"content": "```sql\n%s\n```" % good}}],
               default_content="```sql\nSELECT s.name, c.concert_name FROM singer s, concert c "
                               "WHERE c.year = '2015'\n```")
    with fixtures.serving(tap, config(stub), "join_service_exits_0") as svc:
        r = ask(svc, question="Which singers performed in 2015?")
        j = r.json or {}
        tap.eq((r.status, j.get("rows")), (200, [["Joe Sharp", "Home Visits"], ["Rose White", "Home Visits"]]),
               "missing_join_is_corrected")
        tap.eq([c["check"] for c in j.get("corrections", [])], ["tables_joined"],
               "missing_join_fails_level_2_tables_joined")
        reqs = stub.requests()
        second = reqs[1]["body"]["messages"][1]["content"] if len(reqs) == 2 else ""
        tap.ok("CREATE TABLE singer_in_concert (" in second and
               "FOREIGN KEY (singer_id) REFERENCES singer(singer_id)" in second,
               "correction_prompt_shows_the_bridge_table_and_its_keys", diag=second[:2000])
        checks = {c["check"]: c for c in j.get("validation", [])}
        tap.ok(checks.get("joins_follow_schema_graph", {}).get("ok") is True,
               "final_joins_follow_the_schema_graph", diag=json.dumps(checks.get("joins_follow_schema_graph")))
        stub.rules([], default_content="```sql\nSELECT s.name FROM singer s JOIN singer_in_concert USING (singer_id) "
                                       "JOIN concert c USING (concert_id) WHERE c.year = '2015' ORDER BY s.name\n```")
        r = ask(svc, question="Which singers performed in 2015?")
        tap.eq(((r.json or {}).get("corrections"), (r.json or {}).get("ok")), ([], True),
               "using_joins_count_as_joins")
        stub.rules([], default_content="```sql\nSELECT c.concert_name FROM concert c JOIN stadium s "
                                       "ON s.stadium_id = c.stadium_id OR s.capacity = c.concert_id "
                                       "UNION SELECT name FROM singer UNION SELECT name FROM stadium\n```")
        r = ask(svc, question="All names of concerts, singers and stadiums")
        corr = [c for c in (r.json or {}).get("corrections", []) if c.get("check") != "confirm"]
        tap.eq((corr, (r.json or {}).get("row_count")), ([], 10), "or_joins_connect_and_unions_may_exceed_a_table")
        # Shapes SQLite runs and the analyser must read: an ON naming a table joined later, one ON for a
        # chain of joins, single-quoted names, an unqualified join column (singer_id: only singer has it).
        for name, sql in (
                ("on_naming_a_later_table", "SELECT s.name FROM singer AS s JOIN concert AS c ON c.concert_id = "
                 "sc.concert_id JOIN singer_in_concert AS sc ON sc.singer_id = s.singer_id WHERE c.year = '2015'"),
                ("one_on_for_a_join_chain", "SELECT s.name FROM singer AS s JOIN singer_in_concert AS sc JOIN "
                 "concert AS c ON s.singer_id = sc.singer_id AND sc.concert_id = c.concert_id WHERE c.year = '2015'"),
                ("single_quoted_names", "SELECT 's'.name AS 'Singer' FROM 'singer' AS 's' JOIN 'singer_in_concert' "
                 "AS sc ON sc.singer_id = 's'.singer_id JOIN concert AS c ON c.concert_id = sc.concert_id "
                 "WHERE c.year = '2015'"),
                ("unqualified_join_column", "SELECT s.name FROM concert AS c JOIN singer AS s "
                 "ON c.stadium_id = singer_id WHERE c.year = '2015'")):
            stub.rules([], default_content="```sql\n%s ORDER BY 1\n```" % sql)
            r = ask(svc, question="Which singers performed in 2015?", options={"max_rounds": 0})
            checks = {c["check"]: c for c in (r.json or {}).get("validation", [])}
            tap.ok("analysable" not in checks and checks.get("tables_joined", {}).get("ok") is True and
                   ((r.json or {}).get("row_count") or 0) > 0, "analysed_and_joined: " + name,
                   diag=json.dumps(checks.get("analysable") or checks.get("tables_joined")))
        stub.rules([], default_content="```sql\nSELECT count(*) FROM singer WHERE count(*) > 1\n```")
        r = ask(svc, question="How many singers?", options={"max_rounds": 0})
        tap.ok(fixtures.is_problem(r, 422, "generation-failed"), "aggregate_in_where_is_not_executable",
               diag=r.text[:500])


def part_writes_never_run(stub):
    before = t2s.sqlite_checksum(DB_PATH)
    with fixtures.serving(tap, config(stub), "writes_service_exits_0") as svc:
        for sql in WRITES:
            stub.rules([], default_content="```sql\n%s\n```" % sql)
            r = ask(svc, question="Remove the singers", options={"max_rounds": 1})
            tap.ok(fixtures.is_problem(r, 422, "generation-failed"), "write_is_422_generation_failed: " + sql[:30],
                   diag=r.text[:600])
            tap.ok((r.json or {}).get("sql") and isinstance((r.json or {}).get("validation"), list),
                   "problem_carries_sql_and_validation: " + sql[:30])
            tap.eq(len(stub.requests()), 2, "write_goes_to_one_correction_round: " + sql[:30])
    tap.eq(t2s.sqlite_checksum(DB_PATH), before, "sqlite_data_unchanged_after_every_write_attempt")
    tap.ok(not os.path.exists(os.path.join(TMP, "other.sqlite")), "attach_created_no_file")


def part_reply_shapes(stub):
    with fixtures.serving(tap, config(stub), "reply_shapes_service_exits_0") as svc:
        stub.rules([], default_content="I am sorry, I cannot write SQL for that.")
        r = ask(svc, question="How many singers?", options={"max_rounds": 2})
        tap.ok(fixtures.is_problem(r, 422, "generation-failed"), "reply_without_sql_is_422_after_rounds",
               diag=r.text[:400])
        tap.eq(len(stub.requests()), 3, "reply_without_sql_asks_for_corrections")
        stub.rules([{"match": {"contains": "Error Message"}, "respond": {"content": "SELECT count(*) FROM singer"}}],
                   default_content="```sql\nSELECT count(*) FROM singer; SELECT count(*) FROM concert\n```")
        r = ask(svc, question="How many singers?")
        j = r.json or {}
        tap.eq((r.status, j.get("rows")), (200, [[4]]), "several_statements_corrected_to_one_bare_statement")
        tap.eq([c["check"] for c in j.get("corrections", [])], ["statement_allowed"],
               "several_statements_fail_statement_allowed")
        stub.rules([], default_content="The answer:\nSELECT count(*) FROM concert\n\nThis counts the concerts.")
        r = ask(svc, question="How many concerts?")
        tap.eq(((r.json or {}).get("sql"), (r.json or {}).get("rows")), ("SELECT count(*) FROM concert", [[3]]),
               "bare_statement_between_prose_is_taken")


def part_unanswerable(stub):
    stub.rules([], default_content="```sql\nSELECT count(*) FROM singer\n```")
    with fixtures.serving(tap, config(stub), "unanswerable_service_exits_0") as svc:
        for path in ("/query", "/generate"):
            stub.rules([], default_content="```sql\nSELECT count(*) FROM singer\n```")
            r = ask(svc, path, question="Ok")
            tap.ok(fixtures.is_problem(r, 422, "unanswerable"), "question_relating_to_nothing_is_422_unanswerable"
                   + path.replace("/", "_"), diag=r.text[:400])
            tap.ok("nothing in the schema" in (r.json or {}).get("detail", ""),
                   "unanswerable_detail_says_nothing_in_the_schema_relates" + path.replace("/", "_"))
            tap.eq(len(stub.requests()), 0, "question_relating_to_nothing_calls_no_model" + path.replace("/", "_"))
        stub.rules([], default_content="UNANSWERABLE: the database holds concerts and singers, not jokes.")
        r = ask(svc, question="Tell me a joke about singers", options={"max_rounds": 3})
        tap.ok(fixtures.is_problem(r, 422, "unanswerable"), "sentinel_answer_is_422_unanswerable", diag=r.text[:400])
        tap.ok("not jokes" in (r.json or {}).get("detail", ""), "unanswerable_detail_carries_the_models_reason",
               diag=(r.json or {}).get("detail"))
        reqs = stub.requests()
        tap.eq(len(reqs), 1, "sentinel_answer_ends_after_exactly_one_model_call")
        tap.ok(reqs and "UNANSWERABLE:" in reqs[0]["body"]["messages"][0]["content"],
               "default_profile_system_message_offers_the_sentinel")
        stub.rules([], default_content="```sql\nSELECT count(*) FROM singer\n```")
        r = ask(svc, question="How many singers are there?")
        tap.eq((r.status, (r.json or {}).get("rows")), (200, [[4]]), "a_normal_question_still_answers_200")
        tap.eq(len(stub.requests()), 1, "a_normal_question_asks_the_model")
    # With a link model (hybrid linking), a question relating to nothing asks neither the link nor the generate model.
    cfg = config(stub)
    cfg["models"]["link"] = {"base_url": stub.base_url, "model": "link", "timeout_ms": 5000, "retries": 0}
    with fixtures.serving(tap, cfg, "unanswerable_hybrid_service_exits_0") as svc:
        stub.rules([], default_content="[\"singer\"]")
        r = ask(svc, question="Ok")
        tap.ok(fixtures.is_problem(r, 422, "unanswerable"), "hybrid_question_relating_to_nothing_is_422_unanswerable",
               diag=r.text[:400])
        tap.eq(len(stub.requests()), 0, "hybrid_question_relating_to_nothing_asks_no_link_model")
        r = svc.request("POST", "/link", json={"database": DB, "question": "Ok"})
        tap.ok(r.status == 200 and r.json.get("mode") == "hybrid" and len(stub.requests()) > 0,
               "link_endpoint_still_asks_the_link_model", diag=r.text[:300])


def part_padded_literal(stub):
    """A literal stored with padding (a CHAR column's trailing spaces) is stored: an empty result is not an error."""
    path = fixtures.write_sqlite(os.path.join(TMP, "airports.sqlite"),
                                 "CREATE TABLE airport (code TEXT PRIMARY KEY, city TEXT);",
                                 {"airport": [("ABZ", "Aberdeen "), ("ABR", "Aberdeen  "), ("EDI", "Edinburgh")]})
    cfg = config(stub, databases=[{"name": "airports", "url": "sqlite://" + path}])
    stub.rules([], default_content="```sql\nSELECT code FROM airport WHERE city = 'Aberdeen'\n```")
    with fixtures.serving(tap, cfg, "padded_literal_service_exits_0") as svc:
        r = ask(svc, database="airports", question="Which airports are in Aberdeen?", options={"max_rounds": 0})
        checks = {c["check"]: c for c in (r.json or {}).get("validation", [])}
        tap.ok(checks.get("result_not_empty", {}).get("ok") is True, "padded_stored_literal_makes_empty_plausible",
               diag=json.dumps(checks.get("result_not_empty")))
        w = checks.get("literals_spelled_as_stored", {})
        tap.ok(w.get("ok") is False and w.get("severity") == "warning" and "'Aberdeen '" in w.get("detail", ""),
               "padded_stored_literal_is_a_warning_naming_the_stored_spelling", diag=json.dumps(w))


def part_empty_result_and_repeat(stub):
    stub.rules([], default_content="```sql\nSELECT name FROM singer WHERE country = 'Franc'\n```")
    with fixtures.serving(tap, config(stub), "empty_result_service_exits_0") as svc:
        r = ask(svc, question="Which singers are from france?")
        j = r.json or {}
        tap.eq(r.status, 200, "empty_result_still_answers_200")
        tap.eq([c["check"] for c in j.get("corrections", [])], ["result_not_empty"],
               "empty_result_goes_to_correction_once")
        tap.eq(len(stub.requests()), 2, "a_repeated_statement_ends_the_loop")
        tap.eq(j.get("ok"), False, "answer_is_marked_not_ok")


def part_repeated_rows_repaired(stub):
    join = "SELECT s.name FROM singer s JOIN singer_in_concert sc ON sc.singer_id = s.singer_id"
    stub.rules([], default_content="```sql\n%s\n```" % join)
    with fixtures.serving(tap, config(stub), "repair_service_exits_0") as svc:
        r = ask(svc, question="Which singers performed in a concert?")
        j = r.json or {}
        corr = j.get("corrections", [])
        tap.eq([(c.get("check"), c.get("repair"), c.get("ok")) for c in corr], [("rows_not_repeated", "distinct", True)],
               "repeated_rows_are_repaired_by_distinct")
        tap.eq((j.get("ok"), j.get("row_count"), len(stub.requests())), (True, 4, 1),
               "the_repair_is_the_answer_without_a_second_model_call")
        stub.rules([], default_content="```sql\n%s\n```" % join)
        r = ask(svc, question="Which singers performed in a concert?", options={"max_rounds": 0})
        tap.eq(((r.json or {}).get("corrections"), (r.json or {}).get("ok")), ([], False),
               "no_repair_without_correction_rounds")
        stub.rules([], default_content="```sql\n%s WHERE s.name = 'Justin Brown'\n```" % join)
        r = ask(svc, question="Which concerts did Justin Brown perform in?")
        corr = (r.json or {}).get("corrections", [])
        tap.ok(corr and all("repair" not in c for c in corr) and len(stub.requests()) == 2,
               "one_row_repeated_goes_to_the_model_not_to_distinct", diag=json.dumps(corr))


def part_stored_spelling_repaired(stub):
    """An unstored literal whose one stored spelling differs only in case or spacing is replaced without a model call."""
    stub.rules([], default_content="```sql\nSELECT name FROM singer WHERE country = 'united states'\n```")
    with fixtures.serving(tap, config(stub), "stored_value_repair_service_exits_0") as svc:
        r = ask(svc, question="Which singers are from the united states?")
        j = r.json or {}
        corr = [(c.get("check"), c.get("repair"), c.get("ok")) for c in j.get("corrections", [])]
        tap.eq(corr, [("result_not_empty", "stored_value", True)], "an_unstored_literal_is_repaired_by_its_stored_spelling")
        tap.eq((j.get("ok"), j.get("rows"), len(stub.requests())), (True, [["Timbaland"]], 1),
               "the_stored_spelling_repair_is_the_answer_without_a_second_model_call")
        stub.rules([], default_content="```sql\nSELECT country FROM singer WHERE name = 'Timba land'\n```")
        r = ask(svc, question="Where is Timbaland from?")
        tap.eq(((r.json or {}).get("rows"), len(stub.requests())), ([["United States"]], 1),
               "spacing_is_repaired_like_case")
        stub.rules([], default_content="```sql\nSELECT name FROM singer WHERE country = 'Frnace'\n```")
        r = ask(svc, question="Which singers are from France?")
        corr = (r.json or {}).get("corrections", [])
        tap.ok(corr and all("repair" not in c for c in corr) and len(stub.requests()) >= 2,
               "other_letters_go_to_the_model_not_to_a_repair", diag=json.dumps(corr))
        stub.rules([], default_content="```sql\nSELECT name FROM singer WHERE country = 'united states'\n```")
        r = ask(svc, question="Which singers are from the united states?", options={"max_rounds": 0})
        tap.eq(((r.json or {}).get("corrections"), (r.json or {}).get("ok")), ([], False),
               "no_stored_value_repair_without_correction_rounds")


SET_OP = "SELECT name FROM singer WHERE country = 'France' INTERSECT SELECT name FROM singer WHERE age > 30"
OTHER = "SELECT name FROM singer WHERE country = 'France'"


def confirm_rules(stub, second, third=None):
    """The first answer SET_OP; the confirmation answers second, the choice between two answers third."""
    rules = []
    if third:
        rules.append({"match": {"contains": "give different results"}, "respond": {"content": "```sql\n%s\n```" % third}})
    rules.append({"match": {"contains": "passes every check"}, "respond": {"content": "```sql\n%s\n```" % second}})
    stub.rules(rules, default_content="```sql\n%s\n```" % SET_OP)


def part_confirm(stub):
    """A passing set operation is confirmed once; another reading wins only with a third answer agreeing with it."""
    with fixtures.serving(tap, config(stub), "confirm_service_exits_0") as svc:
        confirm_rules(stub, SET_OP)
        r = ask(svc, question="Which French singers are older than 30?")
        j = r.json or {}
        tap.eq((j.get("rows"), len(stub.requests()), [c.get("check") for c in j.get("corrections", [])]),
               ([["Rose White"]], 2, ["confirm"]), "a_passing_set_operation_is_confirmed_with_one_model_call")
        reqs = stub.requests()
        if len(reqs) == 2:
            msgs = reqs[1]["body"]["messages"]
            tap.ok(msgs[-2]["role"] == "assistant" and "INTERSECT" in msgs[-2]["content"]
                   and "passes every check" in msgs[-1]["content"], "the_confirmation_shows_the_answer_to_the_model",
                   diag=json.dumps(msgs[-2:])[:800])
        confirm_rules(stub, OTHER, OTHER + " ORDER BY name")
        r = ask(svc, question="Which French singers are older than 30?")
        j = r.json or {}
        tap.eq((sorted(j.get("rows") or []), len(stub.requests()), j.get("sql")),
               ([["Justin Brown"], ["Rose White"]], 3, OTHER), "another_reading_wins_when_the_third_answer_agrees_with_it")
        confirm_rules(stub, OTHER, SET_OP)
        r = ask(svc, question="Which French singers are older than 30?")
        j = r.json or {}
        tap.eq((j.get("rows"), len(stub.requests()), j.get("sql")), ([["Rose White"]], 3, SET_OP),
               "the_first_answer_stands_when_the_third_agrees_with_it")
        confirm_rules(stub, "SELECT name FROM singer WHERE country = 'Spain'")
        r = ask(svc, question="Which French singers are older than 30?")
        tap.eq(((r.json or {}).get("rows"), len(stub.requests())), ([["Rose White"]], 2),
               "a_second_reading_failing_a_check_leaves_the_answer")
        confirm_rules(stub, OTHER, OTHER)
        r = ask(svc, question="Which French singers are older than 30?", options={"max_rounds": 0})
        tap.eq(((r.json or {}).get("rows"), len(stub.requests())), ([["Rose White"]], 1),
               "no_confirmation_without_correction_rounds")
        stub.rules([], default_content="```sql\n%s\n```" % OTHER)
        r = ask(svc, question="Which singers are French?")
        tap.eq(((r.json or {}).get("corrections"), len(stub.requests())), ([], 1),
               "a_passing_statement_without_a_set_operation_is_not_confirmed")
    with fixtures.serving(tap, config(stub, generate={"confirm_calls": 1}), "confirm_one_call_service_exits_0") as svc:
        confirm_rules(stub, OTHER, OTHER)
        r = ask(svc, question="Which French singers are older than 30?")
        tap.eq(((r.json or {}).get("rows"), len(stub.requests())), ([["Rose White"]], 2),
               "with_one_confirm_call_a_disagreement_keeps_the_first_answer")
    with fixtures.serving(tap, config(stub, generate={"confirm_calls": 0}), "confirm_off_service_exits_0") as svc:
        confirm_rules(stub, OTHER, OTHER)
        r = ask(svc, question="Which French singers are older than 30?")
        tap.eq(((r.json or {}).get("rows"), len(stub.requests())), ([["Rose White"]], 1),
               "confirm_calls_0_turns_the_confirmation_off")


def part_result_sanity_and_checks(stub):
    def verdict(svc, sql):
        stub.rules([], default_content="```sql\n%s\n```" % sql)
        r = ask(svc, question="Which rows?", options={"max_rounds": 0})
        return {c["check"]: c for c in (r.json or {}).get("validation", [])}

    def is_(checks, name, ok, severity="error"):
        c = checks.get(name, {})
        return c.get("ok") is ok and c.get("severity") == severity

    with fixtures.serving(tap, config(stub), "result_sanity_service_exits_0") as svc:
        c = verdict(svc, "SELECT name FROM singer WHERE country = 'france'")
        tap.ok(is_(c, "result_not_empty", False) and "'france' is not a stored value" in c["result_not_empty"]["detail"]
               and "'France'" in c["result_not_empty"]["detail"],
               "empty_result_names_the_unstored_literal_and_the_stored_spelling", diag=json.dumps(c.get("result_not_empty")))
        cases = [  # (sql, check, ok, name)
            ("SELECT name FROM singer WHERE country = 'France' AND age > 60", "result_not_empty", True,
             "empty_result_with_stored_literals_is_plausible"),
            ("SELECT country FROM singer GROUP BY country HAVING count(*) > 5", "result_not_empty", True,
             "empty_result_of_having_on_counts_is_plausible"),
            ("SELECT name FROM singer WHERE age > 60", "result_not_empty", False,
             "empty_result_without_literals_still_fails"),
            ("SELECT count(*) FROM singer WHERE age > 60", "first_value_meaningful", True,
             "zero_count_of_a_range_filter_is_plausible"),
            ("SELECT count(*) FROM singer WHERE country = 'Italy'", "first_value_meaningful", False,
             "zero_count_of_an_unstored_literal_fails"),
            ("SELECT min(age) - 29, max(age) FROM singer", "first_value_meaningful", True,
             "first_value_does_not_depend_on_column_order"),
            ("SELECT s.name, count(*) FROM singer s JOIN singer_in_concert sc ON sc.singer_id = s.singer_id "
             "GROUP BY sc.singer_id", "group_by_consistent", True,
             "column_determined_by_a_key_joined_to_the_grouped_column"),
            ("SELECT country, name FROM singer GROUP BY country", "group_by_consistent", False,
             "ungrouped_column_is_an_error_on_sqlite"),
            ("SELECT s.name FROM singer s JOIN concert c ON c.concert_id = s.singer_id", "joins_follow_schema_graph",
             False, "join_of_unrelated_keys_is_an_error"),
            ("SELECT count(*) FROM singer ORDER BY count(*) DESC LIMIT 1", "order_limit_meaningful", False,
             "order_by_limit_on_a_one_row_aggregate_is_an_error"),
            ("SELECT country, count(*) FROM singer GROUP BY country ORDER BY count(*) DESC LIMIT 1",
             "order_limit_meaningful", True, "order_by_limit_on_groups_passes"),
            ("SELECT avg(s.age) FROM singer s JOIN singer_in_concert sc ON sc.singer_id = s.singer_id",
             "aggregate_not_repeated", False, "average_over_the_one_side_of_a_join_is_an_error"),
            ("SELECT sum(st.capacity) FROM stadium st JOIN concert c ON c.stadium_id = st.stadium_id "
             "WHERE c.year = '2014'", "aggregate_not_repeated", False, "sum_over_the_one_side_of_a_join_is_an_error"),
            ("SELECT avg(age) FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert)",
             "aggregate_not_repeated", True, "average_filtered_by_in_passes"),
            ("SELECT sum(DISTINCT s.age), max(s.age) FROM singer s JOIN singer_in_concert sc "
             "ON sc.singer_id = s.singer_id", "aggregate_not_repeated", True, "distinct_sum_and_max_over_a_join_pass"),
            ("SELECT count(*) FROM singer WHERE country = 'France' INTERSECT "
             "SELECT count(*) FROM singer WHERE age > 30", "set_operands_not_aggregates", False,
             "intersect_of_counts_is_an_error"),
            ("SELECT name FROM singer WHERE country = 'France' INTERSECT SELECT name FROM singer WHERE age > 30",
             "set_operands_not_aggregates", True, "intersect_of_rows_passes"),
            ("SELECT count(*) FROM (SELECT name FROM singer WHERE country = 'France' INTERSECT "
             "SELECT name FROM singer WHERE age > 30)", "set_operands_not_aggregates", True,
             "count_of_an_intersect_passes"),
            ("SELECT avg(DISTINCT name) FROM singer", "aggregate_of_numbers", False, "average_of_names_is_an_error"),
            ("SELECT sum(song_release_year) FROM singer", "aggregate_of_numbers", True,
             "sum_of_text_holding_numbers_passes"),
            ("SELECT sum(length(name)) FROM singer", "aggregate_of_numbers", True,
             "sum_of_an_expression_over_text_is_not_judged"),
        ]
        for sql, check, ok, name in cases:
            c = verdict(svc, sql)
            tap.ok(is_(c, check, ok), name, diag=json.dumps(c.get(check)))
        c = verdict(svc, "SELECT count(*) FROM singer WHERE country = 'Italy'")
        tap.ok("'Italy' is not a stored value" in c.get("first_value_meaningful", {}).get("detail", ""),
               "zero_count_names_the_unstored_literal", diag=json.dumps(c.get("first_value_meaningful")))
        shapes = [  # (question, sql, check, ok, name): the result's shape against the statement and the question
            ("Which singers performed in a concert?", "SELECT s.name FROM singer s JOIN singer_in_concert sc "
             "ON sc.singer_id = s.singer_id", "rows_not_repeated", False, "join_repeating_rows_is_an_error"),
            ("Which singers performed in a concert?", "SELECT DISTINCT s.name FROM singer s JOIN singer_in_concert "
             "sc ON sc.singer_id = s.singer_id", "rows_not_repeated", None, "distinct_join_is_not_judged"),
            ("What are the singers' countries?", "SELECT country FROM singer", "rows_not_repeated", None,
             "repeated_values_of_one_table_are_not_judged"),
            ("In which years did the stadiums hold concerts?", "SELECT c.year FROM stadium st JOIN concert c "
             "ON c.stadium_id = st.stadium_id", "rows_not_repeated", None,
             "repeats_on_the_many_side_of_a_join_are_not_judged"),
            ("Which concerts had singers?", "SELECT concert_id FROM singer_in_concert", "references_not_repeated",
             False, "repeated_foreign_keys_of_one_table_are_an_error"),
            ("Which concerts had singers?", "SELECT DISTINCT concert_id FROM singer_in_concert",
             "references_not_repeated", None, "distinct_foreign_keys_are_not_judged"),
            ("Which stadium holds the concert Auditions?", "SELECT stadium_id FROM concert "
             "WHERE concert_name = 'Auditions'", "references_not_repeated", True, "foreign_keys_without_repeats_pass"),
            ("What are the concerts' years?", "SELECT year FROM concert", "references_not_repeated", None,
             "repeated_plain_values_are_not_judged_as_references"),
            ("How many years did the singers release songs in?", "SELECT song_release_year FROM singer",
             "count_answered_by_one_row", False, "how_many_answered_by_a_list_is_an_error"),
            ("How many singers are there?", "SELECT count(*) FROM singer", "count_answered_by_one_row", True,
             "how_many_answered_by_a_count_passes"),
            ("How many singers are from each country?", "SELECT country, count(*) FROM singer GROUP BY country",
             "count_answered_by_one_row", None, "how_many_per_group_is_not_judged"),
            ("What is the average age of singers for each country?", "SELECT avg(age) FROM singer",
             "each_answered_per_group", False, "each_answered_by_one_row_is_an_error"),
            ("What is the average age of singers for each country?",
             "SELECT country, avg(age) FROM singer GROUP BY country", "each_answered_per_group", None,
             "each_answered_by_groups_is_not_judged"),
            ("What is the average age of all singers?", "SELECT avg(age) FROM singer", "each_answered_per_group",
             None, "no_each_in_the_question_is_not_judged"),
            ("How many singers does each country have?", "SELECT count(*) FROM singer GROUP BY country",
             "groups_named", False, "counts_per_group_without_the_group_are_an_error"),
            ("How many singers does each country have?", "SELECT country, count(*) FROM singer GROUP BY country",
             "groups_named", True, "counts_per_group_with_the_group_pass"),
            ("How many singers does France have?", "SELECT count(*) FROM singer WHERE country = 'France' "
             "GROUP BY country", "groups_named", True, "one_group_without_its_name_passes"),
            ("What is the average age of the singers?", "SELECT max(age) FROM singer", "average_computed", False,
             "average_asked_without_avg_is_an_error"),
            ("What is the average age of the singers?", "SELECT avg(age) FROM singer", "average_computed", True,
             "average_asked_with_avg_passes"),
            ("Which singers are older than the mean age?", "SELECT name FROM singer WHERE age > "
             "(SELECT avg(age) FROM singer)", "average_computed", True, "avg_in_a_subquery_passes"),
            ("What is the average attendance of Stark's Park?", "SELECT average FROM stadium "
             "WHERE name = 'Stark''s Park'", "average_computed", True, "a_column_named_average_passes"),
            ("What are the singers' names?", "SELECT name FROM singer", "average_computed", None,
             "no_average_asked_is_not_judged"),
            ("Which singer has the highest net worth?", "SELECT name FROM singer ORDER BY net_worth_millions "
             "LIMIT 1", "order_direction_asked", False, "highest_answered_by_ascending_limit_is_an_error"),
            ("Which singer has the highest net worth?", "SELECT name FROM singer ORDER BY net_worth_millions "
             "DESC LIMIT 1", "order_direction_asked", True, "highest_answered_by_descending_limit_passes"),
            ("Which country has the fewest singers?", "SELECT country FROM singer GROUP BY country "
             "ORDER BY count(*) DESC LIMIT 1", "order_direction_asked", False,
             "fewest_answered_by_descending_limit_is_an_error"),
            ("Which concerts were held in the smallest stadium?", "SELECT concert_name FROM concert WHERE "
             "stadium_id = (SELECT stadium_id FROM stadium ORDER BY capacity DESC LIMIT 1)", "order_direction_asked",
             False, "direction_of_a_subquery_limit_is_judged"),
            ("Which singer worth at least 10 million is youngest?", "SELECT name FROM singer WHERE "
             "net_worth_millions >= 10 ORDER BY age DESC LIMIT 1", "order_direction_asked", None,
             "at_least_is_a_bound_not_a_direction"),
            ("List the singers from the highest net worth down.", "SELECT name FROM singer "
             "ORDER BY net_worth_millions", "order_direction_asked", None, "order_without_limit_is_not_judged"),
            ("List the singers in descending order of age.", "SELECT name FROM singer ORDER BY age",
             "order_direction_asked", False, "descending_asked_sorted_ascending_is_an_error"),
            ("List the singers in descending order of age.", "SELECT name FROM singer ORDER BY age DESC",
             "order_direction_asked", True, "descending_asked_sorted_descending_passes"),
            ("List the singers from low to high net worth.", "SELECT name FROM singer ORDER BY "
             "net_worth_millions DESC", "order_direction_asked", False, "low_to_high_sorted_descending_is_an_error"),
            ("List the singers by age.", "SELECT name FROM singer ORDER BY age DESC", "order_direction_asked", None,
             "no_direction_asked_is_not_judged"),
        ]
        for question, sql, check, ok, name in shapes:
            stub.rules([], default_content="```sql\n%s\n```" % sql)
            r = ask(svc, question=question, options={"max_rounds": 0})
            c = {c["check"]: c for c in (r.json or {}).get("validation", [])}
            tap.ok(check not in c if ok is None else is_(c, check, ok), name, diag=json.dumps(c.get(check)))


def part_model_faults(stub):
    cfg = config(stub)
    cfg["models"]["generate"].update({"retries": 1, "timeout_ms": 800,
                                      "breaker": {"failures": 2, "cooldown_ms": 1500}})
    with fixtures.serving(tap, cfg, "faults_service_exits_0") as svc:
        stub.rules([{"respond": {"status": 429, "retry_after": 0, "times": 1}},
                    chat("```sql\nSELECT count(*) FROM stadium\n```")])
        r = ask(svc, question="How many stadiums?")
        calls = (r.json or {}).get("trace", {}).get("model_calls", [])
        tap.eq((r.status, (r.json or {}).get("rows")), (200, [[3]]), "429_then_success")
        tap.eq([c.get("attempts") for c in calls], [2], "429_retried_inside_one_call")
        stub.rules([{"respond": {"hang": True}}])
        t0 = time.monotonic()
        r = ask(svc, question="How many stadiums?", options={"timeout_ms": 5000, "generator": "model"})
        tap.ok(fixtures.is_problem(r, 504, "upstream-timeout"), "hanging_model_is_504_upstream_timeout",
               diag=r.text[:400])
        tap.ok(time.monotonic() - t0 < 4.5, "hang_ends_within_the_model_timeout_and_retries")
        # That was two failed calls in a row?  One (with its retry): fail once more to open the breaker.
        stub.rules([{"respond": {"status": 500}}])
        r = ask(svc, question="How many stadiums?", options={"generator": "model"})
        tap.ok(fixtures.is_problem(r, 502, "upstream-error"), "server_error_is_502", diag=r.text[:300])
        n_before = len(stub.requests())
        r = ask(svc, question="How many stadiums?", options={"generator": "model"})
        tap.ok(fixtures.is_problem(r, 503, "unavailable") and "breaker" in r.json.get("detail", ""),
               "open_breaker_is_503_naming_the_breaker", diag=r.text[:300])
        tap.eq(len(stub.requests()), n_before, "open_breaker_does_not_call_the_model")
        m = svc.request("GET", "/metrics").text
        tap.ok('text2sqld_model_breaker_state{stage="generate",endpoint="primary"} 1' in m,
               "metrics_show_the_breaker_open")
        ready = svc.request("GET", "/readyz").json or {}
        tap.eq(ready.get("checks", {}).get("generation", {}).get("breakers", {}).get("generate", {}).get("primary"),
               "open", "readyz_shows_the_breaker_open")
        tap.eq(ready.get("status"), "degraded", "readyz_is_degraded_while_generation_is_down")
        time.sleep(1.7)
        stub.rules([chat("```sql\nSELECT count(*) FROM stadium\n```")])
        r = ask(svc, question="How many stadiums?")
        tap.eq((r.status, (r.json or {}).get("rows")), (200, [[3]]), "breaker_recovers_after_cooldown")
        m = svc.request("GET", "/metrics").text
        tap.ok('text2sqld_model_breaker_state{stage="generate",endpoint="primary"} 0' in m,
               "metrics_show_the_breaker_closed_again")


def part_fallback(stub):
    fallback = fixtures.ModelStub()
    try:
        stub.rules([{"respond": {"status": 503}}])
        fallback.rules([chat("```sql\nSELECT count(*) FROM concert\n```")])
        cfg = config(stub)
        cfg["models"]["generate"]["fallback"] = {"base_url": fallback.base_url, "model": "small", "retries": 0}
        with fixtures.serving(tap, cfg, "fallback_service_exits_0") as svc:
            r = ask(svc, question="How many concerts?")
            j = r.json or {}
            tap.eq((r.status, j.get("rows")), (200, [[3]]), "fallback_endpoint_answers")
            tap.eq([c["endpoint"] for c in j.get("trace", {}).get("model_calls", [])], ["primary", "fallback"],
                   "trace_shows_primary_then_fallback")
            tap.eq(len(fallback.requests()), 1, "fallback_was_called_once")
            tap.ok(fallback.requests()[0]["body"]["model"] == "small", "fallback_gets_its_own_model_name")
    finally:
        fallback.close()


def part_candidate_models(stub):
    """models.generate_candidates: candidate k goes to endpoint k % n, each with its model name."""
    second = fixtures.ModelStub()
    try:
        stub.rules([], default_content="```sql\nSELECT name FROM singer WHERE country = 'France'\n```")
        second.rules([], default_content="```sql\nSELECT name FROM singer WHERE age > 40\n```")
        cfg = config(stub, generate={"adaptive_sampling": False})  # each endpoint's turn is what is checked
        cfg["models"]["generate_candidates"] = [{"base_url": stub.base_url, "model": "first", "retries": 0},
                                                {"base_url": second.base_url, "model": "second", "retries": 0}]
        with fixtures.serving(tap, cfg, "candidate_models_service_exits_0") as svc:
            r = ask(svc, question="Which singers are from France?", options={"candidates": 3, "max_rounds": 0})
            j = r.json or {}
            tap.ok(r.status == 200, "candidate_models_answer", diag=r.text[:400])
            cands = j.get("candidates", [])
            tap.eq([("France" in (c.get("sql") or ""), "age" in (c.get("sql") or "")) for c in cands],
                   [(True, False), (False, True), (True, False)],
                   "candidate_0_and_2_from_the_first_endpoint_candidate_1_from_the_second")
            tap.eq([q["body"]["model"] for q in stub.requests()], ["first", "first"],
                   "first_endpoint_gets_its_own_model_name_twice")
            tap.eq([q["body"]["model"] for q in second.requests()], ["second"], "second_endpoint_asked_once")
            tap.eq([c.get("chosen") for c in cands], [True, False, False], "the_agreeing_pair_wins_candidate_0")
            tap.ok(all(isinstance(c.get("consensus"), (int, float)) and c.get("weight") == 1 for c in cands)
                   and cands[0]["consensus"] > cands[1]["consensus"],
                   "candidates_carry_consensus_and_weight", diag=json.dumps(cands)[:600])
            tap.eq(j.get("rows"), [["Justin Brown"], ["Rose White"]], "the_chosen_candidates_rows")
            stub.rules([], default_content="```sql\nSELECT name FROM singer ORDER BY age\n```")
            second.rules([], default_content="```sql\nSELECT name FROM singer ORDER BY age DESC\n```")
            r = ask(svc, question="List the singers by age.", options={"candidates": 3, "max_rounds": 0})
            cands = (r.json or {}).get("candidates", [])
            tap.eq([c.get("votes") for c in cands], [2, 1, 2], "sorted_results_in_another_order_are_another_answer")
    finally:
        second.close()


def part_history_evidence_budget(stub):
    stub.rules([], default_content="```sql\nSELECT name FROM singer WHERE country = 'France' AND age > 30\n```")
    with fixtures.serving(tap, config(stub), "history_service_exits_0") as svc:
        r = ask(svc, question="and only those older than 30?",
                history=[{"question": "Which singers are from France?",
                          "sql": "SELECT name FROM singer WHERE country = 'France'"}],
                evidence="older refers to age")
        tap.eq((r.status, (r.json or {}).get("rows")), (200, [["Rose White"]]), "follow_up_answers")
        prompt = "\n".join(user_messages(stub.requests()[0]))
        tap.ok("Conversation so far" in prompt and "SELECT name FROM singer WHERE country = 'France';" in prompt,
               "history_turns_are_in_the_prompt", diag=prompt[-1500:])
        tap.ok("- older refers to age" in prompt, "user_evidence_is_in_the_prompt")
        tap.ok("age INTEGER" in prompt, "user_evidence_links_the_column_it_names", diag=prompt[:1500])
        fill = (r.json or {}).get("trace", {}).get("link", {}).get("fill", {})
        tap.ok(fill.get("budget_tokens") == 600, "link_fill_budget_is_link_budget_tokens_without_context_tokens",
               diag=json.dumps(fill))
        bad = ask(svc, question="x", history=[{"question": "q"}])
        tap.ok(fixtures.is_problem(bad, 400, "invalid-request") and "history[0].sql" in bad.json.get("detail", ""),
               "history_turn_without_sql_is_400_naming_it", diag=bad.text[:300])
    cfg = config(stub)
    cfg["models"]["generate"]["context_tokens"] = 330
    cfg["models"]["generate"]["max_tokens"] = 64
    stub.rules([], default_content="```sql\nSELECT count(*) FROM singer_in_concert\n```")
    with fixtures.serving(tap, cfg, "budget_service_exits_0") as svc:
        r = ask(svc, question="For each concert name, list the names, countries, ages and songs of its singers "
                              "and the stadium location and capacity")
        p = (r.json or {}).get("trace", {}).get("prompt", {})
        prompt = "\n".join(user_messages(stub.requests()[0])) if stub.requests() else ""
        tap.ok(p.get("shown", {}).get("columns_dropped", 0) > 0, "over_budget_columns_are_dropped",
               diag=json.dumps(p.get("shown")))
        tap.ok("concert_id INTEGER" in prompt and "singer_id INTEGER" in prompt and "stadium_id INTEGER" in prompt,
               "join_keys_survive_trimming", diag=prompt[:2000])
        fill = (r.json or {}).get("trace", {}).get("link", {}).get("fill", {})
        tap.ok(fill.get("budget_tokens") == 82, "link_fill_budget_is_a_quarter_of_the_generate_context",
               diag=json.dumps(fill))


def part_profiles_options_cache(stub):
    cfg = config(stub)
    cfg["models"]["generate"]["profile"] = "lite-sql"
    stub.rules([], default_content="SELECT count(*) FROM singer")
    with fixtures.serving(tap, cfg, "lite_service_exits_0") as svc:
        r = ask(svc, question="How many singers?")
        reqs = stub.requests()
        msgs = reqs[0]["body"]["messages"] if reqs else []
        tap.eq([m["role"] for m in msgs], ["user"], "lite_sql_sends_one_user_message")
        text = msgs[0]["content"] if msgs else ""
        tap.ok(text.startswith("### Question\nHow many singers?\n### Database\n-- Tables and Columns\n")
               and "-- Foreign Keys" in text and "-- Evidence" in text and "singer.singer_id = {INTEGER, primary_key"
               in text, "lite_sql_prompt_has_the_trained_format", diag=text[:1200])
        tap.eq(r.status, 200, "lite_sql_bare_answer_accepted")
    # Every candidate asked is drawn (adaptive sampling off): the vote over all three is what is checked.
    cfg = config(stub, generate={"cache_ttl_s": 60, "adaptive_sampling": False})
    stub.rules([], default_content="SELECT count(*) FROM singer")
    with fixtures.serving(tap, cfg, "options_service_exits_0") as svc:
        for opts, field in [({"temperature": 1}, "options.temperature"), ({"max_rounds": 99}, "options.max_rounds"),
                            ({"candidates": 0}, "options.candidates"), ({"max_rows": 0}, "options.max_rows")]:
            r = ask(svc, question="How many singers?", options=opts)
            tap.ok(fixtures.is_problem(r, 400, "invalid-request") and field in r.json.get("detail", ""),
                   "bad_option_is_400_naming_it: " + field, diag=r.text[:300])
        r = ask(svc, question="How many singers?", extra=1)
        tap.ok(fixtures.is_problem(r, 400, "invalid-request") and "extra" in r.json.get("detail", ""),
               "unknown_field_is_400_naming_it")
        first = ask(svc, question="How many singers are there?")
        second = ask(svc, question="How many singers are there?")
        tap.eq(((first.json or {}).get("cached"), (second.json or {}).get("cached")), (False, True),
               "identical_request_is_answered_from_the_cache")
        tap.eq((second.json or {}).get("rows"), [[4]], "cached_answer_has_the_rows")
        fj, sj = first.json or {}, second.json or {}
        tap.ok(isinstance(fj.get("score"), int) and fj.get("row_count") == 1
               and (sj.get("score"), sj.get("row_count")) == (fj.get("score"), fj.get("row_count")),
               "cached_answer_has_the_fresh_answers_score_and_row_count",
               diag=repr([(j.get("score"), j.get("row_count")) for j in (fj, sj)]))
        tap.eq(len(stub.requests()), 1, "cached_answer_did_not_call_the_model")
        third = ask(svc, path="/generate", question="How many singers are there?")
        tap.eq((third.json or {}).get("cached"), False, "generate_and_query_are_cached_apart")
        stub.rules([], default_content="SELECT name FROM singer ORDER BY name")
        r = ask(svc, question="List every singer", options={"max_rows": 2, "candidates": 3})
        j = r.json or {}
        tap.eq((j.get("row_count"), j.get("truncated")), (2, True), "options_max_rows_caps_the_rows")
        tap.eq([c.get("votes") for c in j.get("candidates", [])], [3, 3, 3],
               "candidates_are_sampled_and_voted_by_result")
        tap.eq(len(stub.requests()), 3, "each_candidate_is_one_model_call")


def part_shared_answer_cache(stub):
    url = os.environ.get("T2S_TEST_REDIS_URL")
    if not url:
        tap.skip("answer_cache_shared_through_redis", "T2S_TEST_REDIS_URL is not set")
        return
    stub.rules([], default_content="SELECT count(*) FROM concert")
    question = "How many concerts are there? (redis %d)" % time.monotonic_ns()
    # Replicas share answers when they share the cache's MAC secret (cache.secret_env).
    env = {"T2S_TEST_CACHE_SECRET": "a-shared-secret-of-at-least-32-characters"}
    cfg_a = config(stub, generate={"cache_ttl_s": 60}, redis={"url": url}, cache={"secret_env": "T2S_TEST_CACHE_SECRET"})
    cfg_b = config(stub, generate={"cache_ttl_s": 60}, redis={"url": url}, cache={"secret_env": "T2S_TEST_CACHE_SECRET"})
    with fixtures.serving(tap, cfg_a, "redis_cache_first_service_exits_0", env=env) as a:
        r = ask(a, question=question)
        tap.eq(((r.json or {}).get("cached"), (r.json or {}).get("rows")), (False, [[3]]), "first_replica_answers")
    with fixtures.serving(tap, cfg_b, "redis_cache_second_service_exits_0", env=env) as b:
        r = ask(b, question=question)
        tap.eq(((r.json or {}).get("cached"), (r.json or {}).get("rows")), (True, [[3]]),
               "second_replica_answers_from_the_shared_cache")
    tap.eq(len(stub.requests()), 1, "shared_cache_means_one_model_call")


def part_no_model():
    with fixtures.serving(tap, config(None), "no_model_service_exits_0") as svc:
        r = ask(svc, question="How many singers?", options={"generator": "model"})
        tap.ok(fixtures.is_problem(r, 422, "generation-unavailable") and r.headers.get("Retry-After") is None,
               "no_generate_model_is_422_generation_unavailable", diag=r.text[:300])
        r = ask(svc, question="Which singers sang the saddest songs?")
        tap.ok(fixtures.is_problem(r, 422, "builtin-refused") and "built-in" in r.json.get("detail", "")
               and (r.json.get("builtin") or {}).get("refusal") and r.headers.get("Retry-After") is None,
               "no_generate_model_and_builtin_refusal_is_422_with_its_reason", diag=r.text[:300])
        ready = svc.request("GET", "/readyz").json or {}
        tap.eq(ready.get("checks", {}).get("generation", {}).get("status"), "builtin_only",
               "readyz_reports_builtin_only")
        tap.eq(ready.get("status"), "ready", "readyz_stays_ready_without_a_generate_model")


def part_spider_sqlite(stub):
    path = t2s.spider_db_path("concert_singer")
    if not path or not os.path.exists(path):
        tap.skip("spider_sqlite_generation", "../shared/datasets is not present")
        return
    before = t2s.sqlite_checksum(path)
    cfg = config(stub)
    cfg["databases"] = [{"name": "concert_singer", "url": "sqlite://" + path}]
    stub.rules([{"match": {"contains": "no such column"}, "respond": {"content":
                 "```sql\nSELECT avg(Age), min(Age), max(Age) FROM singer WHERE Country = 'France'\n```"}}],
               default_content="```sql\nSELECT avg(age), min(age), max(age) FROM singer WHERE nationality = 'France'\n```")
    with fixtures.serving(tap, cfg, "spider_sqlite_service_exits_0") as svc:
        tap.ok(wait_values(svc, "concert_singer"), "spider_sqlite_value_index_ready")
        r = ask(svc, database="concert_singer",
                question="What is the average, minimum, and maximum age of all singers from France?")
        j = r.json or {}
        tap.eq((r.status, j.get("rows")), (200, [[34.5, 25, 43]]), "spider_sqlite_question_corrected_and_answered")
        prompt = "\n".join(user_messages(stub.requests()[0])) if stub.requests() else ""
        tap.ok("CREATE TABLE singer (" in prompt and "Country" in prompt and "'France'" in prompt,
               "spider_sqlite_prompt_has_the_linked_table_and_the_stored_value", diag=prompt[:1500])
    tap.eq(t2s.sqlite_checksum(path), before, "spider_sqlite_file_unchanged")


def part_postgres(stub):
    if not fixtures.have_pg() or "concert_singer" not in os.environ.get("T2S_TEST_PG_SPIDER_DBS", "").split():
        tap.skip("postgres_generation", "PostgreSQL with Spider's concert_singer is not available")
        return
    before = t2s.pg_checksum("concert_singer")
    cfg = config(stub)
    cfg["databases"] = [{"name": "cs_pg", "url": t2s.pg_url("concert_singer")}]
    with fixtures.serving(tap, cfg, "postgres_service_exits_0") as svc:
        stub.rules([{"match": {"contains": "does not exist"}, "respond": {"content":
                     '```sql\nSELECT count(*) FROM singer WHERE "Country" = \'France\'\n```'}}],
                   default_content="```sql\nSELECT count(*) FROM singer WHERE Country = 'France'\n```")
        r = ask(svc, database="cs_pg", question="How many singers are from France?")
        j = r.json or {}
        tap.eq((r.status, j.get("dialect"), j.get("rows")), (200, "postgresql", [[4]]),
               "postgres_wrong_case_column_corrected_and_executed")
        prompt = "\n".join(user_messages(stub.requests()[0])) if stub.requests() else ""
        tap.ok('"Country"' in prompt and "PostgreSQL" in prompt, "postgres_prompt_quotes_mixed_case_columns",
               diag=prompt[:1200])
        for sql in ["DROP TABLE singer", "DELETE FROM singer",
                    "WITH gone AS (DELETE FROM singer RETURNING *) SELECT * FROM gone",
                    "SELECT 1; UPDATE singer SET \"Name\" = 'x'"]:
            stub.rules([], default_content="```sql\n%s\n```" % sql)
            r = ask(svc, database="cs_pg", question="Remove the singers", options={"max_rounds": 0})
            tap.ok(fixtures.is_problem(r, 422, "generation-failed"), "postgres_write_is_422: " + sql[:30],
                   diag=r.text[:300])
    tap.eq(t2s.pg_checksum("concert_singer"), before, "postgres_data_unchanged")


def main():
    stub = fixtures.ModelStub()
    try:
        for part in (part_correct_answer, part_traceparent_forwarded, part_wrong_column_corrected, part_widening, part_join_replanned,
                     part_writes_never_run,
                     part_reply_shapes, part_unanswerable, part_padded_literal, part_empty_result_and_repeat, part_repeated_rows_repaired,
                     part_stored_spelling_repaired, part_confirm,
                     part_result_sanity_and_checks,
                     part_model_faults, part_fallback, part_candidate_models,
                     part_history_evidence_budget, part_profiles_options_cache, part_shared_answer_cache,
                     part_spider_sqlite, part_postgres):
            try:
                part(stub)
            except Exception as e:  # a part that crashes is a failure, the others still run
                tap.ok(False, part.__name__ + "_ran_without_exception", diag=repr(e))
        part_no_model()
    finally:
        stub.close()


if __name__ == "__main__":
    sys.exit(fixtures.run_with_binary(tap, "generate_tests", main))
