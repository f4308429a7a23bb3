#!/usr/bin/env python3
"""load_sqlite_into_pg.py - copy a SQLite database into a fresh PostgreSQL database.

Usage:
  load_sqlite_into_pg.py SQLITE_FILE --host H --port P --dbname NAME
                         [--schema public] [--reader-role t2s_reader]
                         [--user postgres] [--psql /usr/bin/psql]

Integration tests use it to serve the same data (for example a Spider database)
from PostgreSQL as from SQLite. Python 3 standard library only; it talks to
PostgreSQL exclusively through the `psql` command-line client (no psycopg).
`--user` must be a superuser (or hold CREATEDB and CREATEROLE); with the test
cluster of tests/lib/servers.sh that is `postgres` with trust authentication.

What it does, in order:
  1. DROP DATABASE IF EXISTS NAME (forcing other sessions off), CREATE DATABASE
     NAME (UTF8, from template0); CREATE SCHEMA when --schema is not public.
  2. Recreates every ordinary SQLite table (sqlite_* internals, virtual tables
     and their shadow tables are skipped and listed) with the same table and
     column names, case preserved, always double-quoted. Column types are
     chosen from the declared type's SQLite affinity AND the stored values:
       - bigint            every non-null value is an integer and the affinity
                           is INTEGER, NUMERIC or none;
       - double precision  every non-null value is numeric (int or real), the
                           affinity is INTEGER, REAL, NUMERIC or none, and no
                           integer is too large for a double to hold exactly;
       - bytea             every non-null value is a BLOB;
       - text              everything else (all TEXT-affinity columns, dates,
                           mixed columns). Text keeps SQLite's own spelling.
     An empty column gets bigint for INTEGER affinity, double precision for
     REAL affinity or a DEC/NUM declared type, text otherwise.
  3. Copies every row with COPY ... FROM STDIN in PostgreSQL's text format
     (not CSV: psql ends COPY data at a line `\\.` even inside a quoted CSV
     value, while the text format escapes newlines and backslashes so no data
     line can look like that), all tables in one psql script and one
     transaction, then checks that PostgreSQL's row
     count of each table equals SQLite's (exit 1 otherwise).
  4. Adds the primary keys, then the declared UNIQUE constraints (SQLite
     unique indexes on plain columns), each only if the data allows it.
  5. Adds the declared foreign keys that are valid in PostgreSQL: referenced
     table and columns exist (names matched case-insensitively, as SQLite
     does), the referenced columns are exactly a primary key or unique
     constraint that exists in PostgreSQL, the column types are comparable and
     every non-null referencing value exists. The others are skipped and
     listed with the reason (PostgreSQL's own message when it refused).
  6. ANALYZE.
  7. Creates the role --reader-role (LOGIN, no password) when it does not
     exist and grants it CONNECT on the database, USAGE on the schema and
     SELECT on its tables, nothing else; TEMPORARY on the database is revoked
     from PUBLIC so the role cannot create temp tables. Pass --reader-role ''
     to skip this step.

Output (stdout): one JSON object
  {"database", "schema",
   "tables": number of tables loaded,
   "rows": total number of rows loaded,
   "table_rows": {table: rows},
   "column_types": {table: {column: postgres type}},
   "primary_keys_added": [...], "primary_keys_skipped": [...],
   "unique_added": [...], "unique_skipped": [...],
   "foreign_keys_added": [{"table", "columns", "ref_table", "ref_columns"}],
   "foreign_keys_skipped": [{... as above ..., "reason"}],
   "tables_skipped": [{"table", "reason"}],
   "reader_role": name or null}
Exit status: 0 on success, 1 on any error (message on stderr), 2 on bad usage.
Text values that are not valid UTF-8 or contain NUL characters cannot be stored
losslessly in PostgreSQL text and make the load fail with an error.
"""

import argparse
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import urllib.parse

MAX_EXACT_DOUBLE_INT = 2 ** 53


class LoadError(Exception):
    pass


def qi(name):
    """Quotes an SQL identifier (always, so case and odd characters survive)."""
    return '"' + name.replace('"', '""') + '"'


def ql(text):
    """Quotes an SQL string literal (standard_conforming_strings is on)."""
    return "'" + text.replace("'", "''") + "'"


def affinity(decl):
    """SQLite's column affinity rules (https://sqlite.org/datatype3.html 3.1)."""
    d = (decl or "").upper()
    if "INT" in d:
        return "INTEGER"
    if "CHAR" in d or "CLOB" in d or "TEXT" in d:
        return "TEXT"
    if "BLOB" in d or d == "":
        return "BLOB"
    if "REAL" in d or "FLOA" in d or "DOUB" in d:
        return "REAL"
    return "NUMERIC"


def choose_type(decl, kinds, max_abs_int):
    """Picks the PostgreSQL type for a column; see the module comment."""
    aff = affinity(decl)
    if not kinds:
        d = (decl or "").upper()
        if aff == "INTEGER":
            return "bigint"
        if aff == "REAL" or (aff == "NUMERIC" and ("DEC" in d or "NUM" in d)):
            return "double precision"
        return "text"
    if kinds == {"bytes"}:
        return "bytea"
    if aff == "TEXT":
        return "text"
    if kinds == {"int"} and aff != "REAL":
        return "bigint"
    if kinds <= {"int", "float"} and max_abs_int <= MAX_EXACT_DOUBLE_INT:
        return "double precision"
    return "text"


COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def copy_field(value):
    """One field of COPY's text format: NULL is \\N; backslash, newline,
    carriage return and tab (the delimiter) are backslash-escaped."""
    if value is None:
        return "\\N"
    if isinstance(value, bool):  # not produced by sqlite3, kept for safety
        value = int(value)
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if math.isnan(value):
            text = "NaN"
        elif math.isinf(value):
            text = "Infinity" if value > 0 else "-Infinity"
        else:
            text = repr(value)
    elif isinstance(value, bytes):
        text = "\\x" + value.hex()
    else:
        text = value
    return text.translate(COPY_ESCAPES)


class Psql:
    """Runs SQL scripts through the psql CLI as the admin user."""

    def __init__(self, exe, host, port, user):
        self.exe = exe
        self.host = host
        self.port = str(port)
        self.user = user

    def run(self, sql, dbname, single_transaction=False):
        """Runs a script given as text; returns (stdout, stderr). Raises
        LoadError on failure."""
        return self._run("-", sql.encode("utf-8"), dbname, single_transaction)

    def run_file(self, path, dbname, single_transaction=False):
        """Runs the script file at path; as run()."""
        return self._run(path, b"", dbname, single_transaction)

    def _run(self, source, stdin, dbname, single_transaction):
        cmd = [self.exe, "-X", "-q", "-A", "-t", "-h", self.host, "-p", self.port,
               "-U", self.user, "-d", dbname, "-v", "ON_ERROR_STOP=1", "-f", source]
        if single_transaction:
            cmd.insert(1, "-1")
        env = dict(os.environ)
        env.setdefault("PGCONNECT_TIMEOUT", "10")
        env["PGCLIENTENCODING"] = "UTF8"
        proc = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env)
        out = proc.stdout.decode("utf-8", "replace")
        err = proc.stderr.decode("utf-8", "replace")
        if proc.returncode != 0:
            raise LoadError("psql failed (exit %d) on database %s:\n%s" %
                            (proc.returncode, dbname, err.strip()))
        return out, err


def read_sqlite(path):
    """Returns (tables, skipped): tables is a list of dicts describing every
    ordinary table with its columns, primary key, unique sets and foreign keys."""
    if not os.path.isfile(path):
        raise LoadError("no such file: %s" % path)
    uri = "file:%s?mode=ro" % _uri_path(os.path.abspath(path))
    con = sqlite3.connect(uri, uri=True)
    try:
        skip_kind = {}
        try:
            for row in con.execute("PRAGMA main.table_list"):
                # (schema, name, type, ncol, wr, strict); type: table|view|shadow|virtual
                if row[2] in ("shadow", "virtual"):
                    skip_kind[row[1]] = row[2] + " table"
        except sqlite3.DatabaseError:
            pass
        tables, skipped = [], []
        names = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
        for name in names:
            if name.lower().startswith("sqlite_"):
                continue
            if name in skip_kind:
                skipped.append({"table": name, "reason": skip_kind[name]})
                continue
            tables.append(_read_table(con, name))
        return tables, skipped
    finally:
        con.close()


def _uri_path(path):
    """Percent-encodes a filesystem path for an SQLite file: URI."""
    return urllib.parse.quote(path, safe="/")


def _read_table(con, name):
    cols = []
    pk = []
    for row in con.execute("PRAGMA main.table_xinfo(%s)" % qi(name)):
        cid, cname, ctype, _notnull, _dflt, pkpos, hidden = row
        if hidden == 1:  # hidden column of a virtual table
            continue
        cols.append({"name": cname, "decl": ctype or ""})
        if pkpos:
            pk.append((pkpos, cname))
    pk = [c for _, c in sorted(pk)]
    uniques = []
    for row in con.execute("PRAGMA main.index_list(%s)" % qi(name)):
        _seq, iname, unique, origin, partial = row[:5]
        if not unique or partial or origin == "pk":
            continue
        icols = [r[2] for r in con.execute("PRAGMA main.index_info(%s)" % qi(iname))]
        if not icols or any(c is None for c in icols):  # expression index
            continue
        uniques.append(icols)
    fks = {}
    for row in con.execute("PRAGMA main.foreign_key_list(%s)" % qi(name)):
        fid, seq, rtable, fcol, tcol, on_update, on_delete, _match = row
        fk = fks.setdefault(fid, {"ref_table": rtable, "pairs": [],
                                  "on_update": on_update, "on_delete": on_delete})
        fk["pairs"].append((seq, fcol, tcol))
    fklist = []
    for fid in sorted(fks):
        fk = fks[fid]
        pairs = sorted(fk["pairs"])
        fklist.append({"columns": [p[1] for p in pairs],
                       "ref_columns": [p[2] for p in pairs],
                       "ref_table": fk["ref_table"],
                       "on_update": fk["on_update"], "on_delete": fk["on_delete"]})
    return {"name": name, "columns": cols, "pk": pk, "uniques": uniques, "fks": fklist}


def dump_table(path, table, data_path):
    """Writes the table's rows as COPY text-format lines to data_path and
    returns (row count, PostgreSQL type of each column)."""
    uri = "file:%s?mode=ro" % _uri_path(os.path.abspath(path))
    con = sqlite3.connect(uri, uri=True)
    ncol = len(table["columns"])
    kinds = [set() for _ in range(ncol)]
    max_int = [0] * ncol
    count = 0
    sel = "SELECT %s FROM main.%s" % (", ".join(qi(c["name"]) for c in table["columns"]),
                                      qi(table["name"]))
    try:
        with open(data_path, "w", encoding="utf-8", newline="") as out:
            cur = con.execute(sel)
            while True:
                try:
                    batch = cur.fetchmany(1000)
                except sqlite3.OperationalError as e:
                    raise LoadError("table %s: %s (text must be valid UTF-8)" %
                                    (table["name"], e))
                if not batch:
                    break
                for row in batch:
                    fields = []
                    for i, v in enumerate(row):
                        if v is not None:
                            if isinstance(v, int):
                                kinds[i].add("int")
                                if abs(v) > max_int[i]:
                                    max_int[i] = abs(v)
                            elif isinstance(v, float):
                                kinds[i].add("float")
                            elif isinstance(v, bytes):
                                kinds[i].add("bytes")
                            else:
                                kinds[i].add("str")
                                if "\x00" in v:
                                    raise LoadError(
                                        "table %s column %s: text contains a NUL character, "
                                        "which PostgreSQL text cannot store" %
                                        (table["name"], table["columns"][i]["name"]))
                        fields.append(copy_field(v))
                    out.write("\t".join(fields))
                    out.write("\n")
                    count += 1
    finally:
        con.close()
    types = [choose_type(c["decl"], kinds[i], max_int[i]) for i, c in enumerate(table["columns"])]
    return count, types


NOTICE_RE = re.compile(r"NOTICE:\s+t2s:(ok|fail):(\d+):?(.*)")


def guarded(statements):
    """Wraps each (key, sql) so that it runs in its own subtransaction and
    reports success or PostgreSQL's error as a NOTICE that parse_guarded reads."""
    parts = []
    for key, sql in statements:
        tag, n = "$t2s$", 0
        while tag in sql:
            n += 1
            tag = "$t2s%d$" % n
        parts.append(
            "DO %s DECLARE d text; BEGIN %s; RAISE NOTICE 't2s:ok:%d'; "
            "EXCEPTION WHEN others THEN GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL; "
            "RAISE NOTICE 't2s:fail:%d:%%', "
            "replace(SQLERRM || coalesce(' (' || nullif(d, '') || ')', ''), E'\\n', ' '); "
            "END %s;\n"
            % (tag, sql, key, key, tag))
    return "SET client_min_messages = notice;\n" + "".join(parts)


def parse_guarded(stderr):
    """Returns {key: None (ok) or error message} from guarded()'s notices."""
    result = {}
    for line in stderr.splitlines():
        m = NOTICE_RE.search(line)
        if m:
            result[int(m.group(2))] = None if m.group(1) == "ok" else m.group(3).strip()
    return result


def fk_desc(table, fk):
    return {"table": table, "columns": list(fk["columns"]),
            "ref_table": fk["ref_table"], "ref_columns": list(fk["ref_columns"])}


def load(args):
    psql = Psql(args.psql, args.host, args.port, args.user)
    tables, tables_skipped = read_sqlite(args.sqlite_file)
    schema = args.schema
    db = args.dbname
    report = {"database": db, "schema": schema, "tables": 0, "rows": 0, "table_rows": {},
              "column_types": {}, "primary_keys_added": [], "primary_keys_skipped": [],
              "unique_added": [], "unique_skipped": [], "foreign_keys_added": [],
              "foreign_keys_skipped": [], "tables_skipped": tables_skipped,
              "reader_role": args.reader_role or None}

    psql.run("DROP DATABASE IF EXISTS %s WITH (FORCE);\n"
             "CREATE DATABASE %s TEMPLATE template0 ENCODING 'UTF8';\n" % (qi(db), qi(db)),
             "postgres")

    with tempfile.TemporaryDirectory(prefix="t2s-load-") as tmp:
        for i, t in enumerate(tables):
            t["data"] = os.path.join(tmp, "%d.copy" % i)
            t["rows"], t["types"] = dump_table(args.sqlite_file, t, t["data"])
        script_path = os.path.join(tmp, "load.sql")
        with open(script_path, "w", encoding="utf-8", newline="") as script:
            if schema != "public":
                script.write("CREATE SCHEMA %s;\n" % qi(schema))
            for t in tables:
                coldefs = ", ".join("%s %s" % (qi(c["name"]), ty)
                                    for c, ty in zip(t["columns"], t["types"]))
                script.write("CREATE TABLE %s.%s (%s);\n" % (qi(schema), qi(t["name"]), coldefs))
                if not t["columns"] or not t["rows"]:
                    continue
                # The data follows the command in the same script (psql reads
                # COPY FROM STDIN data from its command source) up to "\.".
                script.write("COPY %s.%s (%s) FROM STDIN;\n" % (
                    qi(schema), qi(t["name"]), ", ".join(qi(c["name"]) for c in t["columns"])))
                with open(t["data"], encoding="utf-8", newline="") as data:
                    while True:
                        chunk = data.read(1 << 20)
                        if not chunk:
                            break
                        script.write(chunk)
                script.write("\\.\n")
        psql.run_file(script_path, db, single_transaction=True)

    # Row counts as PostgreSQL sees them must equal SQLite's.
    if tables:
        q = " UNION ALL ".join("SELECT %d, count(*) FROM %s.%s" % (i, qi(schema), qi(t["name"]))
                               for i, t in enumerate(tables))
        out, _ = psql.run(q + ";\n", db)
        got = {}
        for line in out.splitlines():
            if "|" in line:
                k, v = line.split("|", 1)
                got[int(k)] = int(v)
        for i, t in enumerate(tables):
            if got.get(i) != t["rows"]:
                raise LoadError("table %s: %s rows in PostgreSQL, %d in SQLite" %
                                (t["name"], got.get(i), t["rows"]))

    for t in tables:
        report["table_rows"][t["name"]] = t["rows"]
        report["column_types"][t["name"]] = {c["name"]: ty for c, ty in zip(t["columns"], t["types"])}
        report["rows"] += t["rows"]
    report["tables"] = len(tables)

    # Primary keys and unique constraints, each in its own subtransaction.
    keyed = []  # (key, kind, table, columns)
    stmts = []
    for t in tables:
        sets = []
        if t["pk"]:
            sets.append(("pk", t["pk"]))
        for u in t["uniques"]:
            if sorted(u) != sorted(t["pk"]) and all(sorted(u) != sorted(s[1]) for s in sets):
                sets.append(("unique", u))
        for kind, cols in sets:
            key = len(keyed)
            keyed.append((key, kind, t, cols))
            stmts.append((key, "ALTER TABLE %s.%s ADD %s (%s)" % (
                qi(schema), qi(t["name"]), "PRIMARY KEY" if kind == "pk" else "UNIQUE",
                ", ".join(qi(c) for c in cols))))
    constraints = {}  # lower table name -> list of lower-cased column sets present in PG
    if stmts:
        _, err = psql.run(guarded(stmts), db)
        res = parse_guarded(err)
        for key, kind, t, cols in keyed:
            entry = {"table": t["name"], "columns": list(cols)}
            outcome = res.get(key, "no result from psql")
            if outcome is None:
                report["primary_keys_added" if kind == "pk" else "unique_added"].append(entry)
                constraints.setdefault(t["name"].lower(), []).append(
                    frozenset(c.lower() for c in cols))
            else:
                entry["reason"] = outcome
                report["primary_keys_skipped" if kind == "pk" else "unique_skipped"].append(entry)

    # Foreign keys: structural checks here, type and data checks by PostgreSQL.
    by_lower = {t["name"].lower(): t for t in tables}
    fk_stmts, fk_keyed, seen = [], [], set()
    for t in tables:
        colmap = {c["name"].lower(): c["name"] for c in t["columns"]}
        for fk in t["fks"]:
            desc = fk_desc(t["name"], fk)
            ref = by_lower.get((fk["ref_table"] or "").lower())
            if ref is None:
                desc["reason"] = "referenced table %s does not exist" % fk["ref_table"]
                report["foreign_keys_skipped"].append(desc)
                continue
            desc["ref_table"] = ref["name"]
            local = [colmap.get((c or "").lower()) for c in fk["columns"]]
            if None in local:
                desc["reason"] = "referencing column does not exist"
                report["foreign_keys_skipped"].append(desc)
                continue
            rcols = fk["ref_columns"]
            if all(c is None for c in rcols):
                rcols = ref["pk"]  # REFERENCES t without columns means its primary key
            rmap = {c["name"].lower(): c["name"] for c in ref["columns"]}
            remote = [rmap.get((c or "").lower()) for c in rcols]
            if len(remote) != len(local) or None in remote:
                desc["reason"] = "referenced column does not exist"
                report["foreign_keys_skipped"].append(desc)
                continue
            desc["columns"], desc["ref_columns"] = local, remote
            if frozenset(c.lower() for c in remote) not in constraints.get(ref["name"].lower(), []):
                desc["reason"] = ("referenced columns are not a primary key or unique "
                                  "constraint in PostgreSQL")
                report["foreign_keys_skipped"].append(desc)
                continue
            sig = (t["name"], tuple(local), ref["name"], tuple(remote))
            if sig in seen:
                desc["reason"] = "duplicate of an earlier foreign key"
                report["foreign_keys_skipped"].append(desc)
                continue
            seen.add(sig)
            actions = ""
            for word, act in (("DELETE", fk["on_delete"]), ("UPDATE", fk["on_update"])):
                act = (act or "").upper()
                if act in ("CASCADE", "RESTRICT", "SET NULL", "SET DEFAULT"):
                    actions += " ON %s %s" % (word, act)
            key = len(fk_keyed)
            fk_keyed.append((key, desc))
            fk_stmts.append((key, "ALTER TABLE %s.%s ADD FOREIGN KEY (%s) REFERENCES %s.%s (%s)%s" % (
                qi(schema), qi(t["name"]), ", ".join(qi(c) for c in local),
                qi(schema), qi(ref["name"]), ", ".join(qi(c) for c in remote), actions)))
    if fk_stmts:
        _, err = psql.run(guarded(fk_stmts), db)
        res = parse_guarded(err)
        for key, desc in fk_keyed:
            outcome = res.get(key, "no result from psql")
            if outcome is None:
                report["foreign_keys_added"].append(desc)
            else:
                desc["reason"] = outcome
                report["foreign_keys_skipped"].append(desc)

    psql.run("ANALYZE;\n", db)

    if args.reader_role:
        ensure_role(psql, args.reader_role)
        role = qi(args.reader_role)
        psql.run("REVOKE TEMPORARY ON DATABASE %s FROM PUBLIC;\n"
                 "GRANT CONNECT ON DATABASE %s TO %s;\n"
                 "GRANT USAGE ON SCHEMA %s TO %s;\n"
                 "GRANT SELECT ON ALL TABLES IN SCHEMA %s TO %s;\n" % (
                     qi(db), qi(db), role, qi(schema), role, qi(schema), role), db)
    return report


def ensure_role(psql, role):
    """Creates the LOGIN role unless it exists (tolerating a concurrent loader
    creating it at the same moment)."""
    exists = "SELECT count(*) FROM pg_roles WHERE rolname = %s;\n" % ql(role)
    if psql.run(exists, "postgres")[0].strip() == "1":
        return
    try:
        psql.run("CREATE ROLE %s LOGIN;\n" % qi(role), "postgres")
    except LoadError:
        if psql.run(exists, "postgres")[0].strip() != "1":
            raise


def main(argv=None):
    ap = argparse.ArgumentParser(description="Copy a SQLite database into PostgreSQL "
                                 "(see the module docstring).")
    ap.add_argument("sqlite_file")
    ap.add_argument("--host", default=os.environ.get("T2S_TEST_PG_HOST", "127.0.0.1"))
    ap.add_argument("--port", default=os.environ.get("T2S_TEST_PG_PORT", "5432"))
    ap.add_argument("--dbname", required=True)
    ap.add_argument("--schema", default="public")
    ap.add_argument("--reader-role", default="t2s_reader")
    ap.add_argument("--user", default="postgres", help="admin (superuser) to connect as")
    ap.add_argument("--psql", default="/usr/bin/psql")
    args = ap.parse_args(argv)
    try:
        report = load(args)
    except (LoadError, sqlite3.DatabaseError, OSError) as e:
        print("load_sqlite_into_pg: %s" % e, file=sys.stderr)
        return 1
    json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
