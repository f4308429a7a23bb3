"""Spider-format questions and the gold tables and columns of their gold SQL,
shared by the bench scripts (Python 3 standard library only).

- load_questions(), selected_questions(): a Spider/BIRD question file and the
  evaluators' --questions/--db-filter/--limit selection of it.
- Database: one SQLite file's schema, the tables and columns a query reads
  (compiled with EXPLAIN under an authorizer, never run) and the CREATE TABLE
  rendering the token counts are taken on.
- database_for(): the opened database of a question, cached per db_id.
- parse_link_response(): the tables and columns of a /link answer, in a
  Database's names.
"""

import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def load_questions(path, key="question"):
    """Entries of a Spider/BIRD question file as dicts (index, db_id, question,
    sql, evidence); question is the text under key (question or question_syn).
    Entries without a text under key are dropped (their index is kept)."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    out = []
    for i, q in enumerate(data):
        sql = q.get("query", q.get("SQL"))
        if not isinstance(sql, str) or "db_id" not in q or "question" not in q:
            raise SystemExit("%s: entry %d lacks db_id/question/query" % (path, i))
        text = q.get(key)
        if not isinstance(text, str) or not text.strip():
            continue
        ev = q.get("evidence")
        out.append({"index": i, "db_id": q["db_id"], "question": text, "sql": sql,
                    "evidence": ev if isinstance(ev, str) and ev.strip() else None})
    return out


class Database:
    """One SQLite database: its schema and the gold extractor."""

    def __init__(self, db_id, path):
        self.db_id = db_id
        self.path = path
        self.conn = benchlib.open_sqlite_readonly(path)
        s = benchlib.sqlite_schema(self.conn)
        self.tables = s["tables"]
        self.columns = s["columns"]
        self.fks = s["fks"]
        self.table_by_lower = {t.lower(): t for t in self.tables}
        self.all_columns = {(t.lower(), c.lower()) for t in self.tables for c, _ in self.columns[t]}
        self.n_columns = len(self.all_columns)
        self.full_render = self.render(set(self.table_by_lower), self.all_columns)
        self.full_tokens = benchlib.approx_tokens(self.full_render)

    def gold(self, sql):
        """Return (tables, columns) read by sql, lower-cased; raises sqlite3.Error."""
        tables, columns = set(), set()

        def auth(action, arg1, arg2, dbname, source):
            if action == sqlite3.SQLITE_READ and arg1 and not arg1.lower().startswith("sqlite_"):
                t = arg1.lower()
                tables.add(t)
                if arg2:
                    columns.add((t, arg2.lower()))
            return sqlite3.SQLITE_OK

        self.conn.set_authorizer(auth)
        try:
            self.conn.execute("EXPLAIN " + sql).fetchall()
        finally:
            self.conn.set_authorizer(None)
        return tables, columns

    def canonical_table(self, name):
        """Map a returned table name to the lower-cased DB name, or None if unknown."""
        n = name.lower()
        if n in self.table_by_lower:
            return n
        if n.startswith("main.") and n[5:] in self.table_by_lower:
            return n[5:]
        tail = n.rsplit(".", 1)[-1]
        return tail if tail in self.table_by_lower else None

    def render(self, tables_lower, columns_lower):
        """CREATE TABLE text of the given tables, showing only the given columns
        and the foreign keys whose both ends are shown."""
        parts = []
        for t in self.tables:
            tl = t.lower()
            if tl not in tables_lower:
                continue
            cols = [(c, ty) for c, ty in self.columns[t] if (tl, c.lower()) in columns_lower]
            fks = []
            for c, rt, rc in self.fks[t]:
                rtl = rt.lower()
                if (tl, c.lower()) in columns_lower and rtl in tables_lower and (not rc or (rtl, rc.lower()) in columns_lower):
                    fks.append((c, rt, rc or "?"))
            parts.append((t, cols, fks))
        return benchlib.render_create_tables(parts)


def parse_link_response(db, resp):
    """Linked (tables, columns, unknown names, inconsistencies) from a /link answer."""
    tables, columns, unknown = set(), set(), []
    listed_tables = set()
    for t in resp.get("tables") or []:
        name = t.get("name") if isinstance(t, dict) else None
        if not isinstance(name, str):
            continue
        c = db.canonical_table(name)
        if c is None:
            unknown.append(name)
        else:
            tables.add(c)
            listed_tables.add(c)
    outside = 0
    for col in resp.get("columns") or []:
        if not isinstance(col, dict) or not isinstance(col.get("table"), str) or not isinstance(col.get("column"), str):
            continue
        t = db.canonical_table(col["table"])
        key = (t, col["column"].lower()) if t else None
        if key is None or key not in db.all_columns:
            unknown.append("%s.%s" % (col["table"], col["column"]))
            continue
        if t not in listed_tables:
            outside += 1
        tables.add(t)
        columns.add(key)
    return tables, columns, unknown, outside


def selected_questions(args, key=None):
    """The questions of --questions (default DIR/dev.json) after --db-filter and
    --limit, the database directory (--db-dir, default DIR/database) and
    the question file used.
    Shared by the evaluators."""
    qpath = args.questions or os.path.join(args.dataset, "dev.json")
    dbdir = args.db_dir or os.path.join(args.dataset, "database")
    questions = load_questions(qpath, key or getattr(args, "question_key", None) or "question")
    if args.db_filter:
        keep = {d.strip() for d in args.db_filter.split(",") if d.strip()}
        questions = [q for q in questions if q["db_id"] in keep]
    if args.limit > 0:
        questions = questions[: args.limit]
    return questions, dbdir, qpath


def database_for(q, dbs, dbdir, gold_failures, factory):
    """The opened database of question q (cached in dbs; factory(db_id, path)
    opens one), or None after recording a missing file in gold_failures."""
    db = dbs.get(q["db_id"])
    if db is None:
        path = os.path.join(dbdir, q["db_id"], q["db_id"] + ".sqlite")
        if not os.path.exists(path):
            gold_failures.append({"index": q["index"], "db_id": q["db_id"], "error": "no database file %s" % path})
            return None
        db = dbs[q["db_id"]] = factory(q["db_id"], path)
    return db
