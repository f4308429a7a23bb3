#!/usr/bin/env python3
"""prompt_coverage.py - prompt coverage of POST /generate: the ceiling any model
can reach through this pipeline, and how much of the schema the prompt holds.

Usage:
  prompt_coverage.py [--dev DIR] [--train DIR] [--splits dev,train,train_syn]
                     [--limit N] [--db-filter a,b] [--url URL | --binary PATH]
                     [--show 5] [--misses 25] [--link JSON] [--out FILE]

Splits: dev = DIR/dev.json "question" (the default --dev is
$T2S_DATASETS/spider-dev, $T2S_DATASETS defaulting to ../shared/datasets beside
the repository); train and train_syn = the train directory's
train.json with the "question" and the "question_syn" text.  Without --url,
one text2sqld per dataset is started with bench/gold_stub.py as its generate
model (a private state store, so no earlier run's examples leak in) and
stopped afterwards; with --url the running service must register the
databases and use gold_stub (or any model: only the prompt is read).

Each question is sent as POST /generate {database, question}; the prompt is
trace.prompt.messages, exactly what the generate model received first.  A
question is covered when the prompt holds
  - every table the gold SQL reads,
  - every column the gold SQL reads,
  - every string literal of the gold SQL in the spelling stored in the database.
Gold tables and columns come from Spider's parsed "sql" field (table_units and
col_units, indexes into tables.json; '*' is no column), kept where SQLite agrees
that the query reads them (EXPLAIN with an authorizer, as link_eval.py does), which
drops the parse's few wrong columns.  Without a "sql" field (Spider train) they
are the SQLite reads alone; there SELECT * makes every column of its table gold.
Gold literals are evidence_eval.py's string conditions with status "counted"
(column resolved by SQLite, stored as text, spaces around the stored value
allowed: --trim semantics); each needs one of its stored spellings in the
prompt, case-sensitive, and a spelling with spaces at either end only counts
quoted ('…' or "…").  The question itself is part of the prompt, so a literal
the user typed as stored is covered.

A table or column is in the prompt when it is rendered in a CREATE TABLE block:
each "CREATE TABLE <name> (" up to its closing parenthesis is split into
definitions at top-level commas, after removing -- and /* */ comments and
skipping quoted strings; the first identifier of a definition (bare, "…", `…`
or […]) is its column unless it is PRIMARY, FOREIGN, UNIQUE, CHECK or
CONSTRAINT.  Names are matched to the database case-insensitively; a table name
with a schema prefix (main.t) matches t.  Text elsewhere (examples, evidence,
comments) never makes a column count.

column_share: columns rendered / all columns of the database, per question;
reported as the mean over questions and as Σ rendered / Σ all.

Goal (Spider dev): covered >= 95% at column_share <= 40%.
Prints one JSON document (and writes --out); exits 0 with a "skipped" message
when no dataset is present.
"""

import argparse
import collections
import json
import os
import re
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import evidencelib  # noqa: E402
import linklib  # noqa: E402
import servicelib  # noqa: E402
import spiderlib  # noqa: E402
from benchlib import emit  # noqa: E402
from linklib import database_for  # noqa: E402

CONSTRAINT_WORDS = {"primary", "foreign", "unique", "check", "constraint", "key", "index"}
_CREATE = re.compile(r"\bCREATE\s+(?:TEMP\s+|TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?", re.I)
_BARE = re.compile(r"[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*")


def _ident(text, i):
    """(identifier, end) of a bare or quoted identifier at text[i], or (None, i)."""
    if i >= len(text):
        return None, i
    q = text[i]
    close = {'"': '"', "`": "`", "[": "]"}.get(q)
    if close:
        out, j = [], i + 1
        while j < len(text):
            if text[j] == close:
                if close != "]" and j + 1 < len(text) and text[j + 1] == close:
                    out.append(close)
                    j += 2
                    continue
                return "".join(out), j + 1
            out.append(text[j])
            j += 1
        return None, i
    m = _BARE.match(text, i)
    return (m.group(0), m.end()) if m else (None, i)


def _table_name(text, i):
    """(name without schema prefix, index after it) of the name after CREATE TABLE."""
    name, j = _ident(text, i)
    if name is None:
        return None, i
    while j < len(text) and text[j] == ".":
        nxt, k = _ident(text, j + 1)
        if nxt is None:
            break
        name, j = nxt, k
    return name, j


def _body_segments(text, i):
    """Definitions of the parenthesised body starting at text[i] == '(':
    comment-free text of each top-level comma-separated part, and the end index."""
    depth, j, cur, segs = 0, i, [], []
    n = len(text)
    while j < n:
        ch = text[j]
        if ch == "-" and text.startswith("--", j):
            nl = text.find("\n", j)
            j = n if nl < 0 else nl
            continue
        if ch == "/" and text.startswith("/*", j):
            e = text.find("*/", j + 2)
            j = n if e < 0 else e + 2
            cur.append(" ")
            continue
        if ch in "'\"`[":
            close = "]" if ch == "[" else ch
            k = j + 1
            while k < n:
                if text[k] == close:
                    if close != "]" and k + 1 < n and text[k + 1] == close:
                        k += 2
                        continue
                    break
                k += 1
            cur.append(text[j:k + 1])
            j = k + 1
            continue
        if ch == "(":
            depth += 1
            if depth == 1:
                j += 1
                continue
        elif ch == ")":
            depth -= 1
            if depth == 0:
                segs.append("".join(cur))
                return segs, j + 1
        elif ch == "," and depth == 1:
            segs.append("".join(cur))
            cur = []
            j += 1
            continue
        cur.append(ch)
        j += 1
    segs.append("".join(cur))  # unterminated: keep what there is
    return segs, n


def prompt_schema(text):
    """{table name: [column names]} rendered as CREATE TABLE blocks in text."""
    out = {}
    pos = 0
    while True:
        m = _CREATE.search(text, pos)
        if not m:
            return out
        name, j = _table_name(text, m.end())
        while j < len(text) and text[j] in " \t\r\n":
            j += 1
        if name is None or j >= len(text) or text[j] != "(":
            pos = m.end()
            continue
        segs, end = _body_segments(text, j)
        cols = out.setdefault(name, [])
        for seg in segs:
            s = seg.strip()
            col, _ = _ident(s, 0)
            if col is None or (s[0] not in "\"`[" and col.lower() in CONSTRAINT_WORDS):
                continue
            cols.append(col)
        pos = end


class CovDb:
    """A dataset database: schema, SQLite reads (linklib) and stored values (evidencelib)."""

    def __init__(self, db_id, path):
        self.link = linklib.Database(db_id, path)
        self.ev = evidencelib.Database(db_id, path)
        self.n_columns = self.link.n_columns


def gold_of(q, db, schemas):
    """(tables, columns, literal conditions, source) of a question's gold SQL; raises sqlite3.Error."""
    auth_t, auth_c = db.link.gold(q["sql"])
    parsed = q["raw"].get("sql")
    sch = schemas.get(q["db_id"])
    if isinstance(parsed, dict) and sch is not None:
        t, c = spiderlib.sql_refs(parsed, sch)
        tables, columns, source = t & auth_t, c & auth_c, "spider_sql"
    else:
        tables, columns, source = auth_t, auth_c, "sqlite_reads"
    conds = [c for c in evidencelib.gold_conditions(db.ev, q["sql"], trim=True) if c["status"] == "counted"]
    return tables, columns, conds, source


def literal_in(prompt, stored):
    if stored != stored.strip():
        return ("'%s'" % stored.replace("'", "''")) in prompt or ("'%s'" % stored) in prompt or ('"%s"' % stored) in prompt
    return stored in prompt


def evaluate(q, db, gold, resp):
    """Per-question coverage record from a /generate answer."""
    tables, columns, conds, source = gold
    msgs = (((resp or {}).get("trace") or {}).get("prompt") or {}).get("messages") or []
    text = "\n".join(m.get("content", "") for m in msgs if isinstance(m, dict) and isinstance(m.get("content"), str))
    rendered = prompt_schema(text)
    p_tables, p_cols, unknown = set(), set(), []
    for tname, cols in rendered.items():
        tl = db.link.canonical_table(tname)
        if tl is None:
            unknown.append(tname)
            continue
        p_tables.add(tl)
        for c in cols:
            key = (tl, c.lower())
            if key in db.link.all_columns:
                p_cols.add(key)
            else:
                unknown.append("%s.%s" % (tname, c))
    miss_t = sorted(tables - p_tables)
    miss_c = sorted(columns - p_cols)
    miss_l = [c for c in conds if not any(literal_in(text, s) for s in c["stored"])]
    return {"q": q, "source": source, "prompt_chars": len(text), "prompt_tokens_ws": len(text.split()),
            "n_messages": len(msgs), "tables": p_tables, "columns": p_cols, "unknown": unknown,
            "missing_tables": miss_t, "missing_columns": miss_c, "missing_literals": miss_l,
            "n_literals": len(conds), "covered": not (miss_t or miss_c or miss_l),
            "column_share": len(p_cols) / db.n_columns if db.n_columns else 0.0,
            "n_db_columns": db.n_columns}


def summarise(records, errors, show, misses_n):
    n = len(records)
    if not n:
        return {"n_questions": 0, "errors": len(errors)}
    r4 = lambda x: round(x, 4)
    kinds = collections.Counter()
    for r in records:
        if not r["covered"]:
            kinds["+".join(k for k, v in (("table", r["missing_tables"]), ("column", r["missing_columns"]),
                                         ("literal", r["missing_literals"])) if v)] += 1
    lit_total = sum(r["n_literals"] for r in records)
    lit_missed = sum(len(r["missing_literals"]) for r in records)
    misses = [r for r in records if not r["covered"]]

    def miss_doc(r):
        return {"index": r["q"]["index"], "db_id": r["q"]["db_id"], "question": r["q"]["question"],
                "gold_sql": r["q"]["sql"], "missing_tables": r["missing_tables"],
                "missing_columns": ["%s.%s" % c for c in r["missing_columns"]],
                "missing_literals": [{"column": "%s.%s" % (c["table"], c["column"]), "literal": c["literal"],
                                      "stored": c["stored"]} for c in r["missing_literals"]],
                "prompt_tables": sorted(r["tables"]), "prompt_columns": len(r["columns"])}

    return {
        "n_questions": n,
        "errors": len(errors),
        "error_samples": errors[:5],
        "coverage": r4(sum(r["covered"] for r in records) / n),
        "covered": sum(r["covered"] for r in records),
        "table_coverage": r4(sum(not r["missing_tables"] for r in records) / n),
        "column_coverage": r4(sum(not r["missing_columns"] for r in records) / n),
        "literal_coverage": r4(sum(not r["missing_literals"] for r in records) / n),
        "literals": {"gold": lit_total, "missed": lit_missed, "questions_with_literals": sum(1 for r in records if r["n_literals"])},
        "miss_kinds": dict(kinds.most_common()),
        "column_share_mean": r4(sum(r["column_share"] for r in records) / n),
        "column_share_micro": r4(sum(len(r["columns"]) for r in records) / max(1, sum(r["n_db_columns"] for r in records))),
        "mean_prompt_columns": r4(sum(len(r["columns"]) for r in records) / n),
        "mean_prompt_tables": r4(sum(len(r["tables"]) for r in records) / n),
        "prompt_chars": benchlib.latency_summary([r["prompt_chars"] for r in records]),
        "prompt_tokens_whitespace": benchlib.latency_summary([r["prompt_tokens_ws"] for r in records]),
        "unknown_names_in_prompt": sum(len(r["unknown"]) for r in records),
        "unknown_name_samples": sorted({u for r in records for u in r["unknown"]})[:10],
        "gold_source": dict(collections.Counter(r["source"] for r in records)),
        "misses": [miss_doc(r) for r in misses[:misses_n]],
    }, misses[:show]


def run_split(name, dataset, qfile, key, a, procs_factory):
    """Coverage of one split; returns its report section."""
    ns = argparse.Namespace(dataset=dataset, questions=qfile, db_dir=None, db_filter=a.db_filter,
                            limit=a.limit, question_key=key)
    if not os.path.isfile(qfile):
        return {"skipped": True, "reason": "no question file %s" % qfile}
    questions, dbdir, qpath = spiderlib.select(ns)
    schemas = spiderlib.load_tables_json(spiderlib.tables_json_for(dataset, qpath))
    dbs, failures, items = {}, [], []
    for q in questions:
        db = database_for(q, dbs, dbdir, failures, CovDb)
        if db is None:
            continue
        try:
            items.append((q, db, gold_of(q, db, schemas)))
        except sqlite3.Error as e:
            failures.append({"index": q["index"], "db_id": q["db_id"], "error": str(e)})
    section = {"questions_file": os.path.abspath(qpath), "question_key": key,
               "gold": {"questions": len(questions), "evaluated": len(items), "failed": len(failures),
                        "failures": failures[:10]}}
    client, url = procs_factory(dataset, dbdir, qpath)
    section["url"] = url
    records, errors = [], []
    t0 = time.perf_counter()
    for q, db, gold in items:
        body = {"database": q["db_id"], "question": q["question"]}
        try:
            status, resp, text, _ = client.request("POST", "/generate", body)
        except OSError as e:
            errors.append({"index": q["index"], "error": "%s: %s" % (type(e).__name__, e)})
            records.append(evaluate(q, db, gold, None))
            continue
        if status != 200 or not isinstance(resp, dict):
            errors.append({"index": q["index"], "status": status, "body": text[:300]})
            if not isinstance(resp, dict) or "trace" not in resp:
                resp = None
        records.append(evaluate(q, db, gold, resp))
    section["wall_seconds"] = round(time.perf_counter() - t0, 3)
    summary, shown = summarise(records, errors, a.show, a.misses)
    section.update(summary)
    for r in shown:
        print("[%s] miss #%d %s: %s\n  gold: %s\n  missing tables %s columns %s literals %s\n  prompt tables %s"
              % (name, r["q"]["index"], r["q"]["db_id"], r["q"]["question"], r["q"]["sql"], r["missing_tables"],
                 ["%s.%s" % c for c in r["missing_columns"]],
                 [(c["literal"], c["stored"]) for c in r["missing_literals"]], sorted(r["tables"])), file=sys.stderr)
    return section


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dev", default=os.path.join(benchlib.DATASETS, "spider-dev"), help="Spider dev directory (dev.json)")
    ap.add_argument("--train", default=os.path.join(benchlib.DATASETS, "spider-train"), help="Spider train directory (train.json)")
    ap.add_argument("--splits", default="dev,train,train_syn", help="comma-separated: dev, train, train_syn")
    ap.add_argument("--limit", type=int, default=0, help="first N questions of each split")
    ap.add_argument("--db-filter", default="")
    ap.add_argument("--url", help="a running service (registering the split's databases) instead of starting one")
    ap.add_argument("--binary")
    ap.add_argument("--api-key", default=os.environ.get("TEXT2SQLD_API_KEY"))
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--ready-timeout", type=float, default=900.0)
    ap.add_argument("--show", type=int, default=5, help="misses printed to stderr per split")
    ap.add_argument("--misses", type=int, default=25, help="misses listed in the JSON per split")
    ap.add_argument("--link", help="JSON object: the started service's \"link\" settings "
                                   "(e.g. '{\"scorer_file\": \"/tmp/hand.json\"}')")
    ap.add_argument("--out")
    a = ap.parse_args()

    plan = []
    for s in [x.strip() for x in a.splits.split(",") if x.strip()]:
        if s == "dev":
            plan.append(("dev", a.dev, os.path.join(a.dev, "dev.json"), "question"))
        elif s in ("train", "train_syn"):
            plan.append((s, a.train, os.path.join(a.train, "train.json"), "question_syn" if s == "train_syn" else "question"))
        else:
            ap.error("unknown split %r" % s)
    if not any(os.path.isfile(p[2]) for p in plan):
        return spiderlib.skip("no dataset found (%s)" % ", ".join(p[2] for p in plan), a.out)

    binary = None
    if not a.url:
        binary = servicelib.find_binary(a.binary)
        if not binary:
            raise SystemExit("no text2sqld binary: build it or give --binary")
    running = {}  # dataset dir -> (procs, client, url)

    def service_for(dataset, dbdir, qpath):
        if a.url:
            return benchlib.LinkClient(a.url, a.api_key, a.timeout), a.url
        if dataset not in running:
            procs = servicelib.Procs()
            running[dataset] = procs
            base = procs.start_gold_stub([qpath])
            extra = servicelib.bench_extra(procs, servicelib.models_section(base, "gold-stub"),
                                           more={"link": json.loads(a.link)} if a.link else None)
            cfg = procs.write_config(servicelib.free_port(), dbdir, extra)
            url, _ = procs.start_service(binary, cfg, a.ready_timeout)
            procs.url = url
        p = running[dataset]
        return benchlib.LinkClient(p.url, a.api_key, a.timeout), p.url

    report = {"goal": "Spider dev: coverage >= 0.95 at column_share_mean <= 0.40", "splits": {}}
    try:
        for name, dataset, qfile, key in plan:
            report["splits"][name] = run_split(name, dataset, qfile, key, a, service_for)
            # stop a dataset's service once no later split needs it
            if not any(p[1] == dataset for p in plan[plan.index((name, dataset, qfile, key)) + 1:]) and dataset in running:
                running.pop(dataset).stop_all()
    finally:
        for p in running.values():
            p.stop_all()
    dev = report["splits"].get("dev", {})
    if dev.get("n_questions"):
        report["goal_met_dev"] = dev["coverage"] >= 0.95 and dev["column_share_mean"] <= 0.40
    emit(report, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
