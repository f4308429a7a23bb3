#!/usr/bin/env python3
"""peer_compare.py - text2sqld's POST /query against the peer users would
otherwise pick, LangChain.js createSqlQueryChain + SqlDatabase.run
(bench/peer_langchain/peer.mjs), on the same Spider databases, the same
zero-latency model and the same questions.

Usage:
  peer_compare.py [--dataset DIR] [--questions FILE] [--n 200] [--warmup 20]
                  [--binary PATH] [--node node] [--out FILE]

What runs (all started here, stopped at the end, by pid):
  - two bench/gold_stub.py model servers: one answering in a ```sql fence for
    text2sqld, one answering bare SQL (--bare) for LangChain, whose chain
    executes the model's text as is; each records every prompt it receives;
  - text2sqld with the dataset's databases and the first stub as its generate
    model (private state store);
  - node bench/peer_langchain/peer.mjs with the same databases and the second
    stub.  Its npm packages are installed first (npm ci) when
    bench/peer_langchain/node_modules is missing.

Questions: --n questions spread evenly over the question file (every
len/n-th, so all databases take part), the same for both.  Each system first
gets --warmup requests (text2sqld's with " (warm-up request)" appended so its
answer cache cannot serve the measured ones), then the n questions once each,
sequentially, on one keep-alive connection (TCP_NODELAY), text2sqld first.

Reported per system: whole-request wall time as the client sees it
(median, nearest-rank p50 and p90, mean; also the median over the questions
both systems answered with 200: better-sqlite3, which the peer uses as
LangChain's TypeORM driver, is built without double-quoted string literals,
so Spider gold SQL written with "..." strings fails there with
"no such column"), the answers' status with a few error bodies, and what was sent
to the model per question: prompt tokens counted by gold_stub the same way for
both (whitespace-separated tokens of all message contents) and characters,
over all model requests of the measured pass (text2sqld's correction rounds
included) and for the first request alone.  Ratios are text2sqld / LangChain.
Goals: time ratio <= 0.5, prompt-token ratio <= 0.40.

Prints one JSON document (and writes --out); exits 0 with a "skipped" message
when the dataset is absent.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
import servicelib  # noqa: E402
import spiderlib  # noqa: E402
from benchlib import emit  # noqa: E402
from querylib import WARMUP_SUFFIX  # noqa: E402

PEER_DIR = os.path.join(HERE, "peer_langchain")


def spread(items, n):
    """n items spread evenly over the list (all of them when n >= len)."""
    if n <= 0 or n >= len(items):
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]


def ensure_npm(npm):
    """npm ci in bench/peer_langchain when node_modules is missing."""
    if os.path.isdir(os.path.join(PEER_DIR, "node_modules", "@langchain", "classic")):
        return "present"
    r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PEER_DIR, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise SystemExit("npm ci in %s failed:\n%s" % (PEER_DIR, (r.stdout + r.stderr)[-2000:]))
    return "installed (npm ci)"


def wait_http(url, proc, timeout_s, path):
    client = benchlib.LinkClient(url, timeout=5.0)
    end = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit("peer exited with status %s before ready" % proc.returncode)
        try:
            status, _, text, _ = client.request("GET", path)
            if status == 200:
                return
            last = "HTTP %d %s" % (status, text[:200])
        except OSError as e:
            last = str(e)
        time.sleep(0.05)
    raise SystemExit("peer not ready after %.0f s: %s" % (timeout_s, last))


def stub_log(base_v1):
    root = base_v1.rsplit("/v1", 1)[0]
    return benchlib.LinkClient(root).get_json("/_stub/stats")


def stub_reset(base_v1):
    root = base_v1.rsplit("/v1", 1)[0]
    benchlib.LinkClient(root).request("POST", "/_stub/reset", {})


def measure(client, path, bodies, warm_bodies):
    for b in warm_bodies:
        client.request("POST", path, b)
    times, statuses, codes, errors = [], {}, [], []
    for b in bodies:
        status, resp, text, ms = client.request("POST", path, b)
        times.append(ms)
        codes.append(status)
        statuses[str(status)] = statuses.get(str(status), 0) + 1
        if status != 200 and len(errors) < 5:
            errors.append({"database": b["database"], "question": b["question"], "status": status, "body": text[:300]})
    return times, statuses, codes, errors


def summary(times, statuses, log, n):
    r = lambda x: round(x, 3)
    reqs = log["log"]
    # The stub's log holds the measured pass only (reset after warm-up); the
    # first request of each question is its first model request in order.
    first = {}
    for e in reqs:
        if e["question"] is not None and e["question"] not in first:
            first[e["question"]] = e
    return {
        "requests": len(times),
        "status_counts": statuses,
        "median_ms": r(statistics.median(times)),
        "p50_ms": r(benchlib.percentile(times, 50)),
        "p90_ms": r(benchlib.percentile(times, 90)),
        "mean_ms": r(sum(times) / len(times)),
        "model_requests": len(reqs),
        "model_requests_unmatched": log["unmatched"],
        "prompt_tokens_per_question": r(sum(e["prompt_tokens"] for e in reqs) / n),
        "prompt_chars_per_question": r(sum(e["prompt_chars"] for e in reqs) / n),
        "first_request_prompt_tokens_mean": r(sum(e["prompt_tokens"] for e in first.values()) / max(1, len(first))),
        "first_request_prompt_chars_mean": r(sum(e["prompt_chars"] for e in first.values()) / max(1, len(first))),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=os.path.join(benchlib.DATASETS, "spider-dev"))
    ap.add_argument("--questions", help="question file (default DIR/dev.json)")
    ap.add_argument("--db-dir", help="database directory (default DIR/database)")
    ap.add_argument("--db-filter", default="")
    ap.add_argument("--n", type=int, default=200, help="measured questions (default 200)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--binary")
    ap.add_argument("--node", default="node")
    ap.add_argument("--npm", default="npm")
    ap.add_argument("--ready-timeout", type=float, default=600.0)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--out")
    a = ap.parse_args()
    a.limit, a.question_key = 0, "question"

    if not spiderlib.dataset_present(a):
        return spiderlib.skip("dataset not found: %s" % (a.questions or os.path.join(a.dataset, "dev.json")), a.out)
    if not shutil.which(a.node):
        return spiderlib.skip("node not found (%s)" % a.node, a.out)
    binary = servicelib.find_binary(a.binary)
    if not binary:
        raise SystemExit("no text2sqld binary: build it or give --binary")
    questions, dbdir, qpath = spiderlib.select(a)
    chosen = spread(questions, a.n)
    warm = spread([q for q in questions if q not in chosen] or questions, a.warmup) if a.warmup > 0 else []
    report = {"dataset": os.path.abspath(a.dataset), "questions_file": os.path.abspath(qpath), "n": len(chosen),
              "warmup": len(warm), "goals": {"time_ratio": "<= 0.5", "prompt_token_ratio": "<= 0.40"}}
    report["npm"] = ensure_npm(a.npm)

    procs = servicelib.Procs()
    try:
        stub_t2s = procs.start_gold_stub([qpath], log_name="gold_stub_t2s.log")
        stub_lc = procs.start_gold_stub([qpath], bare=True, log_name="gold_stub_lc.log")
        cfg = procs.write_config(servicelib.free_port(), dbdir,
                                 servicelib.bench_extra(procs, servicelib.models_section(stub_t2s, "gold-stub")))
        t2s_url, _ = procs.start_service(binary, cfg, a.ready_timeout)
        peer_port = servicelib.free_port()
        argv = [a.node, os.path.join(PEER_DIR, "peer.mjs"), "--port", str(peer_port), "--db-dir", dbdir,
                "--base-url", stub_lc, "--model", "gold-stub"]
        if a.db_filter:
            argv += ["--databases", a.db_filter]
        peer = procs.start(argv, "peer.log", cwd=PEER_DIR)
        peer_url = "http://127.0.0.1:%d" % peer_port
        wait_http(peer_url, peer, a.ready_timeout, "/healthz")
        report["text2sqld_url"], report["peer_url"] = t2s_url, peer_url

        t2s = benchlib.LinkClient(t2s_url, None, a.timeout)
        lc = benchlib.LinkClient(peer_url, None, a.timeout)
        bodies = [{"database": q["db_id"], "question": q["question"]} for q in chosen]

        # text2sqld
        for q in warm:
            t2s.request("POST", "/query", {"database": q["db_id"], "question": q["question"] + WARMUP_SUFFIX})
        stub_reset(stub_t2s)
        t_times, t_status, t_codes, t_errors = measure(t2s, "/query", bodies, [])
        t_log = stub_log(stub_t2s)
        # LangChain.js
        for q in warm:
            lc.request("POST", "/query", {"database": q["db_id"], "question": q["question"]})
        stub_reset(stub_lc)
        l_times, l_status, l_codes, l_errors = measure(lc, "/query", bodies, [])
        l_log = stub_log(stub_lc)
    finally:
        procs.stop_all()

    ts = summary(t_times, t_status, t_log, len(chosen))
    ls = summary(l_times, l_status, l_log, len(chosen))
    ts["error_samples"], ls["error_samples"] = t_errors, l_errors
    both = [i for i in range(len(chosen)) if t_codes[i] == 200 and l_codes[i] == 200]
    if both:
        ts["median_ms_both_ok"] = round(statistics.median([t_times[i] for i in both]), 3)
        ls["median_ms_both_ok"] = round(statistics.median([l_times[i] for i in both]), 3)
    report["questions_both_ok"] = len(both)
    report["text2sqld"] = ts
    report["langchain_js"] = ls
    ratio = lambda x, y: round(x / y, 4) if y else None
    report["time_ratio"] = ratio(ts["median_ms"], ls["median_ms"])
    report["time_ratio_both_ok"] = ratio(ts.get("median_ms_both_ok"), ls.get("median_ms_both_ok"))
    report["prompt_token_ratio"] = ratio(ts["prompt_tokens_per_question"], ls["prompt_tokens_per_question"])
    report["prompt_char_ratio"] = ratio(ts["prompt_chars_per_question"], ls["prompt_chars_per_question"])
    report["first_request_prompt_token_ratio"] = ratio(ts["first_request_prompt_tokens_mean"], ls["first_request_prompt_tokens_mean"])
    report["goals_met"] = {"time": report["time_ratio"] is not None and report["time_ratio"] <= 0.5,
                           "prompt_tokens": report["prompt_token_ratio"] is not None and report["prompt_token_ratio"] <= 0.40}
    emit(report, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
