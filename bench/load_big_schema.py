#!/usr/bin/env python3
"""load_big_schema.py - turn a Spider 2.0-Lite schema file into an EMPTY SQLite database.

Usage:
  load_big_schema.py SCHEMA_JSON OUT.sqlite [--full-names] [--with-descriptions] [--max-columns N]

Input: {backend, db, n_tables, n_columns, tables: [{schema, table_name,
table_fullname, column_names, column_types, description}]} (see
../shared/datasets/README.md). Output: OUT.sqlite (replaced if it exists) with one
table per entry, every column, no rows, no foreign keys (the files declare none).

Naming
- Table: table_name as spelled in the file. If two entries share a name
  (case-insensitively, as SQLite compares names), or a name starts with the
  reserved prefix "sqlite_", the table becomes "<last schema component>__<name>"
  (then "_2", "_3", ... until unique); every such rename is listed in the summary.
  --full-names uses table_fullname instead (dots and dashes kept, identifier quoted).
- Columns keep their spelling; a duplicate (case-insensitive) gets "__2", "__3";
  an empty name is skipped. Both are listed.

Types: the original type text (FLOAT64, STRING, INT64, ...) is the declared type,
so SQLite's affinity rules apply to it and PRAGMA table_info returns it
unchanged. Type text that is not a plain word sequence with optional (n[,m]),
e.g. ARRAY<STRING>, is written as a quoted type name, which SQLite also returns
unchanged.

Column limit: SQLite refuses tables wider than SQLITE_LIMIT_COLUMN (2000 by
default; read from the linked library). A wider entry is SPLIT into
"<name>", "<name>__part2", ... of at most that many columns each (or
--max-columns N if smaller); each split is listed in the summary. The two
shipped files stay far below the limit (fec: 252 columns at most, ebi_chembl:
39), so no split happens for them; the code path is there for other files.

--with-descriptions writes each column's description as a "-- ..." comment line
inside the CREATE TABLE text (kept in sqlite_master.sql; invisible to PRAGMA).

Prints a JSON summary: tables, columns, skipped, renamed, split, type counts,
max columns per table, the column limit used, and seconds taken.
"""

import argparse
import collections
import json
import os
import re
import sqlite3
import sys
import time

PLAIN_TYPE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*( [A-Za-z_][A-Za-z0-9_]*)*( ?\(\s*[+-]?\d+\s*(,\s*[+-]?\d+\s*)?\))?$")


def qident(name):
    return '"' + name.replace('"', '""') + '"'


def declared_type(t):
    t = (t or "").strip()
    if not t:
        return ""
    if PLAIN_TYPE.match(t):
        return t
    return "'" + t.replace("'", "''") + "'"


def one_line(text, limit=500):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("schema_json")
    ap.add_argument("out_sqlite")
    ap.add_argument("--full-names", action="store_true", help="name tables by table_fullname")
    ap.add_argument("--with-descriptions", action="store_true", help="keep descriptions as SQL comments")
    ap.add_argument("--max-columns", type=int, default=0, help="split tables wider than this (default: SQLite's limit)")
    a = ap.parse_args()

    t0 = time.perf_counter()
    with open(a.schema_json, encoding="utf-8") as f:
        src = json.load(f)
    entries = src.get("tables")
    if not isinstance(entries, list):
        raise SystemExit("%s: no 'tables' list" % a.schema_json)

    if os.path.exists(a.out_sqlite):
        os.remove(a.out_sqlite)
    conn = sqlite3.connect(a.out_sqlite)
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_COLUMN) if hasattr(conn, "getlimit") else 2000
    width = min(limit, a.max_columns) if a.max_columns > 0 else limit

    used = set()  # lower-cased table names already created
    renamed, skipped, split = [], [], []
    type_counts = collections.Counter()
    n_tables = n_columns = 0
    max_cols = 0

    def unique_table_name(base, entry):
        name = base
        if name.lower() in used or name.lower().startswith("sqlite_"):
            prefix = (entry.get("schema") or "t").split(".")[-1] or "t"
            name = "%s__%s" % (prefix, base)
            i = 2
            while name.lower() in used:
                name = "%s__%s_%d" % (prefix, base, i)
                i += 1
            renamed.append({"from": entry.get("table_fullname") or base, "to": name})
        used.add(name.lower())
        return name

    conn.execute("BEGIN")
    for idx, e in enumerate(entries):
        base = (e.get("table_fullname") if a.full_names else e.get("table_name")) or e.get("table_name")
        cols = e.get("column_names") or []
        types = e.get("column_types") or []
        descs = e.get("description") or []
        if not base:
            skipped.append({"entry": idx, "reason": "no table name"})
            continue
        if not cols:
            skipped.append({"table": base, "reason": "no columns"})
            continue
        max_cols = max(max_cols, len(cols))

        defs, seen = [], collections.Counter()
        for i, c in enumerate(cols):
            if not c:
                skipped.append({"table": base, "column_index": i, "reason": "empty column name"})
                continue
            name = c
            seen[c.lower()] += 1
            if seen[c.lower()] > 1:
                k = seen[c.lower()]
                while True:
                    name = "%s__%d" % (c, k)
                    if seen[name.lower()] == 0:
                        break
                    k += 1
                seen[name.lower()] += 1
                renamed.append({"table": base, "from": c, "to": name})
            ty = types[i] if i < len(types) and isinstance(types[i], str) else ""
            type_counts[ty or "(none)"] += 1
            desc = descs[i] if i < len(descs) else None
            defs.append((name, declared_type(ty), desc))

        chunks = [defs[i : i + width] for i in range(0, len(defs), width)]
        names = []
        for part, chunk in enumerate(chunks, 1):
            tname = unique_table_name(base if part == 1 else "%s__part%d" % (base, part), e)
            names.append(tname)
            lines = []
            for j, (cn, ty, desc) in enumerate(chunk):
                sep = "," if j < len(chunk) - 1 else ""
                line = "  %s%s%s" % (qident(cn), (" " + ty) if ty else "", sep)
                if a.with_descriptions and desc:
                    line += "  -- " + one_line(desc)
                lines.append(line)
            conn.execute("CREATE TABLE %s (\n%s\n)" % (qident(tname), "\n".join(lines)))
            n_tables += 1
            n_columns += len(chunk)
        if len(chunks) > 1:
            split.append({"table": base, "columns": len(defs), "into": names})
    conn.commit()

    check_tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
    conn.close()
    summary = {
        "source": os.path.abspath(a.schema_json),
        "out": os.path.abspath(a.out_sqlite),
        "db": src.get("db"),
        "backend": src.get("backend"),
        "declared_tables": src.get("n_tables"),
        "declared_columns": src.get("n_columns"),
        "tables": n_tables,
        "columns": n_columns,
        "tables_in_file": check_tables,
        "max_columns_per_table": max_cols,
        "sqlite_column_limit": limit,
        "split_width": width,
        "overflow_policy": "tables wider than split_width are split into <name>, <name>__part2, ...",
        "split": split,
        "renamed": renamed,
        "skipped": skipped,
        "types": dict(type_counts.most_common()),
        "descriptions": "as SQL comments" if a.with_descriptions else "dropped",
        "seconds": round(time.perf_counter() - t0, 3),
    }
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
