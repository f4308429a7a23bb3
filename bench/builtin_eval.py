#!/usr/bin/env python3
"""builtin_eval.py - the built-in generator (pipeline/builtin/) on a Spider-format
dataset: how many questions it answers, how many of those are right, per hardness.

Usage:
  builtin_eval.py --dataset DIR [--questions FILE] [--question-key question[,question_syn]]
                  [--limit N] [--db-filter a,b] [--db-dir DIR]
                  ( --url http://127.0.0.1:PORT | [--binary PATH] )
                  [--concurrency N] [--dump FILE] [--baseline FILE] [--out FILE]

Without --url the script starts text2sqld with no model server (every
database of the dataset registered, make_config.py) and waits for the value
indexes.  Each question is sent as POST /query {database, question, options:
{generator: "builtin"}}.  An answer is a 200; a refusal a 422
builtin-refused (its reason is counted by code).  Correct: the rows
match the gold rows (Spider's execution metric, bench/spiderlib.py).

Figures per question set (--question-key, comma-separated: both sets in one
run) and per Spider hardness (from the parsed "sql" field; spider-train has none, so its
hardness is Spider's rule read from the gold SQL text, text_hardness, marked
"hardness_source": "sql_text"):
  answered   share of questions the built-in answers
  precision  correct among answered (EX among answered)
  ex         correct among all questions (overall EX)
and the built-in's own time per answered question (trace.builtin.ms, the
reading and SQL writing, not linking or execution) p50/p95, the whole
answer's server time (trace.timings_ms.total: linking, evidence, the built-in,
validation and execution) p50/p95, the refusals by
code, wrong answers by shape.  Output: JSON lines, one per (set, hardness)
plus one "all" line per set, then one line of refusal codes per set
({"set", "refusals": {...}}); --out writes the same lines.  --dump FILE
writes every question (answered, correct, sql, gold, refusal and reason) as
JSON lines for tuning.  --baseline FILE (a --dump file of an earlier run, e.g. of
the commit a refactor starts from) compares each question's outcome (its SQL,
or its refusal code; the confidence too when both runs recorded it) with this
run's, question by question in the same order, and adds one line per set:
{"set", "baseline": FILE, "compared", "changed": N, "changed_questions": [{db_id,
question, before, after}, ...]} (the first 200 changes listed; "changed" counts
all).  Exits 0 with a "skipped" line when the dataset is absent.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import servicelib  # noqa: E402
import spiderlib  # noqa: E402
from querylib import add_common_args, add_service_args, ask_query, question_sets  # noqa: E402

ORDER = ["easy", "medium", "hard", "extra", "unknown"]
AGG = re.compile(r"\b(count|sum|avg|min|max)\s*\(", re.I)


def text_hardness(sql):
    """Spider's hardness rule (spiderlib.hardness) read from the SQL text, for datasets without
    Spider's parsed "sql" field (spider-train): component1 counts WHERE, GROUP BY, ORDER BY,
    LIMIT, each JOIN, OR and LIKE; component2 the nested SELECTs and set operations; others
    more than one aggregate, select column, WHERE condition or GROUP BY column.  An
    approximation: figures by it are marked hardness_source "sql_text"."""
    s = " ".join(sql.split())
    low = s.lower()
    nested = len(re.findall(r"\bselect\b", low)) - 1
    c1 = sum(1 for kw in (r"\bwhere\b", r"\bgroup by\b", r"\border by\b", r"\blimit\b") if re.search(kw, low))
    c1 += len(re.findall(r"\bjoin\b", low)) + len(re.findall(r"\bor\b", low)) + len(re.findall(r"\blike\b", low))
    first = re.split(r"\b(?:intersect|union|except)\b", low)[0]
    sel = re.search(r"\bselect\b(.*?)\bfrom\b", first)
    cols = sel.group(1).count(",") + 1 if sel else 1
    where = re.search(r"\bwhere\b(.*?)(\bgroup by\b|\border by\b|\blimit\b|$)", first)
    conds = len(re.findall(r"\band\b", where.group(1))) - len(re.findall(r"\bbetween\b", where.group(1))) + 1 if where else 0
    group = re.search(r"\bgroup by\b(.*?)(\bhaving\b|\border by\b|\blimit\b|$)", first)
    others = (len(AGG.findall(first)) > 1) + (cols > 1) + (conds > 1) + (bool(group) and group.group(1).count(",") > 0)
    if c1 <= 1 and others == 0 and nested == 0:
        return "easy"
    if (others <= 2 and c1 <= 1 and nested == 0) or (c1 <= 2 and others < 2 and nested == 0):
        return "medium"
    if ((others > 2 and c1 <= 2 and nested == 0) or (2 < c1 <= 3 and others <= 2 and nested == 0)
            or (c1 <= 1 and others == 0 and nested <= 1)):
        return "hard"
    return "extra"


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return round(v[min(len(v) - 1, int(p * len(v)))], 4)


def figures(records):
    n = len(records)
    answered = [r for r in records if r["status"] == 200]
    correct = sum(r["correct"] for r in answered)
    return {"n": n, "answered": len(answered), "correct": correct,
            "answered_share": round(len(answered) / n, 4) if n else None,
            "precision": round(correct / len(answered), 4) if answered else None,
            "ex": round(correct / n, 4) if n else None}


def outcome(answered, sql, refusal, confidence):
    """One question's outcome as compared by --baseline: the SQL when answered, else the refusal code."""
    return {"sql": sql} if answered else {"refusal": refusal}, confidence


def load_baseline(path):
    """A --dump file's outcomes per question set, in the file's order."""
    sets = collections.defaultdict(list)
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                sets[d["set"]].append(d)
    return sets


def compare_baseline(path, key, before, records):
    """The questions of set key whose outcome differs from the baseline's (same questions, same order)."""
    changed = []
    for i, r in enumerate(records):
        q = r["q"]
        b = before[i] if i < len(before) else None
        if b is not None and (b["db_id"], b["question"]) != (q["db_id"], q["question"]):
            raise SystemExit("--baseline %s: question %d of set %s is another question" % (path, i, key))
        now, conf = outcome(r["status"] == 200, r["sql"], r["refusal"], r["confidence"] if r["status"] == 200 else None)
        if b is None:
            changed.append({"db_id": q["db_id"], "question": q["question"], "before": None, "after": now})
            continue
        was, was_conf = outcome(b["answered"], b["sql"], b["refusal"], b.get("confidence"))
        if now != was or ("confidence" in b and was_conf != conf):
            changed.append({"db_id": q["db_id"], "question": q["question"],
                            "before": dict(was, confidence=was_conf), "after": dict(now, confidence=conf)})
    return {"set": key, "baseline": path, "compared": min(len(before), len(records)),
            "baseline_questions": len(before), "changed": len(changed), "changed_questions": changed[:200]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap)
    add_service_args(ap)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0, help="per-request timeout, seconds")
    ap.add_argument("--gold-timeout", type=float, default=60.0)
    ap.add_argument("--dump", help="write every question's outcome as JSON lines here")
    ap.add_argument("--baseline", help="an earlier run's --dump file: list the questions whose SQL or "
                    "refusal code differs in this run")
    # add_common_args restricts --question-key to one set; this bench takes a list
    for act in ap._actions:
        if act.dest == "question_key":
            act.choices = None
    a = ap.parse_args()
    keys = [k for k in a.question_key.split(",") if k]
    lines = []

    def out(obj):
        lines.append(obj)
        print(json.dumps(obj, ensure_ascii=False))
        sys.stdout.flush()

    if not spiderlib.dataset_present(a):
        out({"skipped": "dataset not found: %s" % (a.questions or os.path.join(a.dataset, "dev.json"))})
        return 0
    baseline = load_baseline(a.baseline) if a.baseline else None
    procs = servicelib.Procs()
    dump = open(a.dump, "w", encoding="utf-8") if a.dump else None
    try:
        url = a.url
        sets, dbdir = question_sets(a, keys)
        if not url:
            binary = servicelib.find_binary(a.binary)
            if not binary:
                raise SystemExit("no text2sqld binary: build it or give --binary")
            port = a.port or servicelib.free_port()
            cfg = procs.write_config(port, dbdir, servicelib.bench_extra(procs, {}))
            url, _ = procs.start_service(binary, cfg, a.ready_timeout)
        client = benchlib.LinkClient(url, a.api_key, a.timeout)
        for key, items in sets:
            def run(item):
                q, db, gold_rows, diff = item
                body = {"database": q["db_id"], "question": q["question"], "options": {"generator": "builtin"}}
                rec = ask_query(client, body, db, gold_rows, q["sql"])
                resp = rec.pop("resp") or {}
                b = ((resp.get("trace") or {}).get("builtin") or {}) if rec["status"] == 200 else {}
                rec["builtin_ms"] = b.get("ms")
                rec["shape"] = b.get("shape")
                rec["confidence"] = resp.get("confidence")
                rec["refusal"] = ((resp.get("builtin") or {}).get("refusal") if rec["status"] != 200 else None)
                rec["reason"] = ((resp.get("builtin") or {}).get("reason") if rec["status"] != 200 else None)
                rec["q"], rec["difficulty"] = q, diff if diff != "unknown" else text_hardness(q["sql"])
                rec["hardness_source"] = "parsed" if diff != "unknown" else "sql_text"
                return rec
            t0 = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.concurrency)) as ex:
                records = list(ex.map(run, items))
            wall = round(time.perf_counter() - t0, 2)
            groups = collections.defaultdict(list)
            for r in records:
                groups[r["difficulty"]].append(r)
            source = records[0]["hardness_source"] if records else None
            for d in sorted(groups, key=lambda d: ORDER.index(d) if d in ORDER else len(ORDER)):
                out(dict({"dataset": os.path.basename(os.path.abspath(a.dataset)), "set": key, "hardness": d,
                          "hardness_source": source}, **figures(groups[d])))
            ms = [r["builtin_ms"] for r in records if isinstance(r.get("builtin_ms"), (int, float))]
            total = [r["server_ms"] for r in records if r["status"] == 200 and isinstance(r.get("server_ms"), (int, float))]
            shapes = collections.Counter(r["shape"] for r in records if r["status"] == 200)
            wrong = collections.Counter(r["shape"] for r in records if r["status"] == 200 and not r["correct"])
            out(dict({"dataset": os.path.basename(os.path.abspath(a.dataset)), "set": key, "hardness": "all"},
                     **figures(records), builtin_ms_p50=pct(ms, 0.5), builtin_ms_p95=pct(ms, 0.95),
                     answer_ms_p50=pct(total, 0.5), answer_ms_p95=pct(total, 0.95),
                     answered_by_shape=dict(shapes), wrong_by_shape=dict(wrong), wall_seconds=wall,
                     other_errors=sum(1 for r in records if r["status"] != 200 and not r["refusal"])))
            refusals = collections.Counter(r["refusal"] or ("http_%s" % r["status"]) for r in records
                                           if r["status"] != 200)
            out({"set": key, "refusals": dict(refusals.most_common())})
            if baseline is not None:
                out(compare_baseline(a.baseline, key, baseline.get(key, []), records))
            if dump:
                for r in records:
                    dump.write(json.dumps({"set": key, "answered": r["status"] == 200, "correct": r["correct"],
                                           "db_id": r["q"]["db_id"], "question": r["q"]["question"],
                                           "sql": r["sql"], "gold": r["q"]["sql"], "shape": r["shape"],
                                           "confidence": r["confidence"] if r["status"] == 200 else None,
                                           "refusal": r["refusal"], "reason": r["reason"],
                                           "hardness": r["difficulty"]}, ensure_ascii=False) + "\n")
    finally:
        procs.stop_all()
        if dump:
            dump.close()
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            for obj in lines:
                f.write(json.dumps(obj, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
