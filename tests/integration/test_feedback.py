#!/usr/bin/env python3
"""test_feedback.py - POST /feedback, GET /feedback, GET /feedback/{id}.

A verdict `correct: true` is validated like a stored example and becomes
one (an identical pair is stored once), which /evidence lists for a similar
question and generation puts into its prompt (the generate model is
tests/stub/model_stub.py); a SQL that does not validate is refused and
nothing is stored.  A wrong verdict is kept with its note for review
(`GET /feedback?correct=false`) and never becomes an example.  Counters in
/metrics; feedback survives a restart; an API key limited to some databases
sees only their feedback; a key without the scope admin may send a wrong
verdict but not a correct one (which stores an example) nor list feedback.  Runs on the SQLite state store, and on the
PostgreSQL one when T2S_TEST_PG_* is set.

Bounds (issue 19, "list amplification"): list pages of many large entries
stay under limits.max_list_page_bytes, say `truncated` and page on with
`next_offset` until every entry was seen once; state.max_feedback_per_database
and state.max_examples_per_database refuse the entry past them with 409
quota-exceeded, storing nothing.
"""

import hashlib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-feedback-test-")
CLEAN_ENV = {"TEXT2SQLD_LISTEN_HOST": None, "TEXT2SQLD_LISTEN_PORT": None, "TEXT2SQLD_REDIS_URL": None}
DB = fixtures.write_sqlite(os.path.join(TMP, "music.sqlite"), """
    CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
    CREATE TABLE concert (id INTEGER PRIMARY KEY, singer_id INTEGER REFERENCES singer(id), year INTEGER);
    INSERT INTO singer VALUES (1, 'Ann', 'France', 30), (2, 'Bob', 'Peru', 41);
    INSERT INTO concert VALUES (1, 1, 2014), (2, 2, 2015);
""")
OTHER = fixtures.write_sqlite(os.path.join(TMP, "other.sqlite"), "CREATE TABLE t (x INTEGER)")
KEY = "feedback-key-%d" % os.getpid()
GOOD_Q = "Which singers held concerts after 2014?"
GOOD_SQL = "SELECT DISTINCT s.name FROM singer s JOIN concert c ON c.singer_id = s.id WHERE c.year > 2014"


def metric(svc, name, labels=""):
    text = svc.request("GET", "/metrics").text
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else 0.0


def flow(state_url, name):
    stub = fixtures.ModelStub()
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": "```sql\nSELECT name FROM singer\n```"}}])
    cfg = {"databases": [{"name": "music", "url": "sqlite://" + DB}, {"name": "other", "url": "sqlite://" + OTHER}],
           "state": {"url": state_url},
           "models": {"generate": {"base_url": stub.base_url, "model": "gen", "retries": 0}},
           "generate": {"cache_ttl_s": 0}, "auth": {"allow_anonymous_writes": True}}
    svc = t2s.Service(cfg, env=CLEAN_ENV).start()
    try:
        fb = {"database": "music", "question": GOOD_Q, "sql": GOOD_SQL, "correct": True}
        r = svc.request("POST", "/feedback", json=fb)
        first = r.json or {}
        tap.ok(r.status == 201 and first.get("correct") is True and isinstance(first.get("example_id"), int),
               name + "correct_feedback_is_stored_with_its_example", diag=r.text[:400])
        tap.eq(r.headers.get("Location"), "/feedback/%s" % first.get("id"), name + "correct_feedback_location")
        r = svc.request("GET", "/databases/music/examples/%s" % first.get("example_id"))
        tap.eq(((r.json or {}).get("question"), (r.json or {}).get("sql")), (GOOD_Q, GOOD_SQL),
               name + "the_example_holds_the_question_and_sql")
        r = svc.request("POST", "/feedback", json=dict(fb, note="again"))
        tap.eq((r.json or {}).get("example_id"), first.get("example_id"), name + "identical_confirmation_reuses_the_example")
        r = svc.request("GET", "/databases/music/examples")
        tap.eq([(e.get("question"), e.get("sql")) for e in (r.json or {}).get("examples", [])], [(GOOD_Q, GOOD_SQL)],
               name + "one_example_for_two_confirmations")

        r = svc.request("POST", "/evidence", json={"database": "music", "question": "Which singers had concerts after 2013?"})
        tap.ok(any(e.get("sql") == GOOD_SQL for e in (r.json or {}).get("examples", [])),
               name + "evidence_shows_the_confirmed_example_for_a_similar_question", diag=r.text[:600])
        r = svc.request("POST", "/generate", json={"database": "music", "question": "Which singers had concerts after 2013?"},
                        timeout=60)
        prompt = "\n".join(m.get("content", "") for m in (((r.json or {}).get("trace") or {}).get("prompt") or {}).get("messages", []))
        sent = "\n".join(str(q.get("body")) for q in stub.requests())
        tap.ok(r.status == 200 and GOOD_SQL in prompt and GOOD_SQL in sent,
               name + "generation_prompt_shows_the_confirmed_example", diag=r.text[:600])

        wrong = {"database": "music", "question": "How old is the oldest singer?", "sql": "SELECT age FROM singer LIMIT 1",
                 "correct": False, "note": "should be max(age)"}
        r = svc.request("POST", "/feedback", json=wrong)
        wid = (r.json or {}).get("id")
        tap.ok(r.status == 201 and (r.json or {}).get("example_id") is None and (r.json or {}).get("note") == wrong["note"],
               name + "wrong_feedback_is_kept_with_its_note_and_no_example", diag=r.text[:400])
        r = svc.request("POST", "/feedback", json={"database": "music", "question": "q", "sql": "not even sql", "correct": False})
        tap.eq(r.status, 201, name + "wrong_feedback_sql_is_not_validated")
        r = svc.request("GET", "/feedback?correct=false&database=music")
        tap.eq([f.get("id") for f in (r.json or {}).get("feedback", [])][:1], [wid], name + "review_list_holds_wrong_feedback")
        tap.ok(all(f.get("correct") is False for f in (r.json or {}).get("feedback", [])) and (r.json or {}).get("total") == 2,
               name + "review_list_filters_by_verdict", diag=r.text[:400])
        r = svc.request("GET", "/databases/music/examples")
        tap.eq((r.json or {}).get("total"), 1, name + "wrong_feedback_adds_no_example")

        before = svc.request("GET", "/feedback").json.get("total")
        for sql, status, slug in (("SELECT * FROM nosuch", 400, "sql-invalid"), ("DROP TABLE singer", 403, "sql-rejected"),
                                  ("SELECT 1; SELECT 2", 403, "sql-rejected")):
            r = svc.request("POST", "/feedback", json={"database": "music", "question": "q", "sql": sql, "correct": True})
            tap.ok(fixtures.is_problem(r, status, slug), name + "correct_feedback_validates_sql_" + slug.replace("-", "_"),
                   diag=r.text[:300])
        tap.eq(svc.request("GET", "/feedback").json.get("total"), before, name + "refused_feedback_stores_nothing")
        r = svc.request("POST", "/feedback", json={"database": "music", "question": "q", "sql": "SELECT 1", "correct": "yes"})
        tap.ok(fixtures.is_problem(r, 400, "invalid-request") and "correct" in (r.json or {}).get("detail", ""),
               name + "correct_must_be_a_boolean", diag=r.text[:300])
        tap.eq((metric(svc, "text2sqld_feedback_total", '{verdict="correct"}'),
                metric(svc, "text2sqld_feedback_total", '{verdict="wrong"}'),
                metric(svc, "text2sqld_feedback_rejected_total")), (2.0, 2.0, 3.0), name + "metrics_count_verdicts_and_rejections")
        svc.stop()
        svc.close()
        svc = t2s.Service(cfg, env=CLEAN_ENV).start()
        r = svc.request("GET", "/feedback/%s" % wid)
        tap.eq((r.status, (r.json or {}).get("note")), (200, wrong["note"]), name + "feedback_survives_a_restart")
    finally:
        fixtures.stop_ok(tap, svc, name + "service_exits_0")
        svc.close()
        stub.close()


def test_auth():
    cfg = {"databases": [{"name": "music", "url": "sqlite://" + DB}, {"name": "other", "url": "sqlite://" + OTHER}],
           "state": {"url": "sqlite://" + os.path.join(TMP, "auth-state.sqlite")},
           "auth": {"api_keys": [{"name": "music-only", "key_sha256": hashlib.sha256(KEY.encode()).hexdigest(),
                                  "databases": ["music"], "scopes": ["query", "admin"]},
                                 {"name": "all", "key_sha256": hashlib.sha256((KEY + "all").encode()).hexdigest(),
                                  "databases": ["*"], "scopes": ["query", "admin"]},
                                 {"name": "music-reader", "key_sha256": hashlib.sha256((KEY + "q").encode()).hexdigest(),
                                  "databases": ["music"]}]}}
    limited, admin = {"Authorization": "Bearer " + KEY}, {"Authorization": "Bearer " + KEY + "all"}
    reader = {"Authorization": "Bearer " + KEY + "q"}
    with t2s.Service(cfg, env=CLEAN_ENV) as svc:
        r = svc.request("POST", "/feedback", json={"database": "other", "question": "q", "sql": "SELECT 1", "correct": False},
                        headers=admin)
        other_id = (r.json or {}).get("id")
        r = svc.request("POST", "/feedback", json={"database": "other", "question": "q", "sql": "SELECT 1", "correct": False},
                        headers=limited)
        # A key is told nothing of databases it may not see: 404, as for a missing one.
        tap.ok(fixtures.is_problem(r, 404, "not-found"), "feedback_for_another_database_is_404", diag=r.text[:300])
        r = svc.request("POST", "/feedback", json={"database": "music", "question": "q", "sql": "SELECT 1", "correct": False})
        tap.ok(fixtures.is_problem(r, 401, "unauthorized"), "feedback_needs_a_key")
        r = svc.request("GET", "/feedback", headers=limited)
        tap.ok(fixtures.is_problem(r, 400, "invalid-request") and "database" in (r.json or {}).get("detail", ""),
               "limited_key_must_name_a_database", diag=r.text[:300])
        r = svc.request("GET", "/feedback?database=other", headers=limited)
        tap.ok(fixtures.is_problem(r, 404, "not-found"), "limited_key_cannot_list_another_databases_feedback",
               diag=r.text[:300])
        r = svc.request("GET", "/feedback/%s" % other_id, headers=limited)
        tap.ok(fixtures.is_problem(r, 404, "not-found"), "limited_key_does_not_see_another_databases_item", diag=r.text[:300])
        r = svc.request("GET", "/feedback", headers=admin)
        tap.eq((r.status, (r.json or {}).get("total")), (200, 1), "all_databases_key_lists_every_database")

        # Scopes: a query key says an answer was wrong, but a correct verdict stores an example (admin).
        wrong = {"database": "music", "question": GOOD_Q, "sql": GOOD_SQL, "correct": False}
        r = svc.request("POST", "/feedback", json=wrong, headers=reader)
        tap.ok(r.status == 201 and (r.json or {}).get("example_id") is None, "query_key_posts_a_wrong_verdict",
               diag=r.text[:300])
        r = svc.request("POST", "/feedback", json=dict(wrong, correct=True), headers=reader)
        tap.ok(fixtures.is_problem(r, 403, "forbidden") and (r.json or {}).get("required_scope") == "admin",
               "query_key_correct_verdict_needs_admin", diag=r.text[:300])
        r = svc.request("POST", "/feedback", json=dict(wrong, database="other", correct=True), headers=reader)
        tap.ok(fixtures.is_problem(r, 404, "not-found"), "query_key_correct_verdict_on_another_database_is_404",
               diag=r.text[:300])
        r = svc.request("GET", "/databases/music/examples", headers=reader)
        tap.eq((r.status, (r.json or {}).get("total")), (200, 0), "refused_correct_verdict_stored_no_example")
        r = svc.request("GET", "/feedback?database=music", headers=reader)
        tap.ok(fixtures.is_problem(r, 403, "forbidden") and (r.json or {}).get("required_scope") == "admin",
               "query_key_cannot_review_feedback", diag=r.text[:300])
        r = svc.request("POST", "/feedback", json=dict(wrong, correct=True), headers=limited)
        tap.ok(r.status == 201 and isinstance((r.json or {}).get("example_id"), int),
               "admin_key_correct_verdict_stores_an_example", diag=r.text[:300])


PAGE_BYTES = 64 << 10
FEEDBACK_QUOTA = 40
EXAMPLES_QUOTA = 8


def pages(svc, path, key, name):
    """Every item of a list, paged with next_offset; checks each page's size."""
    items, offset, sizes, truncated = [], 0, [], 0
    for _ in range(100):
        r = svc.request("GET", "%s%slimit=1000&offset=%d" % (path, "&" if "?" in path else "?", offset))
        page = r.json or {}
        sizes.append(len(r.body))
        items += page.get(key, [])
        truncated += page.get("truncated") is True
        if r.status != 200 or page.get("next_offset") is None:
            break
        offset = page["next_offset"]
    tap.ok(max(sizes) <= PAGE_BYTES, name + "every_page_stays_under_max_list_page_bytes",
           diag="page sizes %s, bound %d" % (sizes, PAGE_BYTES))
    tap.ok(truncated >= 1 and len(sizes) > 1, name + "a_page_cut_by_its_bytes_says_truncated_and_pages_on",
           diag="%d pages, %d truncated" % (len(sizes), truncated))
    return items


def bounds(state_url, name):
    cfg = {"databases": [{"name": "music", "url": "sqlite://" + DB}],
           "state": {"url": state_url, "max_feedback_per_database": FEEDBACK_QUOTA,
                     "max_examples_per_database": EXAMPLES_QUOTA},
           "limits": {"max_list_page_bytes": PAGE_BYTES}}
    with fixtures.serving(tap, cfg, name + "bounds_service_exits_0_on_sigterm", env=CLEAN_ENV) as svc:
        big = "SELECT name FROM singer WHERE name <> '%s'" % ("x" * 20000)
        ids = []
        for i in range(FEEDBACK_QUOTA):
            r = svc.request("POST", "/feedback", json={"database": "music", "question": "q%d %s" % (i, "w" * 3000),
                                                       "sql": big, "correct": False, "note": "n" * 2000})
            ids.append((r.json or {}).get("id"))
        tap.ok(all(isinstance(i, int) for i in ids), name + "feedback_up_to_the_quota_is_stored")
        r = svc.request("POST", "/feedback", json={"database": "music", "question": "one more", "sql": "SELECT 1",
                                                   "correct": False})
        tap.ok(fixtures.is_problem(r, 409, "quota-exceeded") and str(FEEDBACK_QUOTA) in (r.json or {}).get("detail", ""),
               name + "feedback_past_the_quota_is_409_quota_exceeded", diag=r.text[:300])
        seen = pages(svc, "/feedback?database=music", "feedback", name + "feedback_")
        tap.eq(sorted(f.get("id") for f in seen), sorted(ids), name + "feedback_pages_show_every_entry_once")
        tap.ok(all(f.get("sql") == big for f in seen), name + "listed_feedback_entries_are_whole")

        added = []
        for i in range(EXAMPLES_QUOTA):
            r = svc.request("POST", "/databases/music/examples", json={"question": "e%d" % i, "sql": big})
            added.append((r.json or {}).get("id"))
        tap.ok(all(isinstance(i, int) for i in added), name + "examples_up_to_the_quota_are_stored")
        r = svc.request("POST", "/databases/music/examples", json={"question": "one more", "sql": "SELECT 1"})
        tap.ok(fixtures.is_problem(r, 409, "quota-exceeded"), name + "example_past_the_quota_is_409_quota_exceeded",
               diag=r.text[:300])
        r = svc.request("POST", "/feedback", json={"database": "music", "question": "q", "sql": "SELECT 1",
                                                   "correct": True})
        tap.ok(fixtures.is_problem(r, 409, "quota-exceeded"), name + "correct_feedback_past_a_quota_is_409",
               diag=r.text[:300])
        seen = pages(svc, "/databases/music/examples", "examples", name + "examples_")
        tap.eq(sorted(e.get("id") for e in seen), sorted(added), name + "example_pages_show_every_example_once")


def test_sqlite_state():
    flow("sqlite://" + os.path.join(TMP, "state.sqlite"), "sqlite_state_")
    bounds("sqlite://" + os.path.join(TMP, "bounds.sqlite"), "sqlite_state_")


def test_state_file_deleted_while_running():
    """A state file deleted while the service runs: writes are refused (503), never answered 201 and then
    lost at the next start (issue 19, item 9)."""
    path = os.path.join(TMP, "deleted-state.sqlite")
    cfg = {"databases": [{"name": "music", "url": "sqlite://" + DB}], "state": {"url": "sqlite://" + path}}
    item = {"database": "music", "question": "q", "sql": "SELECT 1", "correct": False}
    with t2s.Service(cfg, env=CLEAN_ENV) as svc:
        r = svc.request("POST", "/feedback", json=item)
        tap.eq(r.status, 201, "feedback_stored_before_the_file_is_deleted")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        r = svc.request("POST", "/feedback", json=item)
        tap.ok(fixtures.is_problem(r, 503, "unavailable") and "deleted" in (r.json or {}).get("detail", ""),
               "feedback_after_the_state_file_is_deleted_is_503_not_201", diag=r.text[:300])
        r = svc.request("POST", "/databases/music/examples", json={"question": "q", "sql": "SELECT 1"})
        tap.eq(r.status, 503, "example_after_the_state_file_is_deleted_is_503")


def test_pg_state():
    if not fixtures.have_pg():
        tap.skip("pg_state_feedback", "T2S_TEST_PG_PORT not set")
        return
    db = "t2s_feedback_state_%d" % os.getpid()
    pg = fixtures.PgDatabases(tap)
    try:
        pg.create(db, setup_sql=None)
        pg.create(db + "_bounds", setup_sql=None)
        flow(t2s.pg_url(db, user="postgres"), "pg_state_")
        bounds(t2s.pg_url(db + "_bounds", user="postgres"), "pg_state_bounds_")
    finally:
        pg.drop_all()


def main():
    return fixtures.run_with_binary(tap, "feedback_checks", test_sqlite_state, test_auth,
                                    test_state_file_deleted_while_running, test_pg_state)


if __name__ == "__main__":
    sys.exit(main())
