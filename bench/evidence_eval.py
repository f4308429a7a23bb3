#!/usr/bin/env python3
"""evidence_eval.py - value-evidence recall of a running text2sqld (POST /evidence)
against any Spider-format dataset.

Usage:
  evidence_eval.py --dataset DIR --url http://127.0.0.1:PORT [--limit N]
                   [--db-filter a,b] [--out FILE] [--concurrency N] [--api-key K]
                   [--questions FILE] [--db-dir DIR] [--ready-timeout S]
                   [--top K] [--worst N] [--trim] [--gold-only]
                   [--question-key question|question_syn]

Question: for every gold SQL condition that compares a column with a string
literal, is (table, column, value exactly as stored) among the top 5 values
/evidence returns?

Gold conditions (derived from the gold SQL only, no per-dataset rule):
  1. The SQL is tokenised like SQLite does (strings '..', identifiers "..",
     `..`, [..], numbers, operators). Candidate conditions are
        colref OP literal      and      literal OP colref
     with OP one of = == != <> < > <= >= LIKE, NOT LIKE, GLOB, NOT GLOB, and
        colref [NOT] IN ( literal, literal, ... )
     where colref is `col`, `alias.col` or `table.col` and literal is a
     '...' string, or a "..." token that SQLite treats as a string (it does
     when no column of that name is in scope).
  2. SQLite itself says which real column a colref is. The query is compiled
     (EXPLAIN, never run) with an authorizer that counts every SQLITE_READ
     (table, column); then it is compiled again with the colref replaced by
     NULL. The one (table, column) whose read count drops is the column:
     aliases, reused aliases in subqueries, correlated references and
     unqualified names are resolved by SQLite's own name resolution. A "..."
     token is a string literal when replacing it changes no read.
  3. LIKE/GLOB patterns count as the literal without its leading and trailing
     % (or *); a pattern with a wildcard inside is excluded.
  4. The literal's stored spelling is looked up in the SQLite file:
     SELECT DISTINCT col WHERE col = ? COLLATE NOCASE (ASCII case folding).
     Only TEXT values count. No match -> "literal_not_in_db"; matches that are
     only numbers -> "stored_not_text"; both are excluded from recall.
     With --trim, a literal that matches only when spaces around both sides
     are ignored counts too, and the stored spelling (with its spaces) is gold.
  Identical conditions of one question (same column, same stored values) are
  counted once. Unquoted numbers are never conditions.

Each question (every question whose gold compiles, also those without a
string condition, so precision and latency cover all) is sent as
POST /evidence {database, question}. A condition is a hit when one of its
stored values is among the first 5 returned values for the same table and
column, compared case-sensitively (table/column names case-insensitively).
Before measuring, /evidence is polled per database until its value_index is
"ready" (bounded by --ready-timeout). Metric definitions: bench/README.md.
Output: one JSON document on stdout (and --out FILE).
"""

import argparse
import collections
import concurrent.futures
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import emit  # noqa: E402
from evidencelib import Database, gold_conditions  # noqa: E402
from linklib import database_for, selected_questions  # noqa: E402


TOP_K_DEFAULT = 5


def cond_label(db, c):
    if c["table"]:
        return "%s.%s" % (db.table_by_lower[c["table"]], db.column_by_lower[(c["table"], c["column"])])
    return c["ref"]


def parse_values(db, resp, top):
    """[(table_l, column_l, value, raw dict)] of the first `top` returned values, plus unknown-name count."""
    out, unknown = [], 0
    for v in (resp.get("values") or [])[:top]:
        if not isinstance(v, dict) or not all(isinstance(v.get(k), str) for k in ("table", "column", "value")):
            unknown += 1
            continue
        t = db.canonical_table(v["table"])
        if t is None or (t, v["column"].lower()) not in db.column_by_lower:
            unknown += 1
            out.append((None, None, v["value"], v))
            continue
        out.append((t, v["column"].lower(), v["value"], v))
    return out, unknown


def aggregate(records, top):
    """Metrics over per-question records (definitions in bench/README.md)."""
    counted = [c for r in records for c in r["conds"] if c["status"] == "counted"]
    hits = sum(1 for c in counted if c["hit"])
    status = collections.Counter(c["status"] for r in records for c in r["conds"])
    with_conds = [r for r in records if any(c["status"] == "counted" for c in r["conds"])]
    ret_c = sum(len(r["values"]) for r in with_conds)
    gold_c = sum(r["gold_returned"] for r in with_conds)
    ret_all = sum(len(r["values"]) for r in records)
    gold_all = sum(r["gold_returned"] for r in records)
    client = [r["client_ms"] for r in records if r["client_ms"] is not None]
    server = [r["server_ms"] for r in records if r["server_ms"] is not None]
    rnd = lambda x: round(x, 4)
    n = len(records)
    return {
        "n_questions": n,
        "questions_with_conditions": len(with_conds),
        "n_conditions": len(counted),
        "hits": hits,
        "recall": rnd(hits / len(counted)) if counted else None,
        "recall_any_column": rnd(sum(1 for c in counted if c["hit_value"]) / len(counted)) if counted else None,
        "precision_at_%d" % top: rnd(gold_c / ret_c) if ret_c else None,
        "precision_at_%d_all_questions" % top: rnd(gold_all / ret_all) if ret_all else None,
        "mean_values_returned": rnd(ret_all / n) if n else None,
        "mean_values_returned_with_conditions": rnd(ret_c / len(with_conds)) if with_conds else None,
        "conditions_by_status": dict(sorted(status.items())),
        "errors": sum(1 for r in records if r["error"]),
        "partial_responses": sum(1 for r in records if r["partial"]),
        "latency_client_ms": benchlib.latency_summary(client),
        "latency_server_ms": benchlib.latency_summary(server),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True, help="Spider-format dataset directory")
    ap.add_argument("--url", help="base URL of the running service, e.g. http://127.0.0.1:8080")
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions (after --db-filter)")
    ap.add_argument("--db-filter", default="", help="comma-separated db_ids to keep")
    ap.add_argument("--api-key", default=os.environ.get("TEXT2SQLD_API_KEY"), help="Bearer key (default $TEXT2SQLD_API_KEY)")
    ap.add_argument("--out", help="also write the JSON report here")
    ap.add_argument("--concurrency", type=int, default=1, help="parallel /evidence requests (default 1)")
    ap.add_argument("--questions", help="question file (default DIR/dev.json)")
    ap.add_argument("--db-dir", help="database directory (default DIR/database)")
    ap.add_argument("--timeout", type=float, default=60.0, help="per-request timeout in seconds")
    ap.add_argument("--ready-timeout", type=float, default=120.0, help="max seconds to wait for value indexes")
    ap.add_argument("--top", type=int, default=TOP_K_DEFAULT, help="values that count (default 5)")
    ap.add_argument("--worst", type=int, default=25, help="how many misses to list")
    ap.add_argument("--trim", action="store_true",
                    help="also count literals that match a stored value only when spaces around both are ignored")
    ap.add_argument("--gold-only", action="store_true", help="only extract and summarise gold conditions")
    ap.add_argument("--question-key", default="question", choices=["question", "question_syn"],
                    help="which text of each entry to send: question (default) or question_syn")
    args = ap.parse_args()
    if not args.gold_only and not args.url:
        ap.error("--url is required unless --gold-only")

    questions, dbdir, qpath = selected_questions(args)

    dbs, gold_failures, items = {}, [], []
    for q in questions:
        db = database_for(q, dbs, dbdir, gold_failures, Database)
        if db is None:
            continue
        try:
            conds = gold_conditions(db, q["sql"], args.trim)
        except sqlite3.Error as e:
            gold_failures.append({"index": q["index"], "db_id": q["db_id"], "sql": q["sql"], "error": str(e)})
            continue
        items.append((q, db, conds))

    all_conds = [c for _, _, cs in items for c in cs]
    counted = [c for c in all_conds if c["status"] == "counted"]
    gold_summary = {
        "questions": len(questions),
        "compiled": len(items),
        "failed": len(gold_failures),
        "failures": gold_failures[:50],
        "string_conditions": len(all_conds),
        "by_status": dict(sorted(collections.Counter(c["status"] for c in all_conds).items())),
        "counted_by_operator": dict(sorted(collections.Counter(c["op"] for c in counted).items())),
        "counted_stored_spelling_differs": sum(1 for c in counted if c["lookup"] not in c["stored"]),
        "counted_digits_only": sum(1 for c in counted if c["lookup"].strip().isdigit()),
        "counted_only_after_trim": sum(1 for c in counted if c.get("trim_match")),
        "not_in_db_but_trim_matches": sum(1 for c in all_conds if c["status"] == "literal_not_in_db" and c.get("trim_match")),
        "not_counted_examples": [
            {"index": q["index"], "db_id": q["db_id"], "condition": "%s %s %r" % (cond_label(db, c), c["op_text"], c["literal"]),
             "status": c["status"], **({"reason": c["reason"]} if "reason" in c else {})}
            for q, db, cs in items for c in cs if c["status"] != "counted"
        ][:40],
        "databases": len(dbs),
    }
    report = {"dataset": os.path.abspath(args.dataset), "questions_file": os.path.abspath(qpath), "top": args.top,
              "trim": args.trim, "gold": gold_summary}
    if args.gold_only:
        emit(report, args.out)
        return 0

    client = benchlib.LinkClient(args.url, args.api_key, args.timeout)
    ready, waited = benchlib.wait_value_indexes(client, sorted(dbs), args.ready_timeout)
    not_ready = sorted(n for n, s in ready.items() if s["state"] != "ready")

    def run(item):
        q, db, conds = item
        rec = {"q": q, "db": db, "conds": [dict(c) for c in conds], "error": None, "client_ms": None,
               "server_ms": None, "values": [], "partial": False, "unknown": 0, "gold_returned": 0}
        try:
            resp, ms = client.post_json("/evidence", {"database": q["db_id"], "question": q["question"]})
            rec["client_ms"] = ms
            rec["server_ms"] = benchlib.server_total_ms(resp)
            rec["partial"] = bool(resp.get("partial"))
            rec["values"], rec["unknown"] = parse_values(db, resp, args.top)
        except benchlib.HttpError as e:
            rec["error"] = "HTTP %d: %s" % (e.status, e.body[:300])
        except (OSError, ValueError) as e:
            rec["error"] = "%s: %s" % (type(e).__name__, e)
        returned = {(t, c, v) for t, c, v, _ in rec["values"] if t}
        returned_values = {v for _, _, v, _ in rec["values"]}
        gold = set()
        for c in rec["conds"]:
            if c["status"] != "counted":
                continue
            keys = {(c["table"], c["column"], s) for s in c["stored"]}
            gold |= keys
            c["hit"] = bool(keys & returned)
            c["hit_value"] = any(s in returned_values for s in c["stored"])
        rec["gold_returned"] = sum(1 for t, c, v, _ in rec["values"] if (t, c, v) in gold)
        return rec

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.concurrency)) as ex:
        records = list(ex.map(run, items))
    wall = time.perf_counter() - t0

    report.update({"url": args.url, "concurrency": args.concurrency, "wall_seconds": round(wall, 3)})
    report.update(aggregate(records, args.top))
    report["unknown_names_returned"] = sum(r["unknown"] for r in records)

    build = {n: s["stats"] for n, s in ready.items() if s["stats"]}
    bms = [float(s.get("build_ms") or 0) for s in build.values()]
    report["value_index"] = {
        "ready_wait_seconds": waited,
        "not_ready": {n: ready[n]["state"] for n in not_ready},
        "build_ms_total": round(sum(bms), 3),
        "build_ms_max": round(max(bms), 3) if bms else None,
        "bytes_total": sum(int(s.get("bytes") or 0) for s in build.values()),
        "values_total": sum(int(s.get("values") or 0) for s in build.values()),
        "truncated": sorted(n for n, s in build.items() if s.get("truncated")),
    }

    per_db = {}
    for r in records:
        per_db.setdefault(r["q"]["db_id"], []).append(r)
    report["per_database"] = {}
    for name in sorted(dbs):
        a = aggregate(per_db.get(name, []), args.top)
        for k in ("latency_client_ms", "conditions_by_status", "questions_with_conditions",
                  "mean_values_returned_with_conditions", "precision_at_%d_all_questions" % args.top):
            a.pop(k, None)
        a["latency_server_p50_ms"] = a.pop("latency_server_ms", {}).get("p50")
        st = ready[name]["stats"] or {}
        a["index_state"] = ready[name]["state"]
        a["index"] = {k: st.get(k) for k in ("build_ms", "bytes", "values", "columns_indexed", "columns_ranged",
                                             "columns_skipped", "truncated")}
        report["per_database"][name] = a

    def returned_text(r):
        return ["%s.%s=%r (%.3g)" % (v.get("table"), v.get("column"), val, v.get("score") or 0) for _, _, val, v in r["values"]]

    misses = []
    for r in records:
        for c in r["conds"]:
            if c["status"] == "counted" and not c["hit"]:
                kind = "error" if r["error"] else ("value_in_other_column" if c["hit_value"] else "value_not_returned")
                misses.append((kind, r, c))
    order = {"value_not_returned": 0, "value_in_other_column": 1, "error": 2}
    misses.sort(key=lambda m: (order[m[0]], m[1]["q"]["db_id"], m[1]["q"]["index"]))
    report["miss_kinds"] = dict(collections.Counter(m[0] for m in misses))
    report["worst_misses"] = [
        {"index": r["q"]["index"], "db_id": r["q"]["db_id"], "question": r["q"]["question"], "kind": kind,
         "condition": "%s %s %r" % (cond_label(r["db"], c), c["op_text"], c["literal"]), "stored": c["stored"],
         "returned": returned_text(r), "error": r["error"]}
        for kind, r, c in misses[: args.worst]
    ]
    errs = [r for r in records if r["error"]]
    report["error_samples"] = [{"index": r["q"]["index"], "db_id": r["q"]["db_id"], "error": r["error"]} for r in errs[:10]]
    emit(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
