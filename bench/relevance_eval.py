#!/usr/bin/env python3
"""relevance_eval.py - how POST /link's `relevance` separates real questions from
off-topic ones: the measure behind generation's early end for a question that
relates to nothing in the schema (pipeline/generate/README.md, "Unanswerable").

Usage:
  relevance_eval.py --dataset DIR [--questions FILE] [--question-key question|question_syn]
                    [--offtopic FILE] [--url URL | --binary PATH] [--threshold T] [--out FILE]

Each real question is sent as POST /link {database: db_id, question} (vector mode); each
line of --offtopic (default bench/offtopic_questions.txt) is sent to every database of
the dataset.  A question "relates to nothing" when relevance.named, stand_ins and values
and touched are all 0; it is rejected when, in addition, relevance.best_lexical < --threshold.
Reported: how many real and off-topic questions relate to nothing, how many each
threshold rejects, the highest best_lexical among off-topic questions rejected and the
lowest among real questions that relate to nothing (the margin a threshold has), and
the real questions that would be rejected.  Without --url a text2sqld is started
(bench/servicelib.py) on the dataset's databases and stopped at the end.
"""
import argparse
import concurrent.futures
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
import servicelib  # noqa: E402


def relevance(client, db, question):
    resp, _ = client.post_json("/link", {"database": db, "question": question, "mode": "vector"})
    return resp["relevance"]


def unrelated(rel):
    return rel["named"] == 0 and rel["stand_ins"] == 0 and rel["values"] == 0 and rel.get("touched", 0) == 0


def measure(client, items, concurrency):
    """items: [(db, question)] -> [relevance] in order."""
    with concurrent.futures.ThreadPoolExecutor(concurrency) as ex:
        return list(ex.map(lambda it: relevance(client, it[0], it[1]), items))


def summary(items, rels, thresholds):
    none = [(it, r) for it, r in zip(items, rels) if unrelated(r)]
    scores = sorted(r["best_lexical"] for _, r in none)
    return {
        "questions": len(items),
        "relate_to_nothing": len(none),
        "rejected_at": {str(t): sum(1 for s in scores if s < t) for t in thresholds},
        "best_lexical_of_unrelated": {"min": scores[0] if scores else None, "max": scores[-1] if scores else None},
        "unrelated_examples": [{"database": it[0], "question": it[1], "best_lexical": round(r["best_lexical"], 4)}
                               for it, r in sorted(none, key=lambda x: x[1]["best_lexical"])[:400]],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--questions", help="question file (default DIR/dev.json)")
    ap.add_argument("--question-key", default="question", choices=["question", "question_syn"])
    ap.add_argument("--offtopic", default=os.path.join(HERE, "offtopic_questions.txt"))
    ap.add_argument("--url")
    ap.add_argument("--binary")
    ap.add_argument("--threshold", type=float, action="append",
                    help="best_lexical thresholds to report (repeatable; default 0.1 .. 0.3)")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--out")
    a = ap.parse_args()
    thresholds = a.threshold or [0.1, 0.15, 0.2, 0.25, 0.3]
    with open(a.questions or os.path.join(a.dataset, "dev.json"), encoding="utf-8") as f:
        entries = json.load(f)
    real = [(e["db_id"], e[a.question_key]) for e in entries if e.get(a.question_key)]
    with open(a.offtopic, encoding="utf-8") as f:
        offtopic_q = [line.strip() for line in f if line.strip()]
    db_dir = os.path.join(a.dataset, "database")
    dbs = sorted({db for db, _ in real})
    offtopic = [(db, q) for db in dbs for q in offtopic_q]
    procs = servicelib.Procs()
    try:
        url = a.url
        if not url:
            config = procs.write_config(servicelib.free_port(), db_dir, {})
            url, _ = procs.start_service(servicelib.find_binary(a.binary), config)
        client = benchlib.LinkClient(url, timeout=120.0)
        report = {
            "dataset": a.dataset, "question_key": a.question_key, "thresholds": thresholds,
            "real": summary(real, measure(client, real, a.concurrency), thresholds),
            "offtopic": summary(offtopic, measure(client, offtopic, a.concurrency), thresholds),
            "offtopic_questions": len(offtopic_q), "databases": len(dbs),
        }
    finally:
        procs.stop_all()
    text = json.dumps(report, indent=2)
    print(text)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
