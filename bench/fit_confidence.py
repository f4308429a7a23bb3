#!/usr/bin/env python3
"""fit_confidence.py - fit the answer scorer (pipeline/generate/confidence.h):
`confidence`, the probability that an answer is right, from the features the
service records for each answer (trace.confidence.features), cross-validated
by database, and write its weights file (data/confidence.json).

Usage:
  fit_confidence.py [--dataset DIR] [--predictions DIR] [--db-filter a,b] [--limit N]
                    [--systems all|A,B,...] [--vote A,B,C,D,E] [--binary PATH]
                    [--model-url URL --model NAME [--api-key-env VAR] [--logprobs]]
                    [--records FILE] [--save-records FILE]
                    [--l2 1.0] [--vote-weight 5] [--calibration platt|isotonic]
                    [--write data/confidence.json] [--out REPORT]

Answers (records: database, question, correct, the features):
  replay     (default) the published systems' Spider dev answers replayed
             by replay_stub.py (--predictions, the 9 tuning databases): each
             system of --systems alone (options {max_rounds: 0, candidates: 1})
             and, with --vote, the ensemble of those systems as the
             candidates of one request (candidates: n), where agreement
             among candidates differs in origin (the replay answers every
             request about a question with the same system's SQL, so
             agreement among repeated requests to one system is an artefact).
  --model-url  any OpenAI-compatible server as the generate and debug
             model, on the dataset's questions (--dataset, --db-filter,
             --limit): one candidate, the service's correction rounds.  With
             --logprobs the service asks it for token log-probabilities
             (models.generate.logprobs), so their weight is fitted: an adopter
             with a GPU refits the scorer with one command.
  --records FILE  records saved by an earlier run (--save-records), fitted again.

--write replaces the answer scorer's part of the file and keeps its "builtin"
part (the built-in's reading scorer, fitted with --builtin), and the reverse.

Correctness is Spider's execution comparison (spiderlib.results_match).

The model is an L2-regularised logistic regression (Newton's method, pure
Python, sparse), then a calibration of its output: Platt scaling (default) or
isotonic regression (pool-adjacent-violators, at most 64 knots).  Ensemble
records weigh --vote-weight times a single answer's (there are n times fewer
of them).  Every figure reported is out of fold, with folds grouped by
database (leave one database out: no database is in both the fitting and the
scoring side); the calibration of each fold is fitted on inner
leave-one-database-out scores of that fold's fitting databases, so no figure
sees its own database.  Reported for single answers and ensemble answers
apart: answers, accuracy, AUROC, expected calibration error (10 equal-width
bins), Brier score, the share of answers at confidence >= 0.9 and their
accuracy, and the reliability table; beside the same figures of the
confidence the service reported (the weights it ran with).  The weights
written are fitted on every record.

Prints one JSON document on stdout (--out FILE: also written there).
"""
import argparse
import concurrent.futures
import hashlib
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
import replaylib  # noqa: E402
import servicelib  # noqa: E402
import spiderlib  # noqa: E402
from querylib import add_common_args, ask_query, load_gold, question_sets  # noqa: E402
from stublib import DEFAULT_PREDICTIONS, Predictions  # noqa: E402

MAX_KNOTS = 64


# ---- collecting records -------------------------------------------------------------

def record_of(q, rec, resp, run):
    trace = resp.get("trace") if isinstance(resp, dict) else None
    conf = trace.get("confidence") if isinstance(trace, dict) else None
    feats = conf.get("features") if isinstance(conf, dict) else None
    if not isinstance(feats, dict):
        return None  # no scored answer (an error, or the built-in / an example answered)
    return {"run": run, "db": q["db_id"], "index": q.get("index"), "question": q["question"],
            "correct": bool(rec["correct"]), "features": feats, "service_confidence": resp.get("confidence")}


def collect_replay(a, items, dbdir, dbs, binary):
    preds = Predictions(a.predictions)
    singles = preds.systems if a.systems == "all" else (preds.parse_systems(a.systems) if a.systems else [])
    vote = preds.parse_systems(a.vote) if a.vote else []
    if singles is None or vote is None:
        raise SystemExit("unknown system; known: %s" % ", ".join(preds.systems))
    items = [it for it in items if it[0]["index"] in preds.questions]
    ctx = {"items": items, "dbdir": dbdir, "databases": dbs, "binary": binary}
    records = []
    stub_procs = servicelib.Procs()
    try:
        ctx["stub"] = stub_procs.start_stub("replay_stub.py", ["--predictions", a.predictions, "--dataset", a.dataset,
                                                               "--systems", ",".join(sorted(set(singles) | set(vote)))],
                                            "replay_stub.log")
        runs = [(s, "single:" + s, {"max_rounds": 0, "candidates": 1}, 1) for s in singles]
        if vote:
            runs.append((",".join(vote), "vote", {"max_rounds": 0, "candidates": len(vote)}, len(vote)))
        for model, run, options, n in runs:
            def one(client, item, options=options, run=run):
                q, db, gold_rows, _ = item
                body = {"database": q["db_id"], "question": q["question"], "options": options}
                rec = ask_query(client, body, db, gold_rows, q["sql"], "spider", a.gold_timeout)
                return record_of(q, rec, rec.pop("resp"), run)

            got, seconds, _ = replaylib.serve_questions(ctx, model, n, one, concurrency=a.concurrency)
            records += [r for r in got if r]
            print("%s: %d scored answers in %.1f s" % (run, sum(1 for r in got if r), seconds), file=sys.stderr)
    finally:
        stub_procs.stop_all()
    return records


def collect_live(a, items, dbdir, dbs, binary):
    procs = servicelib.Procs()
    records = []
    try:
        dbroot = procs.path("databases")
        os.mkdir(dbroot)
        for db_id in dbs:
            os.symlink(os.path.join(dbdir, db_id), os.path.join(dbroot, db_id))
        endpoint = servicelib.models_section(a.model_url, a.model, api_key_env=a.api_key_env)["generate"]
        if a.logprobs:
            endpoint["logprobs"] = True
        extra = servicelib.bench_extra(procs, {"generate": dict(endpoint), "debug": dict(endpoint)},
                                       {"cache_ttl_s": 0})
        cfg = procs.write_config(servicelib.free_port(), dbroot, extra)
        url, _ = procs.start_service(binary, cfg, 600.0)
        client = benchlib.LinkClient(url, a.api_key, a.timeout)
        for q, db, gold_rows, _ in items:
            body = {"database": q["db_id"], "question": q["question"]}
            rec = ask_query(client, body, db, gold_rows, q["sql"], "spider", a.gold_timeout)
            r = record_of(q, rec, rec.pop("resp"), "live:" + a.model)
            if r:
                records.append(r)
    finally:
        procs.stop_all()
    return records


def collect_builtin(a, sets, dbdir, binary):
    """The built-in generator's readings of every question of sets [(key, items)], with no model and
    no abstention (a weights file whose "builtin" part has no feature and threshold 0), each answered
    one's named features (trace.confidence.features) and correctness."""
    here = os.path.dirname(HERE)
    with open(os.path.join(here, "data", "confidence.json"), encoding="utf-8") as f:
        doc = json.load(f)
    doc["builtin"] = {"features": [], "weights": [], "intercept": 0.0, "calibration": {"method": "none"},
                      "threshold": 0.0}
    procs = servicelib.Procs()
    records = []
    try:
        weights = procs.path("no-abstention.json")
        with open(weights, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        extra = servicelib.bench_extra(procs, {}, {"confidence_file": weights})
        cfg = procs.write_config(servicelib.free_port(), dbdir, extra)
        url, _ = procs.start_service(binary, cfg, 900.0)
        client = benchlib.LinkClient(url, a.api_key, a.timeout)
        for key, items in sets:
            def one(item, key=key):
                q, db, gold_rows, _ = item
                body = {"database": q["db_id"], "question": q["question"], "options": {"generator": "builtin"}}
                rec = ask_query(client, body, db, gold_rows, q["sql"], "spider", a.gold_timeout)
                resp = rec.pop("resp") or {}
                feats = ((resp.get("trace") or {}).get("confidence") or {}).get("features") if rec["status"] == 200 else None
                if not isinstance(feats, dict):
                    return None
                return {"run": "builtin:" + key, "db": q["db_id"], "question": q["question"],
                        "correct": bool(rec["correct"]), "features": feats}

            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.concurrency)) as ex:
                got = list(ex.map(one, items))
            records += [r for r in got if r]
            print("builtin %s: %d of %d questions read" % (key, sum(1 for r in got if r), len(items)), file=sys.stderr)
    finally:
        procs.stop_all()
    return records


def choose_threshold(p, y, want):
    """The lowest probability threshold at which the answers kept are right at least `want` of the time
    (the most answers at that precision); None when no threshold reaches it."""
    order = sorted(range(len(p)), key=lambda i: -p[i])
    best, right = None, 0
    for n, i in enumerate(order, 1):
        right += y[i]
        last = n == len(order) or p[order[n]] < p[i]
        if last and right / n >= want:
            best = p[i]
    return best


def builtin_report(records, oof, y, threshold, sets_total):
    out = {}
    for key in sorted({r["run"] for r in records}):
        idx = [i for i, r in enumerate(records) if r["run"] == key]
        kept = [i for i in idx if threshold is not None and oof[i] >= threshold]
        total = sets_total.get(key.split(":", 1)[1])
        out[key] = {"questions": total, "read": len(idx), "read_right": sum(y[i] for i in idx),
                    "precision_without_abstention": round(sum(y[i] for i in idx) / len(idx), 4) if idx else None,
                    "answered": len(kept), "right": sum(y[i] for i in kept),
                    "precision": round(sum(y[i] for i in kept) / len(kept), 4) if kept else None,
                    "answered_share": round(len(kept) / total, 4) if total else None,
                    "auroc": auroc([oof[i] for i in idx], [y[i] for i in idx])}
    return out


# ---- the model ----------------------------------------------------------------------

def sigmoid(z):
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-min(z, 60.0)))
    e = math.exp(max(z, -60.0))
    return e / (1.0 + e)


def solve(h, g):
    """h x = g by Gaussian elimination with partial pivoting (h is small and positive definite)."""
    n = len(g)
    m = [row[:] + [g[i]] for i, row in enumerate(h)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        if abs(m[c][c]) < 1e-12:
            m[c][c] = 1e-12
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            if f:
                for k in range(c, n + 1):
                    m[r][k] -= f * m[c][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


def fit_lr(rows, y, wts, d, l2, iters=25):
    """L2 logistic regression (intercept unpenalised) by Newton's method over
    sparse rows [(index, value), ...]; returns (weights[d], intercept)."""
    w = [0.0] * (d + 1)  # the last is the intercept
    for _ in range(iters):
        g = [0.0] * (d + 1)
        h = [[0.0] * (d + 1) for _ in range(d + 1)]
        for k in range(d):
            g[k] = l2 * w[k]
            h[k][k] = l2
        for x, t, sw in zip(rows, y, wts):
            z = w[d] + sum(w[i] * v for i, v in x)
            p = sigmoid(z)
            e = (p - t) * sw
            s = p * (1 - p) * sw
            xs = x + [(d, 1.0)]
            for i, vi in xs:
                g[i] += e * vi
                hi = h[i]
                for j, vj in xs:
                    hi[j] += s * vi * vj
        for k in range(d + 1):
            h[k][k] += 1e-9
        step = solve(h, g)
        w = [a - b for a, b in zip(w, step)]
        if max(abs(s) for s in step) < 1e-7:
            break
    return w[:d], w[d]


def logit_of(x, w, b):
    return b + sum(w[i] * v for i, v in x)


def fit_platt(z, y):
    """p = sigmoid(a z + b) fitted by Newton's method (with Platt's target smoothing)."""
    npos = sum(y)
    nneg = len(y) - npos
    hi, lo = (npos + 1.0) / (npos + 2.0), 1.0 / (nneg + 2.0)
    t = [hi if v else lo for v in y]
    a, b = 1.0, 0.0
    for _ in range(50):
        g0 = g1 = h00 = h01 = h11 = 0.0
        for zi, ti in zip(z, t):
            p = sigmoid(a * zi + b)
            e, s = p - ti, p * (1 - p)
            g0 += e * zi
            g1 += e
            h00 += s * zi * zi
            h01 += s * zi
            h11 += s
        h00 += 1e-9
        h11 += 1e-9
        det = h00 * h11 - h01 * h01
        if abs(det) < 1e-15:
            break
        da = (h11 * g0 - h01 * g1) / det
        db = (h00 * g1 - h01 * g0) / det
        a, b = a - da, b - db
        if max(abs(da), abs(db)) < 1e-9:
            break
    return {"method": "platt", "a": a, "b": b}


def fit_isotonic(p, y):
    """Pool-adjacent-violators on (p, y); knots (mean p, mean y) of the blocks, at most MAX_KNOTS."""
    pairs = sorted(zip(p, y))
    blocks = []  # [sum_p, sum_y, n]
    for pi, yi in pairs:
        blocks.append([pi, float(yi), 1])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            s = blocks.pop()
            blocks[-1] = [blocks[-1][0] + s[0], blocks[-1][1] + s[1], blocks[-1][2] + s[2]]
    while len(blocks) > MAX_KNOTS:  # merge the smallest neighbouring pair (keeps y non-decreasing)
        k = min(range(len(blocks) - 1), key=lambda i: blocks[i][2] + blocks[i + 1][2])
        s = blocks.pop(k + 1)
        blocks[k] = [blocks[k][0] + s[0], blocks[k][1] + s[1], blocks[k][2] + s[2]]
    xs, ys = [], []
    for sp, sy, n in blocks:
        x, v = min(1.0, max(0.0, sp / n)), min(1.0, max(0.0, sy / n))
        if xs and x <= xs[-1]:
            x = min(1.0, xs[-1] + 1e-6)
            if x <= xs[-1]:
                continue
        if ys and v < ys[-1]:
            v = ys[-1]
        xs.append(round(x, 6))
        ys.append(round(v, 6))
    if len(xs) == 1:
        xs, ys = [0.0, 1.0], [ys[0], ys[0]]
    return {"method": "isotonic", "x": xs, "y": ys}


def calibrate(cal, z):
    if cal["method"] == "platt":
        return sigmoid(cal["a"] * z + cal["b"])
    p = sigmoid(z)
    xs, ys = cal["x"], cal["y"]
    if p <= xs[0]:
        return ys[0]
    for k in range(1, len(xs)):
        if p <= xs[k]:
            t = (p - xs[k - 1]) / (xs[k] - xs[k - 1])
            return ys[k - 1] + t * (ys[k] - ys[k - 1])
    return ys[-1]


def fit_calibration(method, z, y):
    return fit_platt(z, y) if method == "platt" else fit_isotonic([sigmoid(v) for v in z], y)


# ---- figures ------------------------------------------------------------------------

def auroc(p, y):
    pos = sum(y)
    neg = len(y) - pos
    if not pos or not neg:
        return None
    order = sorted(range(len(p)), key=lambda i: p[i])
    ranks = [0.0] * len(p)
    i = 0
    while i < len(order):
        j = i
        while j < len(order) and p[order[j]] == p[order[i]]:
            j += 1
        for k in range(i, j):
            ranks[order[k]] = (i + j + 1) / 2.0
        i = j
    rsum = sum(r for r, t in zip(ranks, y) if t)
    return round((rsum - pos * (pos + 1) / 2.0) / (pos * neg), 4)


def reliability(p, y, bins=10):
    table, ece = [], 0.0
    for b in range(bins):
        idx = [i for i, v in enumerate(p) if (b / bins <= v < (b + 1) / bins) or (b == bins - 1 and v >= 1.0)]
        if not idx:
            continue
        conf = sum(p[i] for i in idx) / len(idx)
        acc = sum(y[i] for i in idx) / len(idx)
        ece += abs(conf - acc) * len(idx)
        table.append({"bin": "%.1f-%.1f" % (b / bins, (b + 1) / bins), "answers": len(idx),
                      "mean_confidence": round(conf, 4), "accuracy": round(acc, 4)})
    return round(ece / len(p), 4) if p else None, table


def figures(p, y):
    if not p:
        return None
    ece, table = reliability(p, y)
    high = [i for i, v in enumerate(p) if v >= 0.9]
    return {"answers": len(p), "accuracy": round(sum(y) / len(y), 4), "auroc": auroc(p, y), "ece": ece,
            "brier": round(sum((a - b) ** 2 for a, b in zip(p, y)) / len(p), 4),
            "share_at_0.9": round(len(high) / len(p), 4),
            "accuracy_at_0.9": round(sum(y[i] for i in high) / len(high), 4) if high else None,
            "reliability": table}


# ---- cross-validation -----------------------------------------------------------------

def save_records(path, records):
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def load_records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def design(records, vote_weight=1.0):
    """(feature names, sparse rows, labels, weights, databases) of records; an ensemble record weighs vote_weight."""
    names = sorted({n for r in records for n in r["features"]})
    y = [1 if r["correct"] else 0 for r in records]
    wts = [vote_weight if r["run"] == "vote" else 1.0 for r in records]
    return names, matrix(records, names), y, wts, [r["db"] for r in records]


def matrix(records, names):
    col = {n: k for k, n in enumerate(names)}
    rows = []
    for r in records:
        rows.append([(col[n], float(v)) for n, v in r["features"].items() if n in col and float(v) != 0.0])
    return rows


def fold_ids(dbs_of, k):
    """A fold per database (k = 0: leave one database out), else k folds of whole databases by a hash of the name."""
    if not k:
        return list(dbs_of)
    return [int(hashlib.sha256(db.encode()).hexdigest(), 16) % k for db in dbs_of]


def fit_with_calibration(rows, y, wts, dbs_of, d, l2, method, k=0):
    """Weights fitted on rows, and a calibration fitted on inner out-of-fold logits (folds of whole databases)."""
    fold = fold_ids(dbs_of, k)
    z = [0.0] * len(rows)
    for held in sorted(set(fold)):
        tr = [i for i, f in enumerate(fold) if f != held]
        w, b = fit_lr([rows[i] for i in tr], [y[i] for i in tr], [wts[i] for i in tr], d, l2)
        for i, f in enumerate(fold):
            if f == held:
                z[i] = logit_of(rows[i], w, b)
    cal = fit_calibration(method, z, y)
    w, b = fit_lr(rows, y, wts, d, l2)
    return w, b, cal


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap)
    ap.add_argument("--predictions", default=DEFAULT_PREDICTIONS, help="directory of <system>.json prediction files")
    ap.add_argument("--systems", default="all", help="'all', '' or comma-separated systems, each answering alone")
    ap.add_argument("--vote", default="codes-7b,dail-sql-gpt4,dts-sql-deepseek-7b,c3-chatgpt,codes-15b",
                    help="comma-separated systems answering the candidates of one request ('' for none)")
    ap.add_argument("--model-url", help="an OpenAI-compatible /v1 base URL answering instead of the replay")
    ap.add_argument("--model", help="its model name")
    ap.add_argument("--api-key-env", help="the environment variable holding its API key")
    ap.add_argument("--logprobs", action="store_true", help="ask it for token log-probabilities")
    ap.add_argument("--binary", help="text2sqld binary (default $TEXT2SQLD_BIN, build/text2sqld)")
    ap.add_argument("--records", help="fit records saved by --save-records instead of running the service")
    ap.add_argument("--save-records", help="write the records (JSON lines) here")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--vote-weight", type=float, default=5.0, help="weight of an ensemble record")
    ap.add_argument("--calibration", choices=["platt", "isotonic"], default="platt")
    ap.add_argument("--write", help="write the weights file here (e.g. data/confidence.json); with --builtin "
                    "only its \"builtin\" member changes")
    ap.add_argument("--builtin", action="store_true", help="fit the built-in generator's reading scorer instead, on "
                    "--dataset's questions (--question-key question,question_syn), 5 folds of whole databases")
    ap.add_argument("--precision", type=float, default=0.95, help="--builtin: the out-of-fold precision the "
                    "abstention threshold must keep")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--gold-timeout", type=float, default=60.0)
    for act in ap._actions:  # --builtin takes a list of question keys
        if act.dest == "question_key":
            act.choices = None
    a = ap.parse_args()
    if a.builtin:
        return main_builtin(a)

    if a.records:
        records = load_records(a.records)
        source = {"records": os.path.basename(a.records)}
    else:
        if not spiderlib.dataset_present(a):
            return spiderlib.skip("dataset not found: %s" % (a.questions or os.path.join(a.dataset, "dev.json")), a.out)
        if a.model_url and not a.model:
            raise SystemExit("--model-url needs --model")
        binary = servicelib.find_binary(a.binary)
        if not binary:
            raise SystemExit("no text2sqld binary: build it (meson setup build && meson compile -C build) or give --binary")
        questions, dbdir, _ = spiderlib.select(a)
        items, _, _ = load_gold(questions, dbdir, a.gold_timeout)
        dbs = sorted({q["db_id"] for q, _, _, _ in items})
        if a.model_url:
            records = collect_live(a, items, dbdir, dbs, binary)
            source = {"model_url": a.model_url, "model": a.model, "logprobs": a.logprobs}
        else:
            records = collect_replay(a, items, dbdir, [d for d in dbs if d in Predictions(a.predictions).databases()],
                                     binary)
            source = {"predictions": os.path.basename(os.path.abspath(a.predictions)), "systems": a.systems,
                      "vote": a.vote}
        if a.save_records:
            save_records(a.save_records, records)
    if not records:
        raise SystemExit("no scored answer to fit")

    names, rows, y, wts, dbs_of = design(records, a.vote_weight)
    d = len(names)
    databases = sorted(set(dbs_of))

    oof = [None] * len(records)
    for held in databases:
        tr = [i for i, db in enumerate(dbs_of) if db != held]
        w, b, cal = fit_with_calibration([rows[i] for i in tr], [y[i] for i in tr], [wts[i] for i in tr],
                                         [dbs_of[i] for i in tr], d, a.l2, a.calibration)
        for i, db in enumerate(dbs_of):
            if db == held:
                oof[i] = calibrate(cal, logit_of(rows[i], w, b))
        print("fold %s done" % held, file=sys.stderr)

    def group(pred):
        out = {}
        for name, keep in (("single", lambda r: r["run"] != "vote"), ("vote", lambda r: r["run"] == "vote")):
            idx = [i for i, r in enumerate(records) if keep(r)]
            if idx:
                out[name] = figures([pred[i] for i in idx], [y[i] for i in idx])
        return out

    service = [float(r.get("service_confidence") or 0.0) for r in records]
    w, b, cal = fit_with_calibration(rows, y, wts, dbs_of, d, a.l2, a.calibration)
    report = {"source": source, "databases": databases, "folds": "leave one database out (%d)" % len(databases),
              "records": len(records), "features": d, "l2": a.l2, "vote_weight": a.vote_weight,
              "calibration": a.calibration, "out_of_fold": group(oof), "service_reported": group(service),
              "weights": {n: round(v, 4) for n, v in zip(names, w)}, "intercept": round(b, 4)}
    if a.write:
        doc = {"version": 1, "features": names, "weights": [round(v, 6) for v in w], "intercept": round(b, 6),
               "calibration": cal,
               "fit": {"script": "bench/fit_confidence.py", "source": source, "databases": databases,
                       "records": len(records), "l2": a.l2, "vote_weight": a.vote_weight,
                       "out_of_fold": {k: {m: v[m] for m in ("answers", "accuracy", "auroc", "ece", "share_at_0.9",
                                                               "accuracy_at_0.9")}
                                       for k, v in report["out_of_fold"].items()}}}
        if os.path.exists(a.write):  # the built-in's part (--builtin) is kept as it is
            with open(a.write, encoding="ascii") as f:
                old = json.load(f)
            if isinstance(old, dict) and "builtin" in old:
                doc["builtin"] = old["builtin"]
        with open(a.write, "w", encoding="ascii") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    for name, fig in report["out_of_fold"].items():
        print("%s out of fold: %d answers, accuracy %.3f, AUROC %s, ECE %s, >=0.9: %s of answers at %s"
              % (name, fig["answers"], fig["accuracy"], fig["auroc"], fig["ece"], fig["share_at_0.9"],
                 fig["accuracy_at_0.9"]), file=sys.stderr)
    benchlib.emit(report, a.out)
    return 0


def main_builtin(a):
    """--builtin: the reading scorer, its threshold for --precision out of fold, the "builtin" member."""
    keys = [k for k in a.question_key.split(",") if k]
    sets_total = {}
    if a.records:
        records = load_records(a.records)
        source = {"records": os.path.basename(a.records)}
    else:
        if not spiderlib.dataset_present(a):
            return spiderlib.skip("dataset not found: %s" % (a.questions or a.dataset), a.out)
        binary = servicelib.find_binary(a.binary)
        if not binary:
            raise SystemExit("no text2sqld binary: build it or give --binary")
        sets, dbdir = question_sets(a, keys)
        sets_total = {key: len(items) for key, items in sets}
        records = collect_builtin(a, sets, dbdir, binary)
        source = {"dataset": os.path.basename(os.path.abspath(a.dataset)), "question_keys": keys}
        if a.save_records:
            save_records(a.save_records, records)
    if not records:
        raise SystemExit("no reading to fit")
    names, rows, y, wts, dbs_of = design(records)
    d = len(names)
    fold = fold_ids(dbs_of, 5)
    oof = [None] * len(records)
    for held in sorted(set(fold)):
        tr = [i for i, f in enumerate(fold) if f != held]
        w, b, cal = fit_with_calibration([rows[i] for i in tr], [y[i] for i in tr], [wts[i] for i in tr],
                                         [dbs_of[i] for i in tr], d, a.l2, a.calibration, k=4)
        for i, f in enumerate(fold):
            if f == held:
                oof[i] = calibrate(cal, logit_of(rows[i], w, b))
        print("fold %d done" % held, file=sys.stderr)
    threshold = choose_threshold(oof, y, a.precision)
    w, b, cal = fit_with_calibration(rows, y, wts, dbs_of, d, a.l2, a.calibration, k=5)
    report = {"source": source, "records": len(records), "features": d, "l2": a.l2, "calibration": a.calibration,
              "folds": "5 folds of whole databases (inner: 4)", "precision_goal": a.precision,
              "threshold": threshold, "out_of_fold": figures(oof, y),
              "by_set_out_of_fold": builtin_report(records, oof, y, threshold, sets_total),
              "hand_confidence": figures([float(r["features"].get("hand", 0)) for r in records], y),
              "weights": {n: round(v, 4) for n, v in zip(names, w)}, "intercept": round(b, 4)}
    if a.write and threshold is not None:
        path = a.write
        with open(path, encoding="ascii") as f:
            doc = json.load(f)
        doc["builtin"] = {"features": names, "weights": [round(v, 6) for v in w], "intercept": round(b, 6),
                          "calibration": cal, "threshold": round(threshold, 6),
                          "fit": {"script": "bench/fit_confidence.py --builtin", "source": source,
                                  "records": len(records), "l2": a.l2, "precision_goal": a.precision,
                                  "by_set_out_of_fold": report["by_set_out_of_fold"]}}
        with open(path, "w", encoding="ascii") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    for key, fig in report["by_set_out_of_fold"].items():
        print("%s out of fold: read %d (precision %s), kept %d at precision %s, AUROC %s" % (
            key, fig["read"], fig["precision_without_abstention"], fig["answered"], fig["precision"], fig["auroc"]),
            file=sys.stderr)
    benchlib.emit(report, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
