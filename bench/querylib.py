"""Asking POST /query and judging its answers, shared by the /query benches
(query_eval.py, query_overhead.py, replay_eval.py, builtin_eval.py,
peer_compare.py), Python 3 standard library only.

- GoldDb, load_gold(): each question's gold rows, run here read-only on the
  dataset's SQLite file (databases without rows are left out).
- ask_query(): one POST /query and its record: correct (spiderlib's result
  comparison), status, cost (model calls, tokens, correction rounds), times.
- add_common_args(), add_service_args(): the dataset and service options
  these benches share.
- WARMUP_SUFFIX: appended to warm-up questions so that the measured requests
  cannot hit the service's answer cache.
"""

import collections
import os
import sqlite3
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import spiderlib  # noqa: E402
from linklib import database_for  # noqa: E402


WARMUP_SUFFIX = " (warm-up request)"


class GoldDb:
    """A dataset database opened read-only, with its has-rows flag."""

    def __init__(self, db_id, path):
        self.db_id = db_id
        self.path = path
        self.conn = spiderlib.open_db(path)
        # One statement at a time: run_sql's progress handler, set while another
        # thread steps on the same connection, deadlocks (GIL against SQLite's mutex).
        self.lock = threading.Lock()
        self.has_rows = False
        for t in benchlib.sqlite_schema(self.conn)["tables"]:
            q = '"' + t.replace('"', '""') + '"'
            try:
                if self.conn.execute("SELECT 1 FROM %s LIMIT 1" % q).fetchone():
                    self.has_rows = True
                    break
            except sqlite3.Error:
                continue


def load_gold(questions, dbdir, gold_timeout):
    """(items, failures, excluded_empty): items are (q, GoldDb, gold rows, difficulty)
    of the questions whose gold SQL runs on a database with rows; failures the
    gold queries that failed; excluded_empty a Counter of questions per database
    left out for having no rows."""
    dbs, failures, items, excluded_empty = {}, [], [], collections.Counter()
    for q in questions:
        db = database_for(q, dbs, dbdir, failures, GoldDb)
        if db is None:
            continue
        if not db.has_rows:
            excluded_empty[q["db_id"]] += 1
            continue
        try:
            rows = spiderlib.run_sql(db.conn, q["sql"], gold_timeout)
        except (sqlite3.Error, spiderlib.QueryTimeout) as e:
            failures.append({"index": q["index"], "db_id": q["db_id"], "sql": q["sql"], "error": str(e)})
            continue
        items.append((q, db, rows, spiderlib.difficulty_of(q["raw"])))
    return items, failures, excluded_empty


def question_sets(a, keys):
    """([(key, items)], database directory): for each question key (question, question_syn) the
    selected questions of a (a.question_key set to it in turn) as load_gold's items."""
    sets, dbdir = [], None
    for key in keys:
        a.question_key = key
        questions, dbdir, _ = spiderlib.select(a)
        items, _, _ = load_gold(questions, dbdir, a.gold_timeout)
        sets.append((key, items))
    return sets, dbdir


def ask_query(client, body, db, gold_rows, gold_sql, semantics="spider", rerun_timeout=60.0):
    """POST /query body and judge the answer against gold_rows: a record with
    status, correct, error, client_ms, server_ms, model_calls, prompt_tokens,
    completion_tokens, rounds, checks (the check of each correction), sql,
    rerun, cached, and resp (the answer or problem body, or None).  A truncated
    answer's SQL is run in full on db here."""
    rec = {"status": None, "correct": False, "error": None, "client_ms": None, "server_ms": None,
           "model_calls": None, "prompt_tokens": None, "completion_tokens": None, "rounds": None,
           "checks": [], "sql": None, "rerun": False, "cached": None, "resp": None}
    try:
        status, resp, text, ms = client.request("POST", "/query", body)
    except OSError as e:
        rec["error"] = "%s: %s" % (type(e).__name__, e)
        return rec
    rec["status"], rec["client_ms"] = status, ms
    if not isinstance(resp, dict):
        rec["error"] = "HTTP %d, body is not JSON: %s" % (status, text[:200])
        return rec
    rec["resp"] = resp
    trace = resp.get("trace") if isinstance(resp.get("trace"), dict) else {}
    calls = trace.get("model_calls")
    if isinstance(calls, list):
        rec["model_calls"] = len(calls)
    tok = trace.get("tokens") if isinstance(trace.get("tokens"), dict) else {}
    if isinstance(tok.get("prompt"), (int, float)):
        rec["prompt_tokens"] = tok["prompt"]
    if isinstance(tok.get("completion"), (int, float)):
        rec["completion_tokens"] = tok["completion"]
    if isinstance(resp.get("corrections"), list):
        rec["rounds"] = len(resp["corrections"])
        rec["checks"] = [c.get("check") for c in resp["corrections"] if isinstance(c, dict)]
    tm = trace.get("timings_ms") if isinstance(trace.get("timings_ms"), dict) else {}
    if isinstance(tm.get("total"), (int, float)):
        rec["server_ms"] = float(tm["total"])
    rec["sql"] = resp.get("sql")
    rec["cached"] = resp.get("cached")
    if status != 200:
        rec["error"] = "HTTP %d %s: %s" % (status, resp.get("type", ""), str(resp.get("detail", resp.get("title", "")))[:200])
        return rec
    rows = resp.get("rows")
    if not isinstance(rows, list):
        rec["error"] = "200 without rows"
        return rec
    if resp.get("truncated") and isinstance(rec["sql"], str):
        try:
            with db.lock:
                rows = spiderlib.run_sql(db.conn, rec["sql"], rerun_timeout)
            rec["rerun"] = True
        except (sqlite3.Error, spiderlib.QueryTimeout) as e:
            rec["error"] = "truncated answer; rerunning its SQL here failed: %s" % e
            return rec
    rec["correct"] = spiderlib.results_match(rows, gold_rows, semantics, gold_sql)
    return rec


def add_common_args(ap):
    """Dataset selection options shared with query_overhead.py and peer_compare.py."""
    ap.add_argument("--dataset", default=os.path.join(benchlib.DATASETS, "spider-dev"), help="Spider/BIRD-format dataset directory")
    ap.add_argument("--questions", help="question file (default DIR/dev.json)")
    ap.add_argument("--db-dir", help="database directory (default DIR/database)")
    ap.add_argument("--db-filter", default="", help="comma-separated db_ids to keep")
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions (after --db-filter)")
    ap.add_argument("--question-key", default="question", choices=["question", "question_syn"])
    ap.add_argument("--api-key", default=os.environ.get("TEXT2SQLD_API_KEY"), help="Bearer key for text2sqld")
    ap.add_argument("--out", help="also write the JSON report here")


def add_service_args(ap):
    ap.add_argument("--url", help="a running text2sqld (its config must register the dataset's databases)")
    ap.add_argument("--binary", help="text2sqld binary (default $TEXT2SQLD_BIN, build/text2sqld, /tmp/bench-build/text2sqld)")
    ap.add_argument("--port", type=int, default=0, help="port for the started service (default: a free one)")
    ap.add_argument("--ready-timeout", type=float, default=600.0)
