#!/usr/bin/env python3
"""fit_link_table_scorer.py - fit the learned TABLE scorer of /link
(pipeline/link/link_scorer.h, "tables"; pipeline/link/link_tables.c) on
spider-train, cross-validated by database, and write it into the scorer's
weights file (data/link_scorer.json) beside the column weights.

Usage:
  fit_link_table_scorer.py [--dataset DIR] [--keys question,question_syn]
                           [--binary PATH | --url URL] [--folds 5] [--l2 1.0]
                           [--threshold P] [--train-on decided|unlinked] [--dump FILE]
                           [--write data/link_scorer.json] [--out REPORT]

Every question of DIR/train.json (each text under --keys) goes to
POST /link {database, question, mode: vector, features: true}; the answer's
`table_candidates` are every table of the schema with the table scorer's
features and `decided` (no firm rule - a name, a column mention, a stand-in,
a value - required it: the scorer decides it).  Run it against a service
whose scorer has no "tables" (the hand rules: `--url` of one started with
such a link.scorer_file, or --binary with --hand-scorer FILE), so that the
features and the answer's tables are the hand rules'.  A table's label is 1
when the gold SQL reads it (SQLite's authorizer, as link_eval.py).  The
model is fit_link_scorer.py's L2 logistic regression over the decided tables.

Cross-validation: folds by database (a hash of the name; both texts of a
question in one fold).  Reported: log loss and AUC over the decided tables;
and per threshold and policy, the share of questions whose gold tables are
all linked (table SLR) and the mean tables linked, simulated from the hand
answer: "add" = the answer's tables plus the decided ones at or above the
threshold that do not join two required tables (what the service does: the
scaffold's bridges decide those); "add_bridges" = with those too; "replace" =
"add_bridges" less the tables the score rule alone chose that the scorer
rates below it (the scorer overruling the score rule; a bridge the scaffold
would add back is not simulated).  The weights written are fitted on every
question.

Prints one JSON document on stdout (--out FILE: also written there).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
import linklib  # noqa: E402
from fitlib import (auc, cross_validate, emit, fit, fold_of, gold_items, logloss,  # noqa: E402
                    start_service, write_json)

import numpy as np  # noqa: E402

FEATURES = ["score", "score_rel", "rank_inv", "top3_rel", "score_rule", "mention_full", "mention_part", "stand_in",
            "value", "stand_in_name", "far_name", "keyed_firm", "bridge", "no_firm", "firm_log", "log_columns"]
THRESHOLDS = [0.03, 0.04, 0.05, 0.07, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7]


def collect(client, items, key):
    """Rows (db, question index, features, label, decided, in hand answer) of every table, and per
    question its gold tables."""
    rows, questions = [], []
    for q, db, gt in items:
        try:
            resp, _ = client.post_json("/link", {"database": q["db_id"], "question": q["question"],
                                                 "mode": "vector", "features": True})
        except (benchlib.HttpError, OSError) as e:
            print("fit_link_table_scorer: %s #%d: %s" % (q["db_id"], q["index"], e), file=sys.stderr)
            continue
        linked, _, _, _ = linklib.parse_link_response(db, resp)
        qi = len(questions)
        for c in resp.get("table_candidates") or []:
            t = db.canonical_table(c["table"])
            rows.append((q["db_id"], qi, [c["features"][f] for f in FEATURES], 1 if t in gt else 0,
                         bool(c["decided"]), t in linked, t))
        questions.append({"db": q["db_id"], "key": key, "text": q["question"], "gold": gt, "hand_ok": gt <= linked,
                          "hand_tables": len(linked)})
    return rows, questions


def policy_figures(qidx, X, y, decided, linked, p, questions, thresholds):
    """Per threshold and policy: table SLR and mean tables linked (see the docstring)."""
    nq = len(questions)
    rule = X[:, FEATURES.index("score_rule")] > 0
    bridge = X[:, FEATURES.index("bridge")] > 0
    out = {"hand": {"table_slr": round(sum(q["hand_ok"] for q in questions) / nq, 4),
                    "tables": round(sum(q["hand_tables"] for q in questions) / nq, 3)}}
    gold = np.bincount(qidx, weights=y, minlength=nq)
    for thr in thresholds:
        for name in ("add", "add_bridges", "replace"):
            shown = linked | (decided & (p >= thr) & (~bridge if name == "add" else True))
            if name == "replace":
                shown &= ~(decided & rule & (p < thr))
            hit = np.bincount(qidx, weights=(shown & (y == 1)).astype(float), minlength=nq)
            cnt = np.bincount(qidx, weights=shown.astype(float), minlength=nq)
            out["%s %s" % (name, thr)] = {"table_slr": round(float(np.mean(hit >= gold)), 4),
                                          "tables": round(float(cnt.mean()), 3)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=os.path.join(benchlib.DATASETS, "spider-train"))
    ap.add_argument("--questions", help="question file (default DIR/train.json)")
    ap.add_argument("--keys", default="question,question_syn")
    ap.add_argument("--url", help="a running service whose scorer has no 'tables' (default: start --binary)")
    ap.add_argument("--binary", help="text2sqld binary (default as servicelib.find_binary)")
    ap.add_argument("--hand-scorer", help="with --binary: link.scorer_file of the started service "
                                          "(a weights file without 'tables'; default: the column weights "
                                          "of --write without it)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--db-filter", default="")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--train-on", choices=["decided", "unlinked"], default="decided",
                    help="fit on every decided table, or on those the hand answer did not link")
    ap.add_argument("--threshold", type=float, default=0.5, help="the threshold written with the weights")
    ap.add_argument("--write", help="set 'tables' in this weights file (e.g. data/link_scorer.json)")
    ap.add_argument("--out", help="also write the JSON report here")
    ap.add_argument("--dump", help="write every gold table the hand rules missed (JSON lines) here")
    ap.add_argument("--ready-timeout", type=float, default=600.0)
    a = ap.parse_args()
    ns = argparse.Namespace(dataset=a.dataset, questions=a.questions or os.path.join(a.dataset, "train.json"),
                            db_dir=None, db_filter=a.db_filter, limit=a.limit)

    def hand_scorer(procs):
        """The started service's link settings: --hand-scorer, or the weights of --write without 'tables'."""
        hand = a.hand_scorer
        if not hand:
            with open(a.write or os.path.join(HERE, "..", "data", "link_scorer.json"), encoding="utf-8") as f:
                doc = json.load(f)
            doc.pop("tables", None)
            hand = procs.path("hand_scorer.json")
            with open(hand, "w", encoding="utf-8") as f:
                json.dump(doc, f)
        return {"scorer_file": os.path.abspath(hand)}

    procs = None if a.url else start_service(a, hand_scorer)
    rows, questions = [], []
    try:
        client = benchlib.LinkClient(a.url, timeout=60.0)
        dbs = {}
        for key in a.keys.split(","):
            items = [(q, db, gt) for q, db, gt, _ in gold_items(ns, key, dbs)]
            r, qq = collect(client, items, key)
            base = len(questions)
            rows += [(d, qi + base) + tuple(rest) for d, qi, *rest in r]
            questions += qq
    finally:
        if procs:
            procs.stop_all()
    X = np.array([r[2] for r in rows], dtype=float)
    y = np.array([r[3] for r in rows], dtype=float)
    decided = np.array([r[4] for r in rows], dtype=bool)
    linked = np.array([r[5] for r in rows], dtype=bool)
    qidx = np.array([r[1] for r in rows], dtype=int)
    fold = np.array([fold_of(r[0], a.folds) for r in rows])
    train = decided & ~linked if a.train_on == "unlinked" else decided
    cv_p = np.zeros(len(y))
    per_fold = cross_validate(X, y, fold, train, decided, a.folds, a.l2, cv_p)
    report = {"rows": len(y), "decided_rows": int(decided.sum()), "decided_gold": int(y[decided].sum()),
              "questions": len(questions), "folds": per_fold,
              "cv": {"log_loss": round(logloss(cv_p[decided], y[decided]), 4), "auc": auc(cv_p[decided], y[decided])}}
    for key in a.keys.split(","):
        sel = [i for i, q in enumerate(questions) if q["key"] == key]
        remap = {old: new for new, old in enumerate(sel)}
        m = np.isin(qidx, sel)
        report["cv_" + key] = policy_figures(np.array([remap[i] for i in qidx[m]], dtype=int), X[m], y[m],
                                             decided[m], linked[m], cv_p[m], [questions[i] for i in sel],
                                             THRESHOLDS)
    if a.dump:
        with open(a.dump, "w", encoding="utf-8") as f:
            for i, r in enumerate(rows):
                if r[3] and not r[5]:
                    q = questions[r[1]]
                    f.write(json.dumps({"db": r[0], "key": q["key"], "question": q["text"], "table": r[6],
                                        "decided": r[4], "cv_p": round(float(cv_p[i]), 4),
                                        "features": dict(zip(FEATURES, r[2]))}) + "\n")
    w, b = fit(X[train], y[train], a.l2)
    report["weights"] = {f: round(float(v), 4) for f, v in zip(FEATURES, w)}
    report["intercept"] = round(float(b), 4)
    if a.write:
        with open(a.write, encoding="utf-8") as f:
            doc = json.load(f)
        doc["tables"] = {"features": FEATURES, "weights": [round(float(v), 4) for v in w],
                         "intercept": round(float(b), 4), "threshold": a.threshold,
                         "train_on": a.train_on,
                         "fit": {"script": "bench/fit_link_table_scorer.py", "dataset": "spider-train",
                                 "keys": a.keys, "l2": a.l2, "questions": len(questions),
                                 "decided_tables": int(decided.sum()), "cv_folds_by_database": a.folds,
                                 "cv_auc": report["cv"]["auc"], "cv_log_loss": report["cv"]["log_loss"]}}
        write_json(a.write, doc)
    return emit(report, a.out)


if __name__ == "__main__":
    sys.exit(main())
