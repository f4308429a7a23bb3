#!/usr/bin/env python3
"""builtin_speed.py - latency of POST /query answered or refused by the built-in
generator (options.generator "builtin") on one database, wide schemas included.

Usage:
  builtin_speed.py --url URL --database DB [--questions FILE|builtin] [--n 100] [--warmup 10]
                   [--spawn "CMD ..."] [--seed 1] [--api-key K] [--out FILE]

Questions as in link_speed.py: a Spider-format .json list (entries of DB), a text
file (one a line), or "builtin": generated from the database's schema with a
fixed seed.  Requests are sequential on one keep-alive connection; an answer
(200) and a refusal (422 builtin-refused) are both measured, since the
built-in reads the question either way.  With --spawn the command is started
first and stopped with SIGTERM at the end.

Output (one JSON object; --out writes it too): client wall ms of every measured
request (p50/p95/p99/mean), of the answered and the refused ones apart, the
answered share, the other statuses, and the questions' source.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from servicelib import wait_ready  # noqa: E402
from speedlib import builtin_questions, file_questions, schema_from_service  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--database", required=True)
    ap.add_argument("--questions", default="builtin")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--spawn")
    ap.add_argument("--ready-timeout", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--api-key", default=os.environ.get("TEXT2SQLD_API_KEY"))
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--out")
    a = ap.parse_args()

    client = benchlib.LinkClient(a.url, a.api_key, a.timeout)
    proc, report = None, {"url": a.url, "database": a.database}
    try:
        if a.spawn:
            proc = subprocess.Popen(shlex.split(a.spawn), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_ready(client, proc, a.ready_timeout)
            report["spawned"] = a.spawn
        if a.questions == "builtin":
            schema = schema_from_service(client, a.database)
            qs = builtin_questions(schema, a.n + a.warmup, a.seed)
            report["questions"] = {"source": "builtin (seed %d)" % a.seed, "schema_tables": len(schema),
                                   "schema_columns": sum(len(c) for _, c in schema), "examples": qs[:3]}
        else:
            qs, kind = file_questions(a.questions, a.database)
            if not qs:
                raise SystemExit("no questions in %s" % a.questions)
            report["questions"] = {"source": "%s: %s" % (kind, a.questions), "distinct": len(qs)}
        qs = [qs[i % len(qs)] for i in range(a.n + a.warmup)]
        measured = {"answered": [], "refused": []}
        other = {}
        for i, q in enumerate(qs):
            status, _, _, ms = client.request("POST", "/query", {"database": a.database, "question": q,
                                                                  "options": {"generator": "builtin"}})
            if i < a.warmup:
                continue
            if status == 200:
                measured["answered"].append(ms)
            elif status == 422:
                measured["refused"].append(ms)
            else:
                other[str(status)] = other.get(str(status), 0) + 1
        every = measured["answered"] + measured["refused"]
        report.update({"query_ms": benchlib.latency_summary(every),
                       "answered_ms": benchlib.latency_summary(measured["answered"]),
                       "refused_ms": benchlib.latency_summary(measured["refused"]),
                       "answered_share": round(len(measured["answered"]) / len(every), 4) if every else None,
                       "other_statuses": other})
    finally:
        if proc:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    text = json.dumps(report, indent=2)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
