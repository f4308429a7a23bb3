"""The questions of one database for the latency benches (link_speed.py,
builtin_speed.py), Python 3 standard library only.

- schema_from_service(), schema_from_sqlite(): [(table, [column, ...])] as the
  service shows it (GET /databases/DB) or read from the SQLite file.
- builtin_questions(): questions generated from such a schema with a fixed
  seed: templates filled with the words of random column and table names.
- file_questions(): the questions of a Spider-format JSON list (those of one
  database when it has any) or of a text file, one a line.
"""

import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


TEMPLATES = [
    "total {c1} by {c2}",
    "average {c1} for each {t1}",
    "how many {t1} have {c1} greater than 10",
    "list the {c1} and {c2} of {t1}",
    "which {t1} has the highest {c1}",
    "show {c1} of {t1} where {c2} is missing",
    "count of {t1} per {c1} in 2020",
    "top 5 {c1} ordered by {c2}",
    "{c1} and {c2} for every {t1} with {c3}",
    "compare {c1} across {c2}",
]


def words(name):
    """Split an identifier into lower-case words (snake_case, camelCase, digits)."""
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    s = re.sub(r"([A-Za-z])([0-9])", r"\1 \2", s)
    parts = re.split(r"[^A-Za-z0-9]+", s)
    return " ".join(p.lower() for p in parts if p)


def schema_from_service(client, db):
    try:
        doc = client.get_json("/databases/" + db)
    except (benchlib.HttpError, OSError) as e:
        raise SystemExit("builtin questions: cannot read the schema of %r: %s" % (db, e))
    out = []
    for t in doc.get("tables") or []:
        cols = [c.get("name") for c in t.get("columns") or [] if isinstance(c, dict) and c.get("name")]
        out.append((t.get("name"), cols))
    return out


def schema_from_sqlite(path):
    s = benchlib.sqlite_schema(benchlib.open_sqlite_readonly(path))
    return [(t, [c for c, _ in s["columns"][t]]) for t in s["tables"]]


def builtin_questions(schema, count, seed):
    rng = random.Random(seed)
    tables = [(t, cols) for t, cols in schema if t and cols]
    if not tables:
        raise SystemExit("builtin questions: the schema has no tables with columns")
    out = []
    for _ in range(count):
        t, cols = rng.choice(tables)
        picks = [rng.choice(cols) for _ in range(3)]
        if rng.random() < 0.3:  # some questions span two tables
            t2, cols2 = rng.choice(tables)
            picks[1] = rng.choice(cols2)
        tmpl = rng.choice(TEMPLATES)
        out.append(tmpl.format(t1=words(t), c1=words(picks[0]), c2=words(picks[1]), c3=words(picks[2])))
    return out


def file_questions(path, db):
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        mine = [q["question"] for q in data if q.get("db_id") == db]
        return mine or [q["question"] for q in data], ("spider-json db_id=%s" % db) if mine else "spider-json (all databases)"
    with open(path, encoding="utf-8") as f:
        return [l.strip() for l in f if l.strip()], "text file"
