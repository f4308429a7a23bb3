#!/usr/bin/env python3
"""fit_link_scorer.py - fit the learned column scorer of /link's fill
(pipeline/link/link_scorer.h) on spider-train, cross-validated by database,
and write its weights file (data/link_scorer.json).

Usage:
  fit_link_scorer.py [--dataset DIR] [--keys question,question_syn]
                     [--binary PATH | --url URL] [--folds 5] [--l2 1.0]
                     [--threshold P] [--write data/link_scorer.json] [--out REPORT]

Every question of DIR/train.json (each text under --keys) goes to
POST /link {database, question, features: true}; the answer's `candidates`
are the columns of the tables linking required, each with the scorer's
features.  A candidate's label is 1 when the gold SQL reads it (SQLite's
authorizer, as link_eval.py derives gold).  The model is an L2-regularised
logistic regression fitted by Newton's method (numpy).

Cross-validation: the databases are split into --folds folds (by a hash of
the name, so a database's questions, both texts, stay in one fold); each fold
is scored by weights fitted on the others.  Reported per fold and pooled:
log loss and AUC (over the columns the fill decides: the rules' columns are
fitted on no more), and for each threshold the share of questions whose gold
columns (of the required tables) are all among the columns the fill would
show (the rules' columns - mentions, label, value hits, primary keys, shared
names - plus every candidate at or above the threshold; the token budget, the
whole small tables and join keys are not simulated) and the mean number of
columns shown.  Questions whose gold tables linking missed count as misses at
every threshold.  The weights written are fitted on all questions with the
threshold given (--threshold); the report carries the figures.

Prints one JSON document on stdout (--out FILE: also written there).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from fitlib import auc, cross_validate, emit, fit, fold_of, gold_items, logloss, start_service, write_json  # noqa: E402

import numpy as np  # noqa: E402 (fitlib exits with a message without it)

FEATURES = ["score", "score_rel", "score_table_rel", "table_best", "rank_inv", "mention_full", "mention_part",
            "stand_in", "label", "value", "primary_key", "foreign_key", "shared_name", "table_rel", "table_named",
            "table_log_columns", "numeric"]
# Columns the fill shows whatever the scorer says (link_columns.c).
RULE_FEATURES = ["mention_full", "mention_part", "stand_in", "label", "value", "primary_key", "shared_name"]
THRESHOLDS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6]


def collect(client, items, key):
    """Rows (db, question index, key, features, label) of every candidate, and per question its gold
    columns and whether every gold table was required."""
    rows, questions = [], []
    for q, db, gt, gc in items:
        try:
            resp, _ = client.post_json("/link", {"database": q["db_id"], "question": q["question"],
                                                 "mode": "vector", "features": True})
        except (benchlib.HttpError, OSError) as e:
            print("fit_link_scorer: %s #%d: %s" % (q["db_id"], q["index"], e), file=sys.stderr)
            continue
        cands = resp.get("candidates") or []
        seen = set()
        qi = len(questions)
        for c in cands:
            t = db.canonical_table(c["table"])
            k = (t, c["column"].lower())
            seen.add(k)
            rows.append((q["db_id"], qi, [c["features"][f] for f in FEATURES], 1 if k in gc else 0))
        questions.append({"db": q["db_id"], "key": key, "gold": len(gc), "gold_in_candidates": len(gc & seen)})
    return rows, questions


def rule_mask(X):
    """Rows the fill's rules show whatever the scorer says."""
    rule = np.zeros(len(X), dtype=bool)
    for f in RULE_FEATURES:
        rule |= X[:, FEATURES.index(f)] > 0
    return rule


def fill_figures(qidx, X, y, p, questions, thresholds):
    """Per threshold: share of questions whose gold columns are all shown, and mean columns shown."""
    rule = rule_mask(X)
    out = {}
    nq = len(questions)
    for thr in thresholds:
        shown = rule | (p >= thr)
        hit = np.bincount(qidx, weights=(shown & (y == 1)).astype(float), minlength=nq)
        cnt = np.bincount(qidx, weights=shown.astype(float), minlength=nq)
        ok = [hit[i] >= questions[i]["gold"] for i in range(nq)]
        out[str(thr)] = {"column_slr": round(sum(ok) / nq, 4), "columns_shown": round(float(cnt.mean()), 3)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=os.path.join(benchlib.DATASETS, "spider-train"))
    ap.add_argument("--questions", help="question file (default DIR/train.json)")
    ap.add_argument("--keys", default="question,question_syn")
    ap.add_argument("--url", help="a running service registering the databases (default: start --binary)")
    ap.add_argument("--binary", help="text2sqld binary (default as servicelib.find_binary)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--db-filter", default="")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--threshold", type=float, default=0.3, help="the fill's threshold written with the weights")
    ap.add_argument("--write", help="write the weights file here (e.g. data/link_scorer.json)")
    ap.add_argument("--out", help="also write the JSON report here")
    ap.add_argument("--ready-timeout", type=float, default=600.0)
    a = ap.parse_args()
    ns = argparse.Namespace(dataset=a.dataset, questions=a.questions or os.path.join(a.dataset, "train.json"),
                            db_dir=None, db_filter=a.db_filter, limit=a.limit)
    procs = None if a.url else start_service(a)
    rows, questions = [], []
    try:
        client = benchlib.LinkClient(a.url, timeout=60.0)
        dbs = {}
        for key in a.keys.split(","):
            items = gold_items(ns, key, dbs)
            r, qq = collect(client, items, key)
            base = len(questions)
            rows += [(d, qi + base, f, lab) for d, qi, f, lab in r]
            questions += qq
    finally:
        if procs:
            procs.stop_all()
    X = np.array([r[2] for r in rows], dtype=float)
    y = np.array([r[3] for r in rows], dtype=float)
    qidx = np.array([r[1] for r in rows], dtype=int)
    fold = np.array([fold_of(r[0], a.folds) for r in rows])
    # The rules show their columns whatever the scorer says: it is fitted on the columns the fill decides.
    free = ~rule_mask(X)
    cv_p = np.ones(len(y))
    per_fold = cross_validate(X, y, fold, free, free, a.folds, a.l2, cv_p)
    report = {"rows": len(y), "positives": int(y.sum()), "questions": len(questions), "folds": per_fold,
              "decided_rows": int(free.sum()),
              "cv": {"log_loss": round(logloss(cv_p[free], y[free]), 4), "auc": auc(cv_p[free], y[free])},
              "gold_columns_in_candidates": round(sum(q["gold_in_candidates"] for q in questions) /
                                                  max(1, sum(q["gold"] for q in questions)), 4)}
    for key in a.keys.split(","):
        sel = [i for i, q in enumerate(questions) if q["key"] == key]
        remap = {old: new for new, old in enumerate(sel)}
        m = np.isin(qidx, sel)
        report["cv_fill_" + key] = fill_figures(np.array([remap[i] for i in qidx[m]], dtype=int), X[m], y[m],
                                                cv_p[m], [questions[i] for i in sel], THRESHOLDS)
    w, b = fit(X[free], y[free], a.l2)
    report["weights"] = {f: round(float(v), 4) for f, v in zip(FEATURES, w)}
    report["intercept"] = round(float(b), 4)
    if a.write:
        doc = {"version": 1, "features": FEATURES, "weights": [round(float(v), 4) for v in w],
               "intercept": round(float(b), 4), "threshold": a.threshold,
               "fit": {"script": "bench/fit_link_scorer.py", "dataset": "spider-train", "keys": a.keys,
                       "l2": a.l2, "questions": len(questions), "rows": len(y),
                       "cv_folds_by_database": a.folds, "cv_auc": report["cv"]["auc"],
                       "cv_log_loss": report["cv"]["log_loss"]}}
        if os.path.exists(a.write):  # the table scorer's part (fit_link_table_scorer.py) stays
            with open(a.write, encoding="utf-8") as f:
                old = json.load(f)
            if "tables" in old:
                doc["tables"] = old["tables"]
        write_json(a.write, doc)
    return emit(report, a.out)


if __name__ == "__main__":
    sys.exit(main())
