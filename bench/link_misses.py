#!/usr/bin/env python3
"""link_misses.py - why /link missed gold columns: reads link_eval.py's --dump
file and classifies every missed gold column.

Usage:
  link_misses.py DUMP.jsonl --db-dir DIR [--examples N] [--category C]

Categories (first that applies):
  table_missed      the column's table was not linked at all
  star              the gold SQL selects * (every column of the table is gold)
  mentioned         a word (3+ letters) of the column's name is in the question,
                    up to a short ending: the column was cut by selection
  not_mentioned     none of the name's words is in the question (needs synonyms,
                    hypernyms, value matches or table-name evidence)
Each miss is also counted by kind: primary key, foreign key, other.
Prints a JSON summary (counts, and examples per category) on stdout.
"""

import argparse
import collections
import json
import os
import re
import sqlite3


def words(name):
    name = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", name.lower()) if w]


def near(a, b):
    """a and b are the same word up to a short ending (3 letters)."""
    if a == b:
        return True
    n = min(len(a), len(b))
    return n >= 4 and a[:n] == b[:n] and abs(len(a) - len(b)) <= 3


def schema(db_dir, db, cache):
    if db not in cache:
        con = sqlite3.connect("file:%s?mode=ro" % os.path.join(db_dir, db, db + ".sqlite"), uri=True)
        keys = {}
        for (t,) in con.execute("select name from sqlite_master where type='table' and name not like 'sqlite_%'"):
            cols = con.execute('pragma table_info("%s")' % t).fetchall()
            fks = {r[3].lower() for r in con.execute('pragma foreign_key_list("%s")' % t).fetchall()}
            for c in cols:
                keys["%s.%s" % (t.lower(), c[1].lower())] = "pk" if c[5] else "fk" if c[1].lower() in fks else "other"
        cache[db] = keys
        con.close()
    return cache[db]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dump")
    ap.add_argument("--db-dir", required=True)
    ap.add_argument("--examples", type=int, default=8)
    ap.add_argument("--category", help="only list examples of this category (all of them up to --examples)")
    args = ap.parse_args()
    cache = {}
    count, kinds, examples = collections.Counter(), collections.Counter(), collections.defaultdict(list)
    q_with_miss = collections.Counter()
    n = 0
    for line in open(args.dump, encoding="utf-8"):
        r = json.loads(line)
        n += 1
        keys = schema(args.db_dir, r["db_id"], cache)
        qwords = words(r["question"])
        cats = set()
        for col in sorted(set(r["gold_columns"]) - set(r["columns"])):
            t, c = col.split(".", 1)
            if t not in r["tables"]:
                cat = "table_missed"
            elif re.search(r"select\s+(distinct\s+)?(\w+\.)?\*", r["sql"], re.I):
                cat = "star"
            elif any(near(w, q) for w in words(c) if len(w) >= 3 for q in qwords):
                cat = "mentioned"
            else:
                cat = "not_mentioned"
            count[cat] += 1
            kinds[cat + "/" + keys.get(col, "?")] += 1
            cats.add(cat)
            if len(examples[cat]) < args.examples and (not args.category or args.category == cat):
                examples[cat].append({"db": r["db_id"], "q": r["question"], "missed": col, "sql": r["sql"],
                                      "returned": len(r["columns"])})
        for cat in cats:
            q_with_miss[cat] += 1
    out = {"questions": n, "missed_columns": count, "questions_with_a_miss_of": q_with_miss, "by_kind": kinds,
           "examples": examples if not args.category else {args.category: examples[args.category]}}
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
