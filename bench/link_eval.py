#!/usr/bin/env python3
"""link_eval.py - schema-linking accuracy of a running text2sqld against any
Spider-format dataset.

Usage:
  link_eval.py --dataset DIR --url http://127.0.0.1:PORT [--mode vector|llm|hybrid]
               [--limit N] [--db-filter a,b] [--api-key K] [--out FILE]
               [--concurrency N] [--questions FILE] [--question-key question|question_syn]
               [--db-dir DIR] [--split-half] [--gold-only]
  link_eval.py --dataset DIR --gold-tables-stub --mode llm|hybrid [--link JSON]
               [--binary PATH] [--port P] [...]

--gold-tables-stub starts bench/gold_tables_stub.py (a link model that answers
each question's gold tables) and a text2sqld with it as models.link and the
dataset's databases (bench/servicelib.py), measures, and stops both by pid.
--link JSON merges settings into the started service's "link" section.

Dataset layout (Spider): DIR/dev.json (list of {db_id, question, query}; BIRD's
"SQL" key is accepted too), DIR/database/<db_id>/<db_id>.sqlite. tables.json is
not needed: the schema is read from the SQLite file, which is what the service
introspects, so both sides see the same names.

Gold: every gold query is compiled (EXPLAIN, never run) on its SQLite file with
an authorizer that records each SQLITE_READ (table, column). Aliases, subqueries
and CTEs resolve to the real tables because SQLite reports the underlying
table. Reads with an empty column name (count(*)) keep the table only; reads of
sqlite_* tables are ignored. Empty databases work since only compilation runs.

Each question is sent as POST /link {database: db_id, question, mode}. Names are
compared case-insensitively. A service error counts as an empty answer (a miss)
and is also counted in "errors". Questions whose gold does not compile are left
out of every metric and listed under gold.failures. Metric definitions are in
bench/README.md. Output: one JSON document on stdout (and --out FILE).
"""

import argparse
import concurrent.futures
import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import emit  # noqa: E402
from linklib import Database, database_for, parse_link_response, selected_questions  # noqa: E402


def fmt_col(c):
    return "%s.%s" % c


def aggregate(records):
    """Metrics over a list of per-question records (see README for definitions)."""
    n = len(records)
    if n == 0:
        return {"n_questions": 0}
    gt = sum(len(r["gold_tables"]) for r in records)
    gc = sum(len(r["gold_columns"]) for r in records)
    ht = sum(len(r["gold_tables"] & r["tables"]) for r in records)
    hc = sum(len(r["gold_columns"] & r["columns"]) for r in records)
    rc = sum(len(r["columns"]) for r in records)
    fp = sum(len(r["columns"] - r["gold_columns"]) for r in records)
    tok_l = sum(r["tokens_linked"] for r in records)
    tok_f = sum(r["tokens_full"] for r in records)
    client = [r["client_ms"] for r in records if r["client_ms"] is not None]
    server = [r["server_ms"] for r in records if r["server_ms"] is not None]
    rnd = lambda x: round(x, 4)
    return {
        "n_questions": n,
        "errors": sum(1 for r in records if r["error"]),
        "table_recall": rnd(ht / gt) if gt else None,
        "table_slr": rnd(sum(1 for r in records if r["gold_tables"] <= r["tables"]) / n),
        "column_recall": rnd(hc / gc) if gc else None,
        "column_slr": rnd(sum(1 for r in records if r["gold_columns"] <= r["columns"]) / n),
        "column_fpr": rnd(fp / rc) if rc else None,
        "mean_columns_share": rnd(sum(len(r["columns"]) / r["n_db_columns"] for r in records if r["n_db_columns"]) / n),
        "mean_tables_share": rnd(sum(len(r["tables"]) / r["n_db_tables"] for r in records if r["n_db_tables"]) / n),
        "mean_returned_tables": rnd(sum(len(r["tables"]) for r in records) / n),
        "mean_returned_columns": rnd(rc / n),
        "mean_gold_tables": rnd(gt / n),
        "mean_gold_columns": rnd(gc / n),
        "prompt_tokens": {
            "approximation": "ceil(chars/4) of a CREATE TABLE rendering (columns with declared types, foreign keys among shown columns)",
            "mean_linked": rnd(tok_l / n),
            "mean_full": rnd(tok_f / n),
            "linked_over_full": rnd(tok_l / tok_f) if tok_f else None,
        },
        "latency_client_ms": benchlib.latency_summary(client),
        "latency_server_ms": benchlib.latency_summary(server),
        "responses_without_server_total": sum(1 for r in records if not r["error"] and r["server_ms"] is None),
        "unknown_names_returned": sum(len(r["unknown"]) for r in records),
        "columns_outside_tables": sum(r["outside"] for r in records),
    }


def split_half(records):
    """Column/table SLR and columns share of the even- and odd-indexed halves
    of the question file, and their difference (a cheap spread estimate)."""
    keys = ("column_slr", "table_slr", "mean_columns_share")
    halves = {}
    for name, parity in (("even", 0), ("odd", 1)):
        a = aggregate([r for r in records if r["q"]["index"] % 2 == parity])
        halves[name] = {k: a.get(k) for k in keys + ("n_questions",)}
    halves["spread"] = {k: round(abs((halves["even"][k] or 0) - (halves["odd"][k] or 0)), 4) for k in keys}
    return halves


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True, help="Spider-format dataset directory")
    ap.add_argument("--url", help="base URL of the running service, e.g. http://127.0.0.1:8080")
    ap.add_argument("--mode", default="vector", choices=["vector", "llm", "hybrid"])
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions (after --db-filter)")
    ap.add_argument("--db-filter", default="", help="comma-separated db_ids to keep")
    ap.add_argument("--api-key", default=os.environ.get("TEXT2SQLD_API_KEY"), help="Bearer key (default $TEXT2SQLD_API_KEY)")
    ap.add_argument("--out", help="also write the JSON report here")
    ap.add_argument("--concurrency", type=int, default=1, help="parallel /link requests (default 1)")
    ap.add_argument("--questions", help="question file (default DIR/dev.json)")
    ap.add_argument("--question-key", default="question", choices=["question", "question_syn"],
                    help="which text of each entry to send: question (default) or question_syn")
    ap.add_argument("--evidence", action="store_true",
                    help="send each entry's BIRD-style evidence text as the request's evidence field")
    ap.add_argument("--split-half", action="store_true",
                    help="also report the metrics of the even- and odd-indexed halves (split-half spread)")
    ap.add_argument("--db-dir", help="database directory (default DIR/database)")
    ap.add_argument("--timeout", type=float, default=60.0, help="per-request timeout in seconds")
    ap.add_argument("--worst", type=int, default=20, help="how many worst misses to list")
    ap.add_argument("--dump", help="also write one JSON line per question (gold, returned, missed) here, "
                    "for bench/link_misses.py")
    ap.add_argument("--gold-only", action="store_true", help="only extract and summarise gold; no service needed")
    ap.add_argument("--gold-tables-stub", action="store_true",
                    help="start gold_tables_stub.py as the link model and a text2sqld using it")
    ap.add_argument("--link", help="JSON object merged into the started service's link settings")
    ap.add_argument("--binary", help="text2sqld binary for --gold-tables-stub (default as servicelib.find_binary)")
    ap.add_argument("--port", type=int, default=0, help="port of the started service (default: a free one)")
    ap.add_argument("--ready-timeout", type=float, default=600.0)
    args = ap.parse_args()
    if not args.gold_only and not args.url and not args.gold_tables_stub:
        ap.error("--url or --gold-tables-stub is required unless --gold-only")

    questions, dbdir, qpath = selected_questions(args, args.question_key)

    # Schemas and gold (single-threaded; compilation is fast).
    dbs, gold_failures, items = {}, [], []
    for q in questions:
        db = database_for(q, dbs, dbdir, gold_failures, Database)
        if db is None:
            continue
        try:
            gt, gc = db.gold(q["sql"])
        except sqlite3.Error as e:
            gold_failures.append({"index": q["index"], "db_id": q["db_id"], "sql": q["sql"], "error": str(e)})
            continue
        items.append((q, db, gt, gc))

    n_ok = len(items)
    gold_summary = {
        "questions": len(questions),
        "compiled": n_ok,
        "failed": len(gold_failures),
        "failures": gold_failures[:50],
        "mean_gold_tables": round(sum(len(i[2]) for i in items) / n_ok, 4) if n_ok else None,
        "mean_gold_columns": round(sum(len(i[3]) for i in items) / n_ok, 4) if n_ok else None,
        "questions_without_gold_columns": sum(1 for i in items if not i[3]),
        "databases": len(dbs),
    }
    report = {"dataset": os.path.abspath(args.dataset), "questions_file": os.path.abspath(qpath), "gold": gold_summary}
    if args.gold_only:
        emit(report, args.out)
        return 0

    procs = None
    if args.gold_tables_stub and not args.url:
        import servicelib  # noqa: E402 - only this path starts processes
        procs = servicelib.Procs()
        binary = servicelib.find_binary(args.binary)
        if not binary:
            raise SystemExit("no text2sqld binary: build it or give --binary")
        try:
            base = procs.start_gold_tables_stub([qpath], [dbdir])
            more = {"link": json.loads(args.link)} if args.link else None
            extra = servicelib.bench_extra(procs, {"link": {"base_url": base, "model": "gold-tables"}}, more=more)
            cfg = procs.write_config(args.port or servicelib.free_port(), dbdir, extra)
            args.url, _ = procs.start_service(binary, cfg, args.ready_timeout)
        except BaseException:
            procs.stop_all()
            raise
        report["link_model"] = "gold_tables_stub.py"
        report["link_settings"] = more["link"] if more else {}
    try:
        measure(args, items, dbs, report)
    finally:
        if procs:
            procs.stop_all()
    emit(report, args.out)
    return 0


def measure(args, items, dbs, report):
    """Send every question, then fill report with the metrics."""
    client = benchlib.LinkClient(args.url, args.api_key, args.timeout)

    def run(item):
        q, db, gt, gc = item
        body = {"database": q["db_id"], "question": q["question"], "mode": args.mode}
        if args.evidence and q.get("evidence"):
            body["evidence"] = q["evidence"]
        rec = {"q": q, "db": db, "gold_tables": gt, "gold_columns": gc, "error": None, "client_ms": None,
               "server_ms": None, "tables": set(), "columns": set(), "unknown": [], "outside": 0,
               "n_db_columns": db.n_columns, "n_db_tables": len(db.tables), "tokens_full": db.full_tokens,
               "model_calls": None, "columns_cut": False, "column_tokens": None}
        try:
            resp, ms = client.post_json("/link", body)
            rec["client_ms"] = ms
            rec["server_ms"] = benchlib.server_total_ms(resp)
            rec["model_calls"] = resp.get("model_calls")
            budget = resp.get("column_budget") or {}
            rec["columns_cut"] = bool(budget.get("cut"))
            rec["column_tokens"] = budget.get("estimated_tokens")
            rec["tables"], rec["columns"], rec["unknown"], rec["outside"] = parse_link_response(db, resp)
            rec["scores"] = {"%s.%s" % (c.get("table", "").lower(), c.get("column", "").lower()): c.get("score")
                             for c in resp.get("columns") or [] if isinstance(c, dict)}
        except benchlib.HttpError as e:
            rec["error"] = "HTTP %d: %s" % (e.status, e.body[:300])
        except (OSError, ValueError) as e:
            rec["error"] = "%s: %s" % (type(e).__name__, e)
        rec["tokens_linked"] = benchlib.approx_tokens(db.render(rec["tables"], rec["columns"])) if rec["tables"] else 0
        return rec

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.concurrency)) as ex:
        records = list(ex.map(run, items))
    wall = time.perf_counter() - t0

    report.update({"url": args.url, "mode": args.mode, "concurrency": args.concurrency,
                   "question_key": args.question_key, "evidence_sent": bool(args.evidence),
                   "wall_seconds": round(wall, 3)})
    report.update(aggregate(records))
    if args.split_half:
        report["split_half"] = split_half(records)
    mc = [r["model_calls"] for r in records if isinstance(r["model_calls"], (int, float))]
    report["model_calls_total"] = sum(mc) if mc else 0
    report["responses_with_columns_cut_for_budget"] = sum(1 for r in records if r["columns_cut"])
    ct = [r["column_tokens"] for r in records if isinstance(r["column_tokens"], (int, float))]
    report["column_budget_estimated_tokens"] = benchlib.latency_summary(ct) if ct else None

    per_db = {}
    for r in records:
        per_db.setdefault(r["q"]["db_id"], []).append(r)
    report["per_database"] = {}
    for name in sorted(per_db):
        a = aggregate(per_db[name])
        a["db_tables"] = len(dbs[name].tables)
        a["db_columns"] = dbs[name].n_columns
        a.pop("latency_client_ms", None)
        a["latency_server_p50_ms"] = a.pop("latency_server_ms", {}).get("p50")
        a["prompt_tokens"] = {k: v for k, v in a["prompt_tokens"].items() if k != "approximation"}
        report["per_database"][name] = a

    misses = []
    for r in records:
        mt = sorted(r["gold_tables"] - r["tables"])
        mcol = sorted(r["gold_columns"] - r["columns"])
        if mt or mcol:
            misses.append((len(mt), len(mcol), r, mt, mcol))
    misses.sort(key=lambda m: (-m[0], -m[1], m[2]["q"]["index"]))
    report["questions_with_misses"] = len(misses)
    report["worst_misses"] = [
        {"index": r["q"]["index"], "db_id": r["q"]["db_id"], "question": r["q"]["question"], "gold_sql": r["q"]["sql"],
         "missing_tables": mt, "missing_columns": [fmt_col(c) for c in mcol],
         "returned_tables": len(r["tables"]), "returned_columns": len(r["columns"]), "error": r["error"]}
        for _, _, r, mt, mcol in misses[: args.worst]
    ]
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps({"index": r["q"]["index"], "db_id": r["q"]["db_id"], "question": r["q"]["question"],
                                    "sql": r["q"]["sql"], "gold_tables": sorted(r["gold_tables"]),
                                    "gold_columns": [fmt_col(c) for c in sorted(r["gold_columns"])],
                                    "tables": sorted(r["tables"]), "columns": [fmt_col(c) for c in sorted(r["columns"])],
                                    "scores": r.get("scores", {}), "n_db_columns": r["n_db_columns"],
                                    "error": r["error"]}, ensure_ascii=False) + "\n")
    errs = [r for r in records if r["error"]]
    report["error_samples"] = [{"index": r["q"]["index"], "db_id": r["q"]["db_id"], "error": r["error"]} for r in errs[:10]]


if __name__ == "__main__":
    sys.exit(main())
