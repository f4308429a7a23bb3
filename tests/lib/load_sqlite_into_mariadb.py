#!/usr/bin/env python3
"""load_sqlite_into_mariadb.py - copy a SQLite database into a fresh MariaDB database.

Usage:
  load_sqlite_into_mariadb.py SQLITE_FILE --socket PATH --dbname NAME
                              [--reader-role t2s_reader --reader-password PW]
                              [--mariadb /usr/bin/mariadb]

The MariaDB twin of load_sqlite_into_pg.py (it reads the SQLite file and picks
column types with that script's functions), for the server of
tests/lib/servers.sh (t2s_start_mariadb: root over the unix socket). Python 3
standard library only; it talks to MariaDB through the `mariadb` command-line
client.

What it does, in order:
  1. DROP DATABASE IF EXISTS NAME, CREATE DATABASE NAME (utf8mb4,
     utf8mb4_general_ci: the server's default kind of collation, so = and LIKE
     ignore case as they do on most MySQL databases).
  2. Recreates every ordinary SQLite table with the same names: BIGINT, DOUBLE
     and LONGBLOB where load_sqlite_into_pg.py picks bigint, double precision
     and bytea; text as VARCHAR(n) (n from the longest value, so it can be a key)
     or LONGTEXT past 700 characters. InnoDB tables.
  3. Inserts every row (batches of INSERT with standard string literals: the
     session has NO_BACKSLASH_ESCAPES and STRICT_ALL_TABLES, so no value is
     silently changed) and checks each table's row count against SQLite's.
  4. Adds the primary keys, then the foreign keys, each only if the server
     accepts it (InnoDB needs a key on the referenced columns, comparable types
     and every referencing value present); skipped ones are listed.
  5. ANALYZE TABLE.
  6. With --reader-role: CREATE USER 'role'@'%' IDENTIFIED BY the password (when
     it does not exist) and GRANT SELECT ON NAME.* to it, nothing else.

Output (stdout): one JSON object {"database", "tables", "rows", "table_rows",
"column_types", "primary_keys_skipped", "foreign_keys_added",
"foreign_keys_skipped", "reader_role"}. Exit status 0, or 1 with a message.
"""

import argparse
import json
import math
import os
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load_sqlite_into_pg as pgload  # noqa: E402  (read_sqlite, choose_type)

VARCHAR_MAX = 700
SESSION = "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES,NO_ENGINE_SUBSTITUTION';\n"


class LoadError(Exception):
    pass


def qi(name):
    return "`" + name.replace("`", "``") + "`"


def ql(text):
    return "'" + text.replace("'", "''") + "'"


def literal(v):
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "NULL" if math.isnan(v) or math.isinf(v) else repr(v)
    if isinstance(v, bytes):
        return "X'" + v.hex() + "'" if v else "''"
    return ql(v)


class Client:
    def __init__(self, exe, socket):
        self.cmd = [exe, "--no-defaults", "--socket=" + socket, "-u", "root", "--batch",
                    "--skip-column-names", "--default-character-set=utf8mb4"]

    def run(self, sql, db=None, check=True):
        """Runs a script; returns (ok, stdout, stderr)."""
        cmd = self.cmd + ([db] if db else [])
        p = subprocess.run(cmd, input=(SESSION + sql).encode("utf-8"), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace").strip()
        if check and p.returncode != 0:
            raise LoadError("mariadb failed on %s: %s" % (db or "(server)", err))
        return p.returncode == 0, out, err


def column_type(pg_type, max_len):
    if pg_type == "bigint":
        return "BIGINT"
    if pg_type == "double precision":
        return "DOUBLE"
    if pg_type == "bytea":
        return "LONGBLOB"
    if max_len > VARCHAR_MAX:
        return "LONGTEXT"
    return "VARCHAR(%d)" % max(16, min(VARCHAR_MAX, max_len * 2))


def read_rows(path, table):
    con = sqlite3.connect("file:%s?mode=ro" % os.path.abspath(path), uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        sel = "SELECT %s FROM main.%s" % (", ".join(pgload.qi(c["name"]) for c in table["columns"]),
                                          pgload.qi(table["name"]))
        return con.execute(sel).fetchall()
    finally:
        con.close()


def table_types(table, rows):
    types = []
    for i, c in enumerate(table["columns"]):
        kinds, max_int, max_len = set(), 0, 0
        for r in rows:
            v = r[i]
            if v is None:
                continue
            if isinstance(v, int):
                kinds.add("int")
                max_int = max(max_int, abs(v))
            elif isinstance(v, float):
                kinds.add("float")
            elif isinstance(v, bytes):
                kinds.add("bytes")
            else:
                kinds.add("str")
            max_len = max(max_len, len(str(v)) if not isinstance(v, bytes) else 0)
        types.append(column_type(pgload.choose_type(c["decl"], kinds, max_int), max_len))
    return types


def load(args):
    tables, skipped = pgload.read_sqlite(args.sqlite_file)
    cli = Client(args.mariadb, args.socket)
    db = args.dbname
    cli.run("DROP DATABASE IF EXISTS %s; CREATE DATABASE %s CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;"
            % (qi(db), qi(db)))
    summary = {"database": db, "tables": 0, "rows": 0, "table_rows": {}, "column_types": {},
               "primary_keys_skipped": [], "foreign_keys_added": [], "foreign_keys_skipped": [],
               "tables_skipped": skipped, "reader_role": None}
    script = ["SET FOREIGN_KEY_CHECKS = 0;"]
    for t in tables:
        rows = read_rows(args.sqlite_file, t)
        types = table_types(t, rows)
        summary["column_types"][t["name"]] = {c["name"]: ty for c, ty in zip(t["columns"], types)}
        cols = ", ".join("%s %s" % (qi(c["name"]), ty) for c, ty in zip(t["columns"], types))
        script.append("CREATE TABLE %s (%s) ENGINE=InnoDB;" % (qi(t["name"]), cols))
        names = ", ".join(qi(c["name"]) for c in t["columns"])
        for i in range(0, len(rows), 500):
            values = ",\n".join("(" + ", ".join(literal(v) for v in r) + ")" for r in rows[i:i + 500])
            script.append("INSERT INTO %s (%s) VALUES\n%s;" % (qi(t["name"]), names, values))
        summary["table_rows"][t["name"]] = len(rows)
        summary["rows"] += len(rows)
        summary["tables"] += 1
    script.append("COMMIT;")
    cli.run("\n".join(script), db)
    for t in tables:
        _, out, _ = cli.run("SELECT COUNT(*) FROM %s;" % qi(t["name"]), db)
        if int(out.strip()) != summary["table_rows"][t["name"]]:
            raise LoadError("table %s: %s rows in MariaDB, %d in SQLite" %
                            (t["name"], out.strip(), summary["table_rows"][t["name"]]))
    for t in tables:
        if t["pk"]:
            ok, _, err = cli.run("ALTER TABLE %s ADD PRIMARY KEY (%s);" %
                                 (qi(t["name"]), ", ".join(qi(c) for c in t["pk"])), db, check=False)
            if not ok:
                summary["primary_keys_skipped"].append({"table": t["name"], "reason": err})
    by_lower = {t["name"].lower(): t for t in tables}
    for t in tables:
        for fk in t["fks"]:
            ref = by_lower.get((fk["ref_table"] or "").lower())
            entry = {"table": t["name"], "columns": fk["columns"], "ref_table": fk["ref_table"],
                     "ref_columns": fk["ref_columns"]}
            if not ref:
                summary["foreign_keys_skipped"].append(dict(entry, reason="no such table"))
                continue
            ref_cols = fk["ref_columns"]
            if any(c is None for c in ref_cols):
                ref_cols = ref["pk"]
            ref_names = {c["name"].lower(): c["name"] for c in ref["columns"]}
            ref_cols = [ref_names.get((c or "").lower()) for c in ref_cols]
            if not ref_cols or None in ref_cols or len(ref_cols) != len(fk["columns"]):
                summary["foreign_keys_skipped"].append(dict(entry, reason="no such columns"))
                continue
            ok, _, err = cli.run("ALTER TABLE %s ADD FOREIGN KEY (%s) REFERENCES %s (%s);" % (
                qi(t["name"]), ", ".join(qi(c) for c in fk["columns"]), qi(ref["name"]),
                ", ".join(qi(c) for c in ref_cols)), db, check=False)
            if ok:
                summary["foreign_keys_added"].append(entry)
            else:
                summary["foreign_keys_skipped"].append(dict(entry, reason=err))
    if tables:
        cli.run("ANALYZE TABLE %s;" % ", ".join(qi(t["name"]) for t in tables), db)
    if args.reader_role:
        role = ql(args.reader_role) + "@'%'"
        cli.run("CREATE USER IF NOT EXISTS %s IDENTIFIED BY %s; GRANT SELECT ON %s.* TO %s;" %
                (role, ql(args.reader_password), qi(db), role))
        summary["reader_role"] = args.reader_role
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sqlite_file")
    ap.add_argument("--socket", required=True)
    ap.add_argument("--dbname", required=True)
    ap.add_argument("--reader-role", default="")
    ap.add_argument("--reader-password", default="")
    ap.add_argument("--mariadb", default="mariadb")
    args = ap.parse_args()
    try:
        print(json.dumps(load(args)))
    except (LoadError, pgload.LoadError, sqlite3.Error) as e:
        print("load_sqlite_into_mariadb: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
