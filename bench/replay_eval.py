#!/usr/bin/env python3
"""replay_eval.py - text2sqld's validation, correction and voting measured on
what real models wrote: published systems' Spider dev predictions replayed
through POST /query by bench/replay_stub.py.

Usage:
  replay_eval.py [--dataset DIR] [--predictions DIR] [--db-filter a,b] [--limit N]
                 [--systems all|A,B,...]                      # each system alone, validation only
                 [--vote A,B,C,D,E]                           # candidates = n systems, max_rounds 0
                 [--correction FIRST --second-opinions A,B,...] [--max-rounds N]
                 [--held-out] [--binary PATH] [--concurrency N] [--timeout S] [--out FILE]

Without any of --systems, --vote, --correction: --systems all.

The questions are those of the prediction files (--predictions, default
$T2S_DATASETS/spider-dev-predictions, see benchlib.DATASETS; index into DIR/dev.json, whose
`query` is the gold), after --db-filter and --limit.  Those files cover 9 of
the 20 dev databases, the tuning set; --held-out reports the dev questions of
the other databases instead, and that no prediction exists for them (no figure
can be computed there).  Every figure says which databases it was computed on.

One replay_stub.py serves every run; each run starts its own text2sqld
(the service's databases: only those of the questions; models.generate and
models.debug: the stub, model = the run's systems; answer cache off, so every
request reaches the model) and POSTs every question once:

  single      options {max_rounds: 0, candidates: 1}: the system's SQL, validated
              and executed, nothing else.  EX through the service against the
              system's SQL executed here directly (they should agree); the flags
              of the final answer's validation: "flagged" = a failing check of
              severity error, "warned" = a failing warning; a 2x2 table
              (correct/wrong x flagged/not), wrong split into executing (the
              system's SQL runs here) and not; per check: fired, precision
              (fired on wrong / fired), recall (fired on wrong / wrong), recall on
              wrong-but-executing, false-alarm rate (fired on correct / correct).
              "pooled" sums every system's answers.
  vote        options {max_rounds: 0, candidates: n}, the k-th candidate answered
              by the k-th system: EX of the service's choice against each system
              alone (executed directly), the best of them, and the oracle (some
              candidate right); the winning vote counts (0: no candidate passed
              every check, so none was voted for), with EX in each group.
  correction  options {candidates: 1[, max_rounds: N]}: FIRST answers the first
              round, the correction turns go to the second opinions in order:
              EX against FIRST alone, model calls and prompt tokens per question
              (trace.model_calls, trace.tokens.prompt), corrections by check,
              questions fixed and broken, which systems were asked (the stub's
              /_stub/stats).

Correctness is query_eval.py's (Spider semantics: spiderlib.results_match).
Prints one JSON document (and writes --out) and a short summary on stderr.
"""

import argparse
import collections
import json
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import replaylib  # noqa: E402
import servicelib  # noqa: E402
import spiderlib  # noqa: E402
from benchlib import emit  # noqa: E402
from querylib import add_common_args, ask_query, load_gold  # noqa: E402
from stublib import DEFAULT_PREDICTIONS, Predictions  # noqa: E402


def rate(num, den):
    return round(num / den, 4) if den else None


def pct(x):
    return "-" if x is None else "%.1f%%" % (100.0 * x)


# ---- direct execution -----------------------------------------------------------

def direct(items, preds, system, timeout):
    """{dev index: {"executes", "correct", "error"}} of system's SQL run here on each item."""
    out = {}
    for q, db, gold_rows, _ in items:
        sql = preds.sql[system].get(q["index"])
        r = {"executes": False, "correct": False, "error": None}
        if sql is None:
            r["error"] = "no prediction"
        else:
            try:
                rows = spiderlib.run_sql(db.conn, sql, timeout)
                r["executes"] = True
                r["correct"] = spiderlib.results_match(rows, gold_rows, "spider", q["sql"])
            except (sqlite3.Error, spiderlib.QueryTimeout, ValueError) as e:
                r["error"] = str(e)[:200]
        out[q["index"]] = r
    return out


# ---- one run: a service answering through the stub ------------------------------

def failing(resp, severity):
    """Names of the failing checks of the final answer's validation with severity."""
    v = resp.get("validation") if isinstance(resp, dict) else None
    if not isinstance(v, list):
        return []
    return [c.get("check") for c in v if isinstance(c, dict) and c.get("ok") is False and c.get("severity") == severity]


def run_service(a, ctx, model, options, n_candidates):
    """POST /query every item to a text2sqld whose generate/debug model is the stub
    with model name `model`; returns (records, seconds, stub stats)."""

    def one(client, item):
        q, db, gold_rows, _ = item
        body = {"database": q["db_id"], "question": q["question"], "options": options}
        rec = ask_query(client, body, db, gold_rows, q["sql"], "spider", a.gold_timeout)
        resp = rec.pop("resp")
        rec["index"] = q["index"]
        rec["errors"] = failing(resp, "error")
        rec["warnings"] = failing(resp, "warning")
        if a.dump:
            v = resp.get("validation") if isinstance(resp, dict) else None
            rec["failed_checks"] = [{"check": c.get("check"), "severity": c.get("severity"),
                                     "detail": c.get("detail")} for c in (v if isinstance(v, list) else [])
                                    if isinstance(c, dict) and c.get("ok") is False]
        cands = resp.get("candidates") if isinstance(resp, dict) else None
        rec["votes"] = [c.get("votes") for c in cands if isinstance(c, dict)] if isinstance(cands, list) else None
        chosen = [c.get("votes") for c in cands or [] if isinstance(c, dict) and c.get("chosen")]
        rec["chosen_votes"] = chosen[0] if chosen else None
        return rec

    return replaylib.serve_questions(ctx, model, n_candidates, one, port=a.port, ready_timeout=a.ready_timeout,
                                     api_key=a.api_key, timeout=a.timeout, concurrency=a.concurrency)


def base_summary(records):
    n = len(records)
    correct = sum(r["correct"] for r in records)
    status = collections.Counter(str(r["status"]) if r["status"] is not None else "transport_error" for r in records)
    return {"n_questions": n, "correct": correct, "ex": rate(correct, n), "status_counts": dict(status)}


# ---- flags --------------------------------------------------------------------------

def flag_stats(rows):
    """Flags against correctness.  rows: dicts with correct, executes (the SQL runs
    here), errors and warnings (failing check names of each severity)."""
    classes = {"correct": lambda r: r["correct"], "wrong": lambda r: not r["correct"],
               "wrong_executing": lambda r: not r["correct"] and r["executes"],
               "wrong_not_executing": lambda r: not r["correct"] and not r["executes"]}
    size = {c: sum(1 for r in rows if f(r)) for c, f in classes.items()}

    def table(flag):
        t = {c: {"flagged": sum(1 for r in rows if f(r) and flag(r)),
                 "not_flagged": sum(1 for r in rows if f(r) and not flag(r))} for c, f in classes.items()}
        flagged = t["correct"]["flagged"] + t["wrong"]["flagged"]
        t["precision"] = rate(t["wrong"]["flagged"], flagged)
        t["recall"] = rate(t["wrong"]["flagged"], size["wrong"])
        t["recall_wrong_executing"] = rate(t["wrong_executing"]["flagged"], size["wrong_executing"])
        t["false_alarm_rate"] = rate(t["correct"]["flagged"], size["correct"])
        return t

    per_check = {}
    for severity, key in (("error", "errors"), ("warning", "warnings")):
        for name in sorted({c for r in rows for c in r[key]}):
            fired = [r for r in rows if name in r[key]]
            on_wrong = sum(1 for r in fired if not r["correct"])
            on_exec = sum(1 for r in fired if not r["correct"] and r["executes"])
            per_check["%s (%s)" % (name, severity)] = {
                "check": name, "severity": severity, "fired": len(fired),
                "fired_on_correct": len(fired) - on_wrong, "fired_on_wrong": on_wrong,
                "precision": rate(on_wrong, len(fired)), "recall": rate(on_wrong, size["wrong"]),
                "recall_wrong_executing": rate(on_exec, size["wrong_executing"]),
                "false_alarm_rate": rate(len(fired) - on_wrong, size["correct"])}
    return {"answers": size, "flagged_error": table(lambda r: bool(r["errors"])),
            "warned": table(lambda r: bool(r["warnings"])), "per_check": per_check}


def single_run(a, ctx, system):
    records, seconds, stats = run_service(a, ctx, system, {"max_rounds": 0, "candidates": 1}, 1)
    dx = ctx["direct"][system]
    out = base_summary(records)
    out["ex_direct"] = rate(sum(dx[r["index"]]["correct"] for r in records), len(records))
    lost = [r for r in records if dx[r["index"]]["correct"] and not r["correct"]]
    gained = [r for r in records if r["correct"] and not dx[r["index"]]["correct"]]
    out["lost_through_service"] = len(lost)
    out["gained_through_service"] = len(gained)
    out["disagreements"] = [{"index": r["index"], "direct_correct": dx[r["index"]]["correct"],
                             "service_correct": r["correct"], "status": r["status"], "error": r["error"],
                             "sql": r["sql"]} for r in (lost + gained)[:10]]
    rows = [{"correct": r["correct"], "executes": dx[r["index"]]["executes"], "errors": r["errors"],
             "warnings": r["warnings"]} for r in records]
    out["flags"] = flag_stats(rows)
    if a.dump:
        with open(a.dump, "a") as f:
            for r in records:
                if r["failed_checks"]:
                    f.write(json.dumps({"system": system, "index": r["index"], "correct": r["correct"],
                                        "executes": dx[r["index"]]["executes"], "sql": r["sql"],
                                        "failed": r["failed_checks"]}) + "\n")
    out["wall_seconds"] = seconds
    out["stub"] = stats
    return out, rows


def winning_votes(records):
    """{votes of the chosen candidate: {questions, correct}}: the candidates whose
    result equals the chosen one's, itself included (a service that marks no
    candidate "chosen": the largest count; there 0 meant no candidate passed
    every check)."""
    groups = collections.defaultdict(lambda: {"questions": 0, "correct": 0})
    for r in records:
        v = r.get("chosen_votes")
        if v is None and r["votes"]:
            v = max(r["votes"])
        g = groups[str(v)]
        g["questions"] += 1
        g["correct"] += r["correct"]
    return dict(sorted(groups.items()))


def vote_run(a, ctx, systems):
    n = len(systems)
    records, seconds, stats = run_service(a, ctx, ",".join(systems), {"max_rounds": 0, "candidates": n}, n)
    out = base_summary(records)
    alone = {s: rate(sum(ctx["direct"][s][r["index"]]["correct"] for r in records), len(records)) for s in systems}
    best = max(systems, key=lambda s: alone[s])
    oracle = sum(any(ctx["direct"][s][r["index"]]["correct"] for s in systems) for r in records)
    out.update({"systems": systems, "candidates": n, "ex_alone_direct": alone, "best_single": best,
                "best_single_ex": alone[best], "oracle_ex": rate(oracle, len(records)),
                "recovered_share": rate(out["ex"] - alone[best], rate(oracle, len(records)) - alone[best])
                if out["ex"] is not None and oracle else None,
                "winning_votes": winning_votes(records),
                "wall_seconds": seconds, "stub": stats})
    return out


def correction_run(a, ctx, first, others):
    systems = [first] + others
    options = {"candidates": 1}
    if a.max_rounds is not None:
        options["max_rounds"] = a.max_rounds
    records, seconds, stats = run_service(a, ctx, ",".join(systems), options, 1)
    out = base_summary(records)
    dx = ctx["direct"][first]
    calls = [r["model_calls"] for r in records if r["model_calls"] is not None]
    toks = [r["prompt_tokens"] for r in records if r["prompt_tokens"] is not None]
    out.update({
        "first": first, "second_opinions": others, "max_rounds": a.max_rounds if a.max_rounds is not None else "service default",
        "first_alone_ex_direct": rate(sum(dx[r["index"]]["correct"] for r in records), len(records)),
        "model_calls_per_question": round(sum(calls) / len(calls), 3) if calls else None,
        "prompt_tokens_per_question": round(sum(toks) / len(toks), 1) if toks else None,
        "questions_with_corrections": sum(1 for r in records if r["rounds"]),
        "corrections_by_check": dict(collections.Counter(c for r in records for c in r["checks"]).most_common()),
        "fixed": sum(1 for r in records if r["correct"] and not dx[r["index"]]["correct"]),
        "broken": sum(1 for r in records if not r["correct"] and dx[r["index"]]["correct"]),
        "wall_seconds": seconds, "stub": stats})
    if a.dump:
        with open(a.dump, "a") as f:
            for r in records:
                f.write(json.dumps({"run": "correction", "first": first, "index": r["index"],
                                    "correct": r["correct"], "first_correct": dx[r["index"]]["correct"],
                                    "model_calls": r["model_calls"], "checks": r["checks"], "sql": r["sql"],
                                    "errors": r["errors"], "warnings": r["warnings"],
                                    "failed": r.get("failed_checks", [])}) + "\n")
    return out


# ---- main -----------------------------------------------------------------------------

def systems_arg(preds, spec, what):
    if spec == "all":
        return preds.systems
    names = preds.parse_systems(spec)
    if names is None:
        raise SystemExit("%s %r: unknown system; known: %s" % (what, spec, ", ".join(preds.systems)))
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap)
    ap.add_argument("--predictions", default=DEFAULT_PREDICTIONS, help="directory of <system>.json prediction files")
    ap.add_argument("--systems", help="'all' or comma-separated systems, each measured alone (validation only)")
    ap.add_argument("--vote", help="comma-separated systems answering the candidates of one request")
    ap.add_argument("--correction", metavar="FIRST", help="the system answering first")
    ap.add_argument("--second-opinions", help="comma-separated systems answering the correction turns, in order")
    ap.add_argument("--max-rounds", type=int, help="options.max_rounds of --correction (default: the service's)")
    ap.add_argument("--held-out", action="store_true", help="the dev databases without predictions (reports that none exist)")
    ap.add_argument("--binary", help="text2sqld binary (default $TEXT2SQLD_BIN, build/text2sqld, /tmp/bench-build/text2sqld)")
    ap.add_argument("--port", type=int, default=0, help="port of each started service (default: a free one)")
    ap.add_argument("--ready-timeout", type=float, default=600.0)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--dump", help="append each single run's answers with a failing check (system, index, "
                    "correct, executes, sql, failed checks with details), and every question of a correction "
                    "run (first, index, correct, first_correct, model_calls, checks, sql, failed checks), "
                    "to this JSON-lines file")
    ap.add_argument("--generate-option", action="append", default=[], metavar="KEY=JSON",
                    help="a setting of the services' generate section, e.g. vote_by_confidence=true (repeatable)")
    ap.add_argument("--timeout", type=float, default=300.0, help="per-request timeout, seconds")
    ap.add_argument("--gold-timeout", type=float, default=60.0, help="time limit of each query run here, seconds")
    a = ap.parse_args()

    if not spiderlib.dataset_present(a):
        return spiderlib.skip("dataset not found: %s" % (a.questions or os.path.join(a.dataset, "dev.json")), a.out)
    preds = Predictions(a.predictions)
    tuning = preds.databases()
    questions, dbdir, qpath = spiderlib.select(a)
    report = {"dataset": os.path.abspath(a.dataset), "predictions": os.path.abspath(a.predictions),
              "tuning_databases": tuning}

    if a.held_out:
        held = [q for q in questions if q["db_id"] not in tuning]
        per_db = collections.Counter(q["db_id"] for q in held)
        report["held_out"] = {
            "databases": sorted(per_db), "questions": len(held), "per_database": dict(sorted(per_db.items())),
            "predictions": sum(1 for q in held if q["index"] in preds.questions),
            "figures": None,
            "note": "the prediction files hold no answer for these databases: no held-out figure can be "
                    "computed; every figure of this bench is on the tuning databases"}
        print("held-out: %d questions on %d databases, %d predictions: nothing to measure"
              % (len(held), len(per_db), report["held_out"]["predictions"]), file=sys.stderr)
        emit(report, a.out)
        return 0

    if not (a.systems or a.vote or a.correction):
        a.systems = "all"
    singles = systems_arg(preds, a.systems, "--systems") if a.systems else []
    vote = systems_arg(preds, a.vote, "--vote") if a.vote else []
    first = systems_arg(preds, a.correction, "--correction") if a.correction else []
    others = systems_arg(preds, a.second_opinions, "--second-opinions") if a.second_opinions else []
    if a.correction and (len(first) != 1 or not others):
        raise SystemExit("--correction takes one system and needs --second-opinions")

    questions = [q for q in questions if q["index"] in preds.questions]
    if not questions:
        raise SystemExit("no question with predictions (the tuning databases are %s)" % ", ".join(tuning))
    items, failures, excluded = load_gold(questions, dbdir, a.gold_timeout)
    dbs = sorted({q["db_id"] for q, _, _, _ in items})
    report["databases"] = {"set": "tuning" if dbs == tuning else "tuning subset (--db-filter/--limit)",
                           "names": dbs, "questions": len(items)}
    report["gold"] = {"questions": len(questions), "evaluated": len(items), "failed": len(failures),
                      "failures": failures[:20], "excluded_empty_database": dict(excluded)}
    binary = servicelib.find_binary(a.binary)
    if not binary:
        raise SystemExit("no text2sqld binary: build it (meson setup build && meson compile -C build) or give --binary")

    needed = sorted(set(singles) | set(vote) | set(first) | set(others))
    ctx = {"items": items, "dbdir": dbdir, "databases": dbs, "binary": binary,
           "direct": {s: direct(items, preds, s, a.gold_timeout) for s in needed},
           "generate_options": {k: json.loads(v) for k, v in (o.split("=", 1) for o in a.generate_option)}}
    report["generate_options"] = ctx["generate_options"]
    label = "%s: %s" % (report["databases"]["set"], ",".join(dbs))
    stub_procs = servicelib.Procs()
    try:
        ctx["stub"] = stub_procs.start_stub("replay_stub.py", ["--predictions", a.predictions, "--dataset", a.dataset,
                                                               "--systems", ",".join(needed)], "replay_stub.log")
        if singles:
            runs, pooled = {}, []
            for s in singles:
                runs[s], rows = single_run(a, ctx, s)
                runs[s]["databases"] = label
                pooled += rows
                f = runs[s]["flags"]["flagged_error"]
                print("single %-22s EX %s (direct %s, lost %d)  flagged: correct %s wrong %s wrong-executing %s"
                      % (s, pct(runs[s]["ex"]), pct(runs[s]["ex_direct"]), runs[s]["lost_through_service"],
                         pct(f["false_alarm_rate"]), pct(f["recall"]), pct(f["recall_wrong_executing"])),
                      file=sys.stderr)
            report["single"] = {"databases": label, "systems": runs, "pooled": flag_stats(pooled),
                                "systems_losing_ex": [s for s in singles if runs[s]["lost_through_service"]]}
            f = report["single"]["pooled"]["flagged_error"]
            print("single pooled: false alarms %s, wrong flagged %s, wrong-executing flagged %s, precision %s"
                  % (pct(f["false_alarm_rate"]), pct(f["recall"]), pct(f["recall_wrong_executing"]),
                     pct(f["precision"])), file=sys.stderr)
        if vote:
            report["vote"] = vote_run(a, ctx, vote)
            report["vote"]["databases"] = label
            v = report["vote"]
            print("vote %s: EX %s, best single %s %s, some candidate right %s"
                  % (",".join(vote), pct(v["ex"]), v["best_single"], pct(v["best_single_ex"]), pct(v["oracle_ex"])),
                  file=sys.stderr)
        if first:
            report["correction"] = correction_run(a, ctx, first[0], others)
            report["correction"]["databases"] = label
            c = report["correction"]
            print("correction %s then %s: EX %s (first alone %s), %s model calls and %s prompt tokens per question"
                  % (first[0], ",".join(others), pct(c["ex"]), pct(c["first_alone_ex_direct"]),
                     c["model_calls_per_question"], c["prompt_tokens_per_question"]), file=sys.stderr)
    finally:
        stub_procs.stop_all()
    emit(report, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
