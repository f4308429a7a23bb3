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
import hashlib
import json
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
import link_eval  # noqa: E402

try:
    import numpy as np
except ImportError:  # pragma: no cover - the fit needs numpy
    raise SystemExit("fit_link_scorer.py needs numpy (Debian: apt-get install python3-numpy)")

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


def fit(X, y, l2, iters=30):
    """L2 logistic regression (intercept unpenalised) by Newton's method; returns (w, b)."""
    n, d = X.shape
    A = np.hstack([X, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(iters):
        z = A @ w
        p = 1.0 / (1.0 + np.exp(-z))
        g = A.T @ (p - y) + reg * w
        h = (A * (p * (1 - p))[:, None]).T @ A + np.diag(reg) + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(h, g)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w[:-1], w[-1]


def predict(X, w, b):
    return 1.0 / (1.0 + np.exp(-(X @ w + b)))


def auc(p, y):
    order = np.argsort(p)
    ranks = np.empty(len(p))
    ranks[order] = np.arange(1, len(p) + 1)
    pos = y == 1
    npos, nneg = pos.sum(), (~pos).sum()
    return round(float((ranks[pos].sum() - npos * (npos + 1) / 2) / (npos * nneg)), 4) if npos and nneg else None


def logloss(p, y):
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


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


def fold_of(db, folds):
    return int(hashlib.sha256(db.encode()).hexdigest(), 16) % folds


def start_service(a, link=None):
    """Start --binary over the dataset's databases (link: the config's "link" settings); sets a.url and
    returns the servicelib.Procs to stop."""
    import servicelib  # noqa: E402 - only this path starts processes
    procs = servicelib.Procs()
    binary = servicelib.find_binary(a.binary)
    if not binary:
        raise SystemExit("no text2sqld binary: build it or give --binary")
    extra = servicelib.bench_extra(procs, {}, more={"link": link(procs) if callable(link) else link} if link else None)
    cfg = procs.write_config(servicelib.free_port(), os.path.join(a.dataset, "database"), extra)
    a.url, _ = procs.start_service(binary, cfg, a.ready_timeout)
    return procs


def gold_items(ns, key, dbs):
    """(question, database, gold tables, gold columns) of every question under key whose gold compiles."""
    qs, dbdir, _ = link_eval.selected_questions(ns, key)
    items = []
    for q in qs:
        db = link_eval.database_for(q, dbs, dbdir, [], link_eval.Database)
        if db is None:
            continue
        try:
            gt, gc = db.gold(q["sql"])
        except sqlite3.Error:
            continue
        items.append((q, db, gt, gc))
    return items


def cross_validate(X, y, fold, train, scored, folds, l2, cv_p):
    """Each fold's scored rows get (in cv_p) the probability of weights fitted on the other folds' train
    rows; returns per fold its rows, log loss and AUC."""
    per_fold = []
    for k in range(folds):
        test = (fold == k) & scored
        if not test.any() or not (train & (fold != k)).any():
            continue
        w, b = fit(X[train & (fold != k)], y[train & (fold != k)], l2)
        cv_p[test] = predict(X[test], w, b)
        per_fold.append({"fold": k, "rows": int(test.sum()), "log_loss": round(logloss(cv_p[test], y[test]), 4),
                         "auc": auc(cv_p[test], y[test])})
    return per_fold


def write_json(path, doc):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def emit(report, out):
    """Print the report (and write it to out); the exit status 0."""
    text = json.dumps(report, indent=2)
    print(text)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="/work/shared/datasets/spider-train")
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
