"""What the scorer fits (fit_link_scorer.py, fit_link_table_scorer.py) share:
the L2 logistic regression (numpy), its cross-validation by database, the gold
of each question and starting the service to ask (Python 3 and numpy).

- fit(), predict(), auc(), logloss(): the model and its figures.
- fold_of(), cross_validate(): folds by a hash of the database name; each
  fold scored by weights fitted on the others.
- gold_items(): each question's gold tables and columns (linklib).
- start_service(): text2sqld over the dataset's databases (servicelib).
- write_json(), emit(): the weights file and the report (ASCII JSON).
"""
import hashlib
import json
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import linklib  # noqa: E402

try:
    import numpy as np
except ImportError:  # pragma: no cover - the fit needs numpy
    raise SystemExit("%s needs numpy (Debian: apt-get install python3-numpy)" % os.path.basename(sys.argv[0]))


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


def fold_of(db, folds):
    return int(hashlib.sha256(db.encode()).hexdigest(), 16) % folds


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


def gold_items(ns, key, dbs):
    """(question, database, gold tables, gold columns) of every question under key whose gold compiles."""
    qs, dbdir, _ = linklib.selected_questions(ns, key)
    items = []
    for q in qs:
        db = linklib.database_for(q, dbs, dbdir, [], linklib.Database)
        if db is None:
            continue
        try:
            gt, gc = db.gold(q["sql"])
        except sqlite3.Error:
            continue
        items.append((q, db, gt, gc))
    return items


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
