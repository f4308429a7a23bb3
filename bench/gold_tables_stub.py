#!/usr/bin/env python3
"""gold_tables_stub.py - a stand-in link model: a zero-latency OpenAI-compatible
server that answers each table-linking prompt with the tables its question's
gold SQL reads, as a JSON array of table names in the database's own spelling.

With it, /link in mode llm or hybrid can be measured as if the link model
named exactly the right tables: what remains is what the service does with a
perfect table answer (which columns of those tables it keeps, which bridge
tables the scaffold adds).

Usage:
  gold_tables_stub.py --port P [--host 127.0.0.1] (--questions FILE | --dataset DIR)...
                      [--db-dir DIR ...] [--dim 64] [--model NAME] [--keep-prompts] [--verbose]

Questions and matching are gold_stub.py's (GoldIndex: question and question_syn
texts, the question found in the last user message, repeated texts told apart
by the identifiers the prompt shows).  The gold tables are link_eval.py's: the
gold SQL is compiled (EXPLAIN, never run) on DIR/<db_id>/<db_id>.sqlite with an
authorizer recording every table read.  Database directories: every --db-dir,
then DIR/database of each --dataset, then database/ beside each --questions
file; the first that holds the db_id wins.  An unmatched prompt, or a gold
query that does not compile, is answered "[]".

Routes, /_stub/stats, embeddings and "LISTENING <port>" are gold_stub.py's.
Python 3 standard library only.
"""

import argparse
import json
import os
import sqlite3
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gold_stub  # noqa: E402
from link_eval import Database  # noqa: E402


class GoldTables:
    """Gold tables of (db_id, sql), from the databases under db_dirs, cached."""

    def __init__(self, db_dirs):
        self.db_dirs = db_dirs
        self.lock = threading.Lock()
        self.dbs = {}
        self.cache = {}

    def _db(self, db_id):
        if db_id not in self.dbs:
            self.dbs[db_id] = None
            for d in self.db_dirs:
                path = os.path.join(d, db_id, db_id + ".sqlite")
                if os.path.isfile(path):
                    self.dbs[db_id] = Database(db_id, path)
                    break
        return self.dbs[db_id]

    def tables(self, db_id, sql):
        """Table names (database spelling) the gold SQL reads; [] when unknown."""
        with self.lock:  # one sqlite3 connection per database, shared by the handler threads
            key = (db_id, sql)
            if key not in self.cache:
                db = self._db(db_id)
                names = []
                if db is not None:
                    try:
                        lower, _ = db.gold(sql)
                        names = [t for t in db.tables if t.lower() in lower]
                    except sqlite3.Error:
                        names = []
                self.cache[key] = names
            return self.cache[key]


class TablesHandler(gold_stub.Handler):
    gold = None

    def answer(self, hit):
        return json.dumps(self.gold.tables(hit[0], hit[1]) if hit else [])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True, help="0 picks a free port")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--questions", action="append", default=[], help="Spider/BIRD JSON question file (repeatable)")
    ap.add_argument("--dataset", action="append", default=[], help="dataset directory: its dev.json/train.json and database/")
    ap.add_argument("--db-dir", action="append", default=[], help="directory of <db_id>/<db_id>.sqlite (repeatable)")
    ap.add_argument("--dim", type=int, default=64, help="embedding dimension")
    ap.add_argument("--model", action="append", default=[])
    ap.add_argument("--keep-prompts", action="store_true", help="keep each request's messages in /_stub/stats")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()

    files = list(a.questions)
    db_dirs = list(a.db_dir)
    for d in a.dataset:
        db_dirs.append(os.path.join(d, "database"))
        for name in ("dev.json", "train.json"):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                files.append(p)
    db_dirs += [os.path.join(os.path.dirname(os.path.abspath(f)), "database") for f in a.questions]
    if not files:
        ap.error("no question files: give --questions FILE or --dataset DIR")
    index = gold_stub.GoldIndex()
    for p in files:
        index.add_file(p)
    index.build()
    TablesHandler.state = gold_stub.State(index, False, a.dim, a.model or ["gold-tables-stub"], a.keep_prompts)
    TablesHandler.gold = GoldTables(db_dirs)
    server = gold_stub.Server((a.host, a.port), TablesHandler)
    server.verbose = a.verbose
    sys.stdout.write("LISTENING %d\n" % server.server_address[1])
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
