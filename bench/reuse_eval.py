#!/usr/bin/env python3
"""reuse_eval.py - stored examples answering their paraphrases (issue 17, item 2).

Starts text2sqld on a Spider-layout dataset with NO generate model, so a
question is answered only from a stored example (or 422), stores examples
through POST /databases/{db}/examples and asks the other questions through
POST /query:

  --set shape  per database, questions whose gold SQL is the same up to its
               literals are paired in dataset order (1st with 2nd, 3rd with
               4th, ...): the first of a pair is stored, the second asked;
  --set values as shape, but only pairs whose SQL differs in its literals
               (the first question of each variant, variants paired in turn);
  --set syn    every `question` is stored and its `question_syn` asked
               (Spider-Syn fields; spider-train has them, dev does not).

An answer is correct when its rows match the gold SQL's on the SQLite file
(Spider's execution match, bench/spiderlib.py).  The service runs at
generate.reuse_min_similarity_no_model = --threshold; the report gives the
share answered from examples, the precision (EX among them) and latency
there, and a sweep over higher thresholds read from each answer's trace
(the first tried example at or above the threshold whose SQL passed
validation; examples the run did not try count as not answered, so the
sweep's shares are lower bounds).

Output: JSON on stdout (or --out).  Python 3 standard library only.

  python3 bench/reuse_eval.py --dataset $D/spider-train --questions $D/spider-train/train.json --set syn
  python3 bench/reuse_eval.py --dataset $D/spider-dev --set shape --threshold 0.9
"""

import argparse
import collections
import concurrent.futures
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
import servicelib  # noqa: E402
import spiderlib  # noqa: E402

SWEEP = [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99, 1.0]


def shape(sql):
    """The SQL up to its literals: strings, numbers and spacing folded, case ignored."""
    s = re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", "?", sql)
    s = re.sub(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])", "#", s)
    return re.sub(r"\s+", " ", s).strip().lower().rstrip(";").strip()


def pairs(entries, which):
    """(stored entry, asked entry, asked question text) of the set."""
    out = []
    if which == "syn":
        for e in entries:
            if isinstance(e.get("question_syn"), str) and e["question_syn"].strip():
                out.append((e, e, e["question_syn"]))
        return out
    groups = collections.defaultdict(list)
    for e in entries:
        groups[(e["db_id"], shape(e["query"]))].append(e)
    for g in groups.values():
        if which == "values":  # the first question of each SQL variant, variants paired in turn
            firsts = list({re.sub(r"\s+", " ", e["query"]).strip().lower(): e for e in reversed(g)}.values())[::-1]
            g = firsts
        for i in range(0, len(g) - 1, 2):
            out.append((g[i], g[i + 1], g[i + 1]["question"]))
    return out


def gold_rows(dbdir, db, sql, cache, timeout):
    key = (db, sql)
    if key not in cache:
        conn = spiderlib.open_db(os.path.join(dbdir, db, db + ".sqlite"))
        try:
            cache[key] = spiderlib.run_sql(conn, sql, timeout)
        except Exception:  # a gold query that fails is left out
            cache[key] = None
        finally:
            conn.close()
    return cache[key]


def answered_at(rec, t):
    """Whether rec would be answered from an example at threshold t (from its trace)."""
    for tried in rec["reuse"]:
        if "sql" not in tried:
            continue
        if tried.get("refused") == "its SQL failed validation":
            continue
        return tried["similarity"] >= t
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True, help="Spider-layout directory (database/<db>/<db>.sqlite)")
    ap.add_argument("--questions", help="question file (default DATASET/dev.json)")
    ap.add_argument("--set", choices=["shape", "values", "syn"], default="shape")
    ap.add_argument("--threshold", type=float, default=0.5, help="generate.reuse_min_similarity_no_model")
    ap.add_argument("--limit", type=int, default=0, help="at most this many asked questions (0: all)")
    ap.add_argument("--binary")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--misses", type=int, default=40, help="wrong answers listed, most similar first")
    ap.add_argument("--out")
    a = ap.parse_args()
    qpath = a.questions or os.path.join(a.dataset, "dev.json")
    if not os.path.isfile(qpath):
        return spiderlib.skip("dataset not found: %s" % qpath, a.out)
    dbdir = os.path.join(a.dataset, "database")
    with open(qpath, encoding="utf-8") as f:
        entries = json.load(f)
    work = pairs(entries, a.set)
    if a.limit:
        work = work[:a.limit]
    position = {id(e): i for i, e in enumerate(entries)}
    cache = {}
    work = [(s, q, text, gold_rows(dbdir, q["db_id"], q["query"], cache, 30.0)) for s, q, text in work]
    work = [w for w in work if w[3] is not None]

    procs = servicelib.Procs()
    report = {"dataset": os.path.abspath(a.dataset), "questions_file": os.path.abspath(qpath), "set": a.set,
              "threshold": a.threshold, "pairs": len(work)}
    try:
        binary = servicelib.find_binary(a.binary)
        if not binary:
            raise SystemExit("no text2sqld binary: build it or give --binary")
        extra = {"state": {"url": "sqlite://" + procs.path("state.sqlite")},
                 "generate": {"reuse_min_similarity_no_model": a.threshold, "cache_ttl_s": 0},
                 "auth": {"allow_anonymous_writes": True},
                 "execution": {"default_max_rows": 100000, "max_rows": 100000}}
        cfg = procs.write_config(servicelib.free_port(), dbdir, extra)
        url, _ = procs.start_service(binary, cfg)
        client = benchlib.LinkClient(url, None, 120.0)
        stored = set()
        t0 = time.perf_counter()
        for s, _, _, _ in work:
            key = (s["db_id"], s["question"], s["query"])
            if key in stored:
                continue
            stored.add(key)
            client.request("POST", "/databases/%s/examples" % s["db_id"], {"question": s["question"], "sql": s["query"]})
        report["examples_stored"] = len(stored)
        report["store_seconds"] = round(time.perf_counter() - t0, 2)

        def ask(w):
            s, q, text, gold = w
            status, body, _, ms = client.request("POST", "/query", {"database": q["db_id"], "question": text})
            body = body if isinstance(body, dict) else {}
            rec = {"index": position[id(q)], "db_id": q["db_id"], "question": text,
                   "stored": s["question"], "status": status, "ms": ms,
                   "generator": body.get("generator"), "similarity": (body.get("example") or {}).get("similarity"),
                   "sql": body.get("sql"), "gold": q["query"], "same_values": s["query"] == q["query"],
                   "reuse": ((body.get("trace") or {}).get("reuse") or [])}
            rec["answered"] = status == 200 and rec["generator"] == "example"
            rec["correct"] = rec["answered"] and not body.get("truncated") and \
                spiderlib.results_match([tuple(r) for r in body.get("rows") or []], gold, "spider", q["query"])
            return rec

        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.concurrency)) as ex:
            records = list(ex.map(ask, work))
        report["ask_seconds"] = round(time.perf_counter() - t0, 2)
    finally:
        procs.stop_all()

    def summary(recs):
        ans = [r for r in recs if r["answered"]]
        ok = sum(r["correct"] for r in ans)
        ms = sorted(r["ms"] for r in ans)
        return {"asked": len(recs), "answered": len(ans), "correct": ok,
                "share": round(len(ans) / len(recs), 4) if recs else None,
                "precision": round(ok / len(ans), 4) if ans else None,
                "p50_ms": round(ms[len(ms) // 2], 1) if ms else None,
                "p95_ms": round(ms[int(len(ms) * 0.95)], 1) if ms else None}

    report["at_threshold"] = summary(records)
    if a.set in ("shape", "values"):
        report["same_values"] = summary([r for r in records if r["same_values"]])
        report["other_values"] = summary([r for r in records if not r["same_values"]])
    report["statuses"] = dict(collections.Counter(str(r["status"]) for r in records))
    sweep = []
    for t in [x for x in SWEEP if x >= a.threshold]:
        ans = [r for r in records if r["answered"] and answered_at(r, t)]
        ok = sum(r["correct"] for r in ans)
        sweep.append({"threshold": t, "answered": len(ans), "share": round(len(ans) / len(records), 4) if records else None,
                      "precision": round(ok / len(ans), 4) if ans else None})
    report["sweep"] = sweep
    report["wrong"] = [{k: r[k] for k in ("db_id", "question", "stored", "similarity", "sql", "gold")}
                       for r in sorted(records, key=lambda r: -(r["similarity"] or 0))
                       if r["answered"] and not r["correct"]][:a.misses]
    text = json.dumps(report, indent=1)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
