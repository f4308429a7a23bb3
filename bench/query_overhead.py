#!/usr/bin/env python3
"""query_overhead.py - everything but model time per POST /query: the cost of
the pipeline itself (linking, evidence, prompt, model client, reply parsing,
validation, execution, HTTP), measured with a zero-latency model.

Usage:
  query_overhead.py [--dataset DIR] [--questions FILE] [--limit N] [--db-filter a,b]
                    [--warmup 50] [--url URL | --binary PATH] [--out FILE]

Without --url, bench/gold_stub.py (zero latency, answers the gold SQL) and
text2sqld are started with a private state store and the answer cache off
(generate.cache_ttl_s = 0), so every request runs the whole pipeline.  With
--url, the running service should use a zero-latency model.

The first --warmup questions are sent once unmeasured, with " (warm-up
request)" appended so that the measured requests cannot hit the service's
answer cache (gold_stub still finds the question inside); then every selected
question is sent once, sequentially, on one keep-alive connection
(TCP_NODELAY).  Answers marked cached (a question text repeated in the
selection) are counted and left out.  Per request:
  overhead_ms        = client wall time - Σ trace.model_calls[*].elapsed_ms
  server_overhead_ms = trace.timings_ms.total - Σ trace.model_calls[*].elapsed_ms
The model time is what the service measured around each model call, so the
stub's own handling and the loopback round trip count as model time.  Reported
as nearest-rank p50/p90/p99 (and mean, max), over all answers and over the
answers without correction rounds, plus the p50 of each timings_ms step.
Answers other than 200 are counted and left out.  Goal: p50 <= 2 ms.

Prints one JSON document (and writes --out); exits 0 with a "skipped" message
when the dataset is absent.
"""

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import servicelib  # noqa: E402
import spiderlib  # noqa: E402
from benchlib import emit  # noqa: E402
from querylib import WARMUP_SUFFIX, add_common_args, add_service_args  # noqa: E402


def dist(values):
    if not values:
        return {"n": 0}
    r = lambda x: round(x, 3)
    return {"n": len(values), "p50": r(benchlib.percentile(values, 50)), "p90": r(benchlib.percentile(values, 90)),
            "p99": r(benchlib.percentile(values, 99)), "mean": r(sum(values) / len(values)), "max": r(max(values))}


def model_ms(resp):
    """Σ elapsed_ms of trace.model_calls, the number of calls, or (None, None)."""
    calls = (resp.get("trace") or {}).get("model_calls")
    if not isinstance(calls, list):
        return None, None
    total = 0.0
    for c in calls:
        if isinstance(c, dict) and isinstance(c.get("elapsed_ms"), (int, float)):
            total += float(c["elapsed_ms"])
    return total, len(calls)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap)
    add_service_args(ap)
    ap.add_argument("--warmup", type=int, default=50, help="unmeasured requests first (default 50)")
    ap.add_argument("--timeout", type=float, default=60.0)
    a = ap.parse_args()

    if not spiderlib.dataset_present(a):
        return spiderlib.skip("dataset not found: %s" % (a.questions or os.path.join(a.dataset, "dev.json")), a.out)
    questions, dbdir, qpath = spiderlib.select(a)
    report = {"dataset": os.path.abspath(a.dataset), "questions_file": os.path.abspath(qpath),
              "question_key": a.question_key, "goal": "overhead_ms.p50 <= 2"}
    procs = servicelib.Procs()
    try:
        if a.url:
            url = a.url
        else:
            binary = servicelib.find_binary(a.binary)
            if not binary:
                raise SystemExit("no text2sqld binary: build it or give --binary")
            base = procs.start_gold_stub([qpath])
            extra = servicelib.bench_extra(procs, servicelib.models_section(base, "gold-stub"),
                                           generate={"cache_ttl_s": 0})
            cfg = procs.write_config(a.port or servicelib.free_port(), dbdir, extra)
            url, _ = procs.start_service(binary, cfg, a.ready_timeout)
            report["model"] = "gold_stub " + base
        report["url"] = url
        client = benchlib.LinkClient(url, a.api_key, a.timeout)

        def send(q, suffix=""):
            return client.request("POST", "/query", {"database": q["db_id"], "question": q["question"] + suffix})

        for i in range(min(a.warmup, len(questions))):
            send(questions[i], WARMUP_SUFFIX)
        rows, statuses, steps = [], collections.Counter(), collections.defaultdict(list)
        cached = 0
        by_check = collections.Counter()  # the check each correction turn answered
        t0 = time.perf_counter()
        for q in questions:
            status, resp, text, ms = send(q)
            statuses[str(status)] += 1
            if status != 200 or not isinstance(resp, dict):
                continue
            if resp.get("cached"):
                cached += 1
                continue
            m, n_calls = model_ms(resp)
            if m is None:
                continue
            tm = (resp.get("trace") or {}).get("timings_ms") or {}
            total = tm.get("total") if isinstance(tm.get("total"), (int, float)) else None
            for k, v in tm.items():
                if isinstance(v, (int, float)):
                    steps[k].append(float(v))
            rounds = len(resp.get("corrections") or [])
            for c in resp.get("corrections") or []:
                by_check[str(c.get("check"))] += 1
            rows.append({"client": ms, "model": m, "calls": n_calls, "rounds": rounds,
                         "overhead": ms - m, "server_overhead": (total - m) if total is not None else None})
        report["wall_seconds"] = round(time.perf_counter() - t0, 3)
    finally:
        procs.stop_all()

    plain = [r for r in rows if r["rounds"] == 0]
    report.update({
        "n_questions": len(questions),
        "warmup": min(a.warmup, len(questions)),
        "measured": len(rows),
        "status_counts": dict(statuses),
        "cached_answers_left_out": cached,
        "overhead_ms": dist([r["overhead"] for r in rows]),
        "server_overhead_ms": dist([r["server_overhead"] for r in rows if r["server_overhead"] is not None]),
        "overhead_ms_without_corrections": dist([r["overhead"] for r in plain]),
        "client_ms": dist([r["client"] for r in rows]),
        "model_ms": dist([r["model"] for r in rows]),
        "mean_model_calls": round(sum(r["calls"] for r in rows) / len(rows), 3) if rows else None,
        "answers_with_corrections": len(rows) - len(plain),
        "corrections_by_check": dict(by_check.most_common()),
        "timings_ms_p50": {k: round(benchlib.percentile(v, 50), 3) for k, v in sorted(steps.items())},
    })
    if rows:
        report["goal_met"] = report["overhead_ms"]["p50"] <= 2.0
    emit(report, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
