#!/usr/bin/env python3
"""link_speed.py - latency, cold start and memory of POST /link on one database.

Usage:
  link_speed.py --url URL --database DB --questions FILE|builtin [--n 200] [--warmup 20]
                [--mode vector|llm|hybrid] [--pid PID | --spawn "CMD ..."] [--seed 1]
                [--schema-sqlite FILE] [--api-key K] [--out FILE]

Requests are sequential, on one keep-alive connection. Order of events:
  1. with --spawn CMD: start CMD (the service), poll GET /readyz every 10 ms until
     it answers 200 -> "time_to_ready_ms" (process start to ready);
  2. the first /link request, reported alone as "first_request" (client ms and the
     server's timings_ms): with an index built lazily on first use this is the
     cold build; with an eager build it is in time_to_ready_ms;
  3. --warmup requests, not measured;
  4. --n measured requests: client wall ms and server timings_ms.total, each as
     p50/p95/p99/mean (nearest-rank), plus the p50 of every other timings_ms step.
  RSS: with --pid (or --spawn) VmRSS/VmHWM from /proc/PID/status after ready,
  after the first request and at the end (VmHWM = peak resident set).
  A spawned process is stopped with SIGTERM at the end (only that process).
  With --wrk-rounds R (needs wrk): after the sequential requests, R rounds of
  `wrk -t1 -c16 -d<--wrk-seconds>s` on GET /healthz then on POST /link (the first
  question), each round's requests/s and their ratio -> "wrk" (link_over_healthz:
  each round's ratio, their min/median/max). Both endpoints run in the same rounds,
  so the ratio holds up on a shared machine better than either figure alone.

Questions:
  FILE ending in .json: a Spider-format list; entries with db_id == DB are used
    (all entries if none match); otherwise a text file, one question a line.
  builtin: generated from the database's own schema (GET /databases/DB, or
    --schema-sqlite FILE read locally) with a fixed seed (--seed, default 1):
    templates such as "total {column words} by {column words}" filled with the
    words of random column and table names (snake_case/camelCase split).
    The output says so ("questions.source").
  Questions are cycled if fewer than warmup + n.
"""

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from servicelib import wait_ready  # noqa: E402
from speedlib import builtin_questions, file_questions, schema_from_service, schema_from_sqlite  # noqa: E402


def proc_mem(pid):
    """VmRSS and VmHWM of a process in MiB, or None."""
    if not pid:
        return None
    try:
        with open("/proc/%d/status" % pid) as f:
            st = f.read()
    except OSError:
        return None
    out = {}
    for key in ("VmRSS", "VmHWM"):
        m = re.search(r"^%s:\s+(\d+) kB" % key, st, re.M)
        if m:
            out[key + "_mib"] = round(int(m.group(1)) / 1024.0, 1)
    return out


def wrk_rps(a, path, body):
    """Requests/s of one wrk run on path (POST body as JSON when body is not None)."""
    cmd = ["wrk", "-t1", "-c%d" % a.wrk_connections, "-d%ds" % a.wrk_seconds, "--timeout", "10s"]
    env = dict(os.environ)
    if body is not None:
        env["SOAK_BODY"] = json.dumps(body)
        cmd += ["-s", os.path.join(os.path.dirname(os.path.abspath(__file__)), "soak.lua")]
    if a.api_key:
        cmd += ["-H", "Authorization: Bearer " + a.api_key]
    p = subprocess.run(cmd + [a.url + path], env=env, capture_output=True, text=True, timeout=a.wrk_seconds + 60)
    m = re.search(r"Requests/sec:\s*([0-9.]+)", p.stdout)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", p.stdout)
    if p.returncode != 0 or not m:
        raise SystemExit("wrk failed (%d): %s %s" % (p.returncode, p.stdout[-1000:], p.stderr[-1000:]))
    return float(m.group(1)), int(non2xx.group(1)) if non2xx else 0


def wrk_ratio(a, question):
    """--wrk-rounds rounds of /healthz then /link under wrk; each round's ratio."""
    rounds = []
    for _ in range(a.wrk_rounds):
        h, h_bad = wrk_rps(a, "/healthz", None)
        l, l_bad = wrk_rps(a, "/link", {"database": a.database, "question": question, "mode": a.mode})
        rounds.append({"healthz_rps": h, "link_rps": l, "ratio": round(l / h, 4) if h else None,
                       "non_2xx": h_bad + l_bad})
    ratios = sorted(r["ratio"] for r in rounds if r["ratio"] is not None)
    return {"command": "wrk -t1 -c%d -d%ds (GET /healthz, then POST /link with bench/soak.lua)"
            % (a.wrk_connections, a.wrk_seconds), "question": question, "rounds": rounds,
            "link_over_healthz": {"min": ratios[0], "median": ratios[len(ratios) // 2], "max": ratios[-1]}
            if ratios else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--database", required=True)
    ap.add_argument("--questions", default="builtin", help="FILE (.json Spider list or text) or 'builtin'")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--mode", default="vector", choices=["vector", "llm", "hybrid"])
    ap.add_argument("--pid", type=int, help="service process id for RSS")
    ap.add_argument("--spawn", help="start this command as the service first (cold-start measurement)")
    ap.add_argument("--ready-timeout", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--schema-sqlite", help="read the schema for builtin questions from this file instead of the service")
    ap.add_argument("--api-key", default=os.environ.get("TEXT2SQLD_API_KEY"))
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--wrk-rounds", type=int, default=0, help="rounds of wrk on /healthz then /link (0: none)")
    ap.add_argument("--wrk-seconds", type=int, default=5)
    ap.add_argument("--wrk-connections", type=int, default=16)
    ap.add_argument("--out")
    a = ap.parse_args()

    client = benchlib.LinkClient(a.url, a.api_key, a.timeout)
    proc, pid, report = None, a.pid, {"url": a.url, "database": a.database, "mode": a.mode}
    try:
        if a.spawn:
            t0 = time.perf_counter()
            proc = subprocess.Popen(shlex.split(a.spawn), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            pid = proc.pid
            wait_ready(client, proc, a.ready_timeout)
            report["time_to_ready_ms"] = round((time.perf_counter() - t0) * 1000.0, 1)
            report["spawned"] = a.spawn
        report["pid"] = pid
        report["memory_after_ready"] = proc_mem(pid)

        need = a.n + a.warmup + 1
        if a.questions == "builtin":
            schema = schema_from_sqlite(a.schema_sqlite) if a.schema_sqlite else schema_from_service(client, a.database)
            qs = builtin_questions(schema, need, a.seed)
            report["questions"] = {
                "source": "builtin: generated from the schema (%s) with seed %d, templates like 'total {column words} by {column words}'"
                % ("sqlite file" if a.schema_sqlite else "GET /databases/" + a.database, a.seed),
                "schema_tables": len(schema),
                "schema_columns": sum(len(c) for _, c in schema),
                "examples": qs[:5],
            }
        else:
            qs, kind = file_questions(a.questions, a.database)
            if not qs:
                raise SystemExit("no questions in %s" % a.questions)
            report["questions"] = {"source": "%s: %s" % (kind, a.questions), "distinct": len(qs), "examples": qs[:3]}
        qs = [qs[i % len(qs)] for i in range(need)]

        try:
            doc = client.get_json("/databases/" + a.database)
            report["introspection_ms"] = doc.get("introspection_ms")
        except (benchlib.HttpError, OSError):
            pass

        def call(q):
            resp, ms = client.post_json("/link", {"database": a.database, "question": q, "mode": a.mode})
            return resp, ms

        errors, err_samples = 0, []
        try:
            resp, ms = call(qs[0])
            report["first_request"] = {"client_ms": round(ms, 3), "timings_ms": resp.get("timings_ms"),
                                       "tables": len(resp.get("tables") or []), "columns": len(resp.get("columns") or [])}
        except (benchlib.HttpError, OSError) as e:
            errors += 1
            err_samples.append(str(e)[:300])
            report["first_request"] = {"error": str(e)[:300]}
        report["memory_after_first_request"] = proc_mem(pid)

        for q in qs[1 : 1 + a.warmup]:
            try:
                call(q)
            except (benchlib.HttpError, OSError) as e:
                errors += 1
                err_samples.append(str(e)[:300])

        client_ms, server_ms, steps, n_tables, n_cols = [], [], {}, [], []
        t_run = time.perf_counter()
        for q in qs[1 + a.warmup :]:
            try:
                resp, ms = call(q)
            except (benchlib.HttpError, OSError) as e:
                errors += 1
                if len(err_samples) < 10:
                    err_samples.append(str(e)[:300])
                continue
            client_ms.append(ms)
            st = benchlib.server_total_ms(resp)
            if st is not None:
                server_ms.append(st)
            for k, v in (resp.get("timings_ms") or {}).items():
                if k != "total" and isinstance(v, (int, float)):
                    steps.setdefault(k, []).append(float(v))
            n_tables.append(len(resp.get("tables") or []))
            n_cols.append(len(resp.get("columns") or []))
        run_s = time.perf_counter() - t_run

        report.update({
            "n": a.n,
            "warmup": a.warmup,
            "errors": errors,
            "error_samples": err_samples[:10],
            "throughput_rps": round(len(client_ms) / run_s, 1) if run_s > 0 else None,
            "latency_client_ms": benchlib.latency_summary(client_ms),
            "latency_server_ms": benchlib.latency_summary(server_ms),
            "server_steps_p50_ms": {k: round(benchlib.percentile(v, 50), 3) for k, v in sorted(steps.items())},
            "mean_returned_tables": round(sum(n_tables) / len(n_tables), 2) if n_tables else None,
            "mean_returned_columns": round(sum(n_cols) / len(n_cols), 2) if n_cols else None,
            "memory_at_end": proc_mem(pid),
        })
        if a.wrk_rounds > 0:
            report["wrk"] = wrk_ratio(a, qs[0])
            report["memory_after_wrk"] = proc_mem(pid)
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    text = json.dumps(report, indent=2, ensure_ascii=False)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(text)
    return 1 if report.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
