#!/usr/bin/env python3
"""query_eval.py - execution accuracy of POST /query on a Spider- or BIRD-format
dataset, against whatever model servers a config names.

Usage:
  query_eval.py --dataset DIR [--questions FILE] [--question-key question|question_syn]
                [--limit N] [--db-filter a,b] [--db-dir DIR] [--semantics spider|bird]
                ( --url http://127.0.0.1:PORT                      # a running service
                | [--binary PATH] ( --config FILE                  # start one: models from FILE
                                  | --base-url URL --model NAME [--profile P] [--api-key-env VAR]
                                  | --gold-stub ) )
                [--max-rounds N] [--concurrency N] [--timeout S] [--no-evidence] [--out FILE]

Without --url the script writes a config (make_config.py) that registers every
database of the dataset, merges the models section (--config FILE: its
"models", "generate", "link", ... members; or one endpoint from --base-url and
--model; or --gold-stub, which starts bench/gold_stub.py as the model), starts
text2sqld on a free port and stops it at the end.

Each question is sent as POST /query {database, question[, evidence]}: BIRD's
"evidence" field is sent as the request's evidence unless --no-evidence.  The
gold SQL is run here with sqlite3 on the dataset's database file (read-only).
A question counts as correct when the service answers 200 and its rows match
the gold rows:
  spider  same number of rows and columns; some order of the predicted columns
          makes the two row multisets equal; row order must be equal too when
          the gold SQL has ORDER BY (Spider's test-suite execution metric)
  bird    the two sets of rows are equal (BIRD's metric: set(pred) == set(gold))
Cells compare as numbers when numeric (integral reals equal integers, other
reals to 10 significant digits).  When the service reports truncated rows, the
returned SQL is run here in full instead.  Any other answer (422 generation
failed, 5xx, transport error) is wrong.

Questions are left out (and listed) when their gold SQL fails or when their
database holds no rows at all (nothing to compare, e.g. Spider dev's wta_1).

Difficulty: BIRD's "difficulty" field when present, else Spider's hardness from
the parsed "sql" field (the rule of Spider's evaluation.py), else "unknown".

Cost per question, from each 200 or 422 answer: model calls
(trace.model_calls), prompt and completion tokens (trace.tokens, as the model
servers report them), correction rounds (len(corrections)), which check asked
for each round, and how many corrected questions still ended correct.

Prints one JSON document (and writes --out).  Exits 0 with a "skipped" message
when the dataset is absent.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import servicelib  # noqa: E402
import spiderlib  # noqa: E402
from benchlib import emit  # noqa: E402
from querylib import add_common_args, add_service_args, ask_query, load_gold  # noqa: E402


def build_models(a, procs, question_files):
    """(models section, extra top-level members, description) from the model options."""
    extra = {}
    if a.config:
        with open(a.config, encoding="utf-8") as f:
            cfg = json.load(f)
        if "models" not in cfg:
            raise SystemExit("--config %s has no models section" % a.config)
        extra = {k: v for k, v in cfg.items() if k not in ("listen", "databases")}
        return extra.pop("models"), extra, "config " + a.config
    if a.gold_stub:
        base = procs.start_gold_stub(question_files)
        return servicelib.models_section(base, "gold-stub"), extra, "gold_stub " + base
    if a.base_url and a.model:
        return (servicelib.models_section(a.base_url, a.model, a.profile, a.api_key_env, a.model_timeout_ms),
                extra, "%s model %s" % (a.base_url, a.model))
    raise SystemExit("give --url, or --config FILE, --base-url URL --model NAME, or --gold-stub")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap)
    add_service_args(ap)
    ap.add_argument("--semantics", default="spider", choices=["spider", "bird"])
    ap.add_argument("--config", help="JSON file with a models section (other members but listen/databases are merged too)")
    ap.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    ap.add_argument("--model", help="model name at --base-url")
    ap.add_argument("--profile", help="prompt profile: default or lite-sql")
    ap.add_argument("--api-key-env", help="environment variable holding the model server's key")
    ap.add_argument("--model-timeout-ms", type=int, help="models.generate.timeout_ms")
    ap.add_argument("--gold-stub", action="store_true", help="start bench/gold_stub.py and use it as the model")
    ap.add_argument("--max-rounds", type=int, help="options.max_rounds of each request")
    ap.add_argument("--no-evidence", action="store_true", help="do not send the dataset's evidence field")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0, help="per-request timeout, seconds")
    ap.add_argument("--gold-timeout", type=float, default=60.0, help="time limit of each gold query, seconds")
    ap.add_argument("--misses", type=int, default=20, help="how many wrong answers to list")
    a = ap.parse_args()

    if not spiderlib.dataset_present(a):
        return spiderlib.skip("dataset not found: %s" % (a.questions or os.path.join(a.dataset, "dev.json")), a.out)
    questions, dbdir, qpath = spiderlib.select(a)

    # Gold results first: they decide which questions are evaluated.
    items, failures, excluded_empty = load_gold(questions, dbdir, a.gold_timeout)

    report = {"dataset": os.path.abspath(a.dataset), "questions_file": os.path.abspath(qpath),
              "question_key": a.question_key, "semantics": a.semantics,
              "gold": {"questions": len(questions), "evaluated": len(items), "failed": len(failures),
                       "failures": failures[:20], "excluded_empty_database": dict(excluded_empty)}}

    procs = servicelib.Procs()
    try:
        if a.url:
            url, report["models"] = a.url, "as configured in the running service"
        else:
            binary = servicelib.find_binary(a.binary)
            if not binary:
                raise SystemExit("no text2sqld binary: build it (meson setup build && meson compile -C build) or give --binary")
            models, extra, desc = build_models(a, procs, [qpath])
            port = a.port or servicelib.free_port()
            cfg = procs.write_config(port, dbdir, servicelib.bench_extra(procs, models, more=extra))
            url, _ = procs.start_service(binary, cfg, a.ready_timeout)
            report["models"] = desc
            report["config"] = cfg
        report["url"] = url
        client = benchlib.LinkClient(url, a.api_key, a.timeout)

        def run(item):
            q, db, gold_rows, diff = item
            body = {"database": q["db_id"], "question": q["question"]}
            ev = q["raw"].get("evidence")
            if isinstance(ev, str) and ev.strip() and not a.no_evidence:
                body["evidence"] = ev
            if a.max_rounds is not None:
                body["options"] = {"max_rounds": a.max_rounds}
            rec = ask_query(client, body, db, gold_rows, q["sql"], a.semantics, a.gold_timeout)
            rec["q"], rec["difficulty"] = q, diff
            del rec["resp"]
            return rec

        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.concurrency)) as ex:
            records = list(ex.map(run, items))
        report["wall_seconds"] = round(time.perf_counter() - t0, 3)
    finally:
        procs.stop_all()

    report.update(summarise(records))
    order = ["easy", "medium", "hard", "extra", "simple", "moderate", "challenging", "unknown"]
    groups = collections.defaultdict(list)
    for r in records:
        groups[r["difficulty"]].append(r)
    report["by_difficulty"] = {
        d: {"n": len(groups[d]), "correct": sum(r["correct"] for r in groups[d]),
            "accuracy": round(sum(r["correct"] for r in groups[d]) / len(groups[d]), 4)}
        for d in sorted(groups, key=lambda d: (order.index(d) if d in order else len(order), d))}
    wrong = [r for r in records if not r["correct"]]
    report["misses"] = [
        {"index": r["q"]["index"], "db_id": r["q"]["db_id"], "difficulty": r["difficulty"],
         "question": r["q"]["question"], "gold_sql": r["q"]["sql"], "sql": r["sql"],
         "status": r["status"], "error": r["error"], "rounds": r["rounds"]}
        for r in wrong[: a.misses]]
    emit(report, a.out)
    return 0


def summarise(records):
    n = len(records)

    def mean(key):
        v = [r[key] for r in records if r[key] is not None]
        return round(sum(v) / len(v), 3) if v else None

    status = collections.Counter(str(r["status"]) if r["status"] is not None else "transport_error" for r in records)
    return {
        "n_questions": n,
        "correct": sum(r["correct"] for r in records),
        "execution_accuracy": round(sum(r["correct"] for r in records) / n, 4) if n else None,
        "status_counts": dict(status),
        "cost_per_question": {
            "answers_with_trace": sum(1 for r in records if r["model_calls"] is not None),
            "mean_model_calls": mean("model_calls"),
            "mean_prompt_tokens": mean("prompt_tokens"),
            "mean_completion_tokens": mean("completion_tokens"),
            "mean_correction_rounds": mean("rounds"),
            "questions_with_corrections": sum(1 for r in records if r["rounds"]),
            "corrections_by_check": dict(collections.Counter(c for r in records for c in r["checks"]).most_common()),
            "corrected_but_correct": sum(1 for r in records if r["rounds"] and r["correct"]),
        },
        "cached_answers": sum(1 for r in records if r["cached"] is True),
        "truncated_answers_rerun": sum(1 for r in records if r["rerun"]),
        "latency_client_ms": benchlib.latency_summary([r["client_ms"] for r in records if r["client_ms"] is not None]),
        "latency_server_ms": benchlib.latency_summary([r["server_ms"] for r in records if r["server_ms"] is not None]),
    }


if __name__ == "__main__":
    sys.exit(main())
