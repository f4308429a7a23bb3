#!/usr/bin/env python3
"""explain_eval.py - does the answer's `explanation` name what its SQL does?

On a Spider-format gold SQL file (default: Spider dev, $T2S_DATASETS/spider-dev/dev_gold.sql,
"SQL<TAB>db" a line; SQLite dialect), every statement is explained by the service's own code
(pipeline/sql/sql_explain.c, through `build/tests/test_sql_explain --explain sqlite`: no service,
no model) and checked against what a tokenizer written here independently finds in the SQL:

  tables      every name after FROM / JOIN (and the commas of a FROM list) appears in the text
              (case-insensitive, as a word);
  literals    every string ('x', or SQLite's "x") appears as written, LIKE patterns without their
              leading / trailing %; every number appears as a number; LIMIT n as "top n" or
              "at most n rows" (LIMIT 1: "top row" / "one row");
  aggregates  count( -> "number of" or "Counts"; sum( -> "total"; avg( -> "average";
              min( -> "minimum"; max( -> "maximum";
  ordering    ORDER BY -> "sorted by", and "descending" when a key is DESC, "ascending" when a
              key is not.

A statement is complete when every item of every kind is named.  The goal (issue 31): >= 95% of
Spider dev gold statements complete.  Skips (reports "skipped") when the gold file is absent.

Usage:
  explain_eval.py [--gold FILE] [--build DIR] [--show N] [--out FILE]

Output: one JSON document: statements, explained (an explanation written), complete, the share,
misses per kind, the wall time per statement of the tool run (process start included), and up to
--show incomplete examples with what each misses.
"""

import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

TOKEN = re.compile(r"""
    (?P<str>'(?:[^']|'')*')
  | (?P<dq>"(?:[^"]|"")*")
  | (?P<bq>`[^`]*`|\[[^\]]*\])
  | (?P<num>\d+(?:\.\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>!=|<>|<=|>=|==|\S)
""", re.X)

AGGREGATE_WORDS = {
    "count": ("number of", "Counts"),
    "sum": ("total",),
    "avg": ("average",),
    "min": ("minimum",),
    "max": ("maximum",),
}
CLAUSE_END = {"limit", "union", "intersect", "except", ")", ";"}


def tokens(sql):
    out = []
    for m in TOKEN.finditer(sql):
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
    return out


def unquote(tok):
    kind, text = tok
    if kind in ("str", "dq"):
        q = text[0]
        return text[1:-1].replace(q + q, q)
    if kind == "bq":
        return text[1:-1]
    return text


def required(sql):
    """What the explanation of sql must name: {kind: [items]}."""
    toks = tokens(sql)
    low = [t[1].lower() if t[0] in ("word", "punct") else None for t in toks]
    need = {"tables": [], "literals": [], "aggregates": [], "ordering": []}
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        w = low[i]
        if w in ("from", "join"):
            j = i + 1
            while j < len(toks) and toks[j][0] in ("word", "bq", "dq", "str") and low[j] not in ("select",):
                need["tables"].append(unquote(toks[j]))
                j += 1
                if j < len(toks) and low[j] == "as":
                    j += 1
                if j < len(toks) and toks[j][0] in ("word", "bq", "dq", "str") and low[j] not in (
                        "where", "join", "on", "group", "order", "limit", "union", "intersect", "except",
                        "inner", "left", "natural", "cross", "having", "outer"):
                    j += 1  # an alias
                if j < len(toks) and low[j] == ",":
                    j += 1
                    continue
                break
            i = j
            continue
        if w == "limit" and i + 1 < len(toks) and toks[i + 1][0] == "num":
            need["literals"].append(("limit", toks[i + 1][1]))
            i += 2
            continue
        if kind == "num":
            need["literals"].append(("number", text))
        elif kind in ("str", "dq"):
            value = unquote(toks[i])
            if i > 0 and low[i - 1] == "like":
                value = value.strip("%")
            if value:
                need["literals"].append(("string", value))
        elif w in AGGREGATE_WORDS and i + 1 < len(toks) and toks[i + 1][1] == "(":
            need["aggregates"].append(w)
        elif w == "order" and i + 1 < len(toks) and low[i + 1] == "by":
            need["ordering"].append(order_directions(toks, low, i + 2))
        i += 1
    return need


def order_directions(toks, low, i):
    """The directions ("asc" / "desc") of the ORDER BY keys starting at token i."""
    dirs, depth, desc = [], 0, False
    while i < len(toks):
        w = low[i]
        if w == "(":
            depth += 1
        elif w == ")" and depth > 0:
            depth -= 1
        elif depth == 0 and (w in CLAUSE_END):
            break
        elif depth == 0 and w == ",":
            dirs.append("desc" if desc else "asc")
            desc = False
        elif w == "desc":
            desc = True
        i += 1
    dirs.append("desc" if desc else "asc")
    return dirs


def word_in(word, text):
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(word) + r"(?![A-Za-z0-9_])", text, re.I) is not None


def number_in(n, text):
    return re.search(r"(?<![\w.])" + re.escape(n) + r"(?![\w]|\.\d)", text) is not None


def misses(sql, text):
    """What text fails to name of sql: [(kind, item)]."""
    need, out = required(sql), []
    for t in need["tables"]:
        if not word_in(t, text):
            out.append(("tables", t))
    for kind, v in need["literals"]:
        if kind == "limit":
            ok = (("top row" in text or "one row" in text) if v == "1"
                  else ("top " + v) in text or ("at most " + v) in text)
        elif kind == "number":
            ok = number_in(v, text)
        else:
            ok = v in text
        if not ok:
            out.append(("literals", v))
    for a in need["aggregates"]:
        if not any(w in text for w in AGGREGATE_WORDS[a]):
            out.append(("aggregates", a))
    for dirs in need["ordering"]:
        if "sorted by" not in text:
            out.append(("ordering", "sorted by"))
        for d in set(dirs):
            word = "descending" if d == "desc" else "ascending"
            if word not in text:
                out.append(("ordering", word))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gold", default=os.path.join(benchlib.DATASETS, "spider-dev", "dev_gold.sql"))
    ap.add_argument("--build", default=os.path.join(benchlib.REPO, "build"))
    ap.add_argument("--show", type=int, default=10)
    ap.add_argument("--out")
    a = ap.parse_args()

    if not os.path.exists(a.gold):
        benchlib.emit({"skipped": "no gold file at %s (set T2S_DATASETS)" % a.gold}, a.out)
        return 0
    tool = os.path.join(a.build, "tests", "test_sql_explain")
    if not os.path.exists(tool):
        print("no %s: build first (meson compile -C %s)" % (tool, a.build), file=sys.stderr)
        return 2
    with open(a.gold, encoding="utf-8") as f:
        sqls = [line.rstrip("\n").split("\t")[0].replace("\n", " ") for line in f if line.strip()]
    started = time.monotonic()
    run = subprocess.run([tool, "--explain", "sqlite"], input="\n".join(sqls) + "\n", capture_output=True,
                         text=True, check=True)
    wall = time.monotonic() - started
    texts = run.stdout.split("\n")[:len(sqls)]
    explained = complete = 0
    by_kind, examples = {}, []
    for sql, text in zip(sqls, texts):
        if text == "\\N":
            by_kind["unexplained"] = by_kind.get("unexplained", 0) + 1
            examples.append({"sql": sql, "explanation": None, "misses": ["unexplained"]})
            continue
        explained += 1
        m = misses(sql, text)
        if not m:
            complete += 1
            continue
        for kind in {k for k, _ in m}:
            by_kind[kind] = by_kind.get(kind, 0) + 1
        examples.append({"sql": sql, "explanation": text, "misses": ["%s: %s" % km for km in m]})
    n = len(sqls)
    benchlib.emit({
        "gold": a.gold,
        "statements": n,
        "explained": explained,
        "complete": complete,
        "complete_share": round(complete / n, 4) if n else None,
        "goal": 0.95,
        "incomplete_by_kind": by_kind,
        "tool_wall_us_per_statement": round(wall * 1e6 / n, 1) if n else None,
        "examples": examples[:a.show],
    }, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
