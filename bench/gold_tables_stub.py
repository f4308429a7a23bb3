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
                      [--fixture RULES.json] [the other options of tests/stub/model_stub.py]

Questions and matching are gold_stub.py's (GoldIndex: question and question_syn
texts, the question found in the last user message, repeated texts told apart
by the identifiers the prompt shows).  The gold tables are link_eval.py's: the
gold SQL is compiled (EXPLAIN, never run) on DIR/<db_id>/<db_id>.sqlite with an
authorizer recording every table read.  Database directories: every --db-dir,
then DIR/database of each --dataset, then database/ beside each --questions
file; the first that holds the db_id wins.  An unmatched prompt, or a gold
query that does not compile, is answered "[]".

Routes, /_stub/stats, embeddings, rules (--fixture: fault injection) and
"LISTENING <port>" are gold_stub.py's, that is tests/stub/model_stub.py's:
this file is only the answer source GoldTablesAnswers.
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
import stublib  # noqa: E402
from linklib import Database  # noqa: E402


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


class GoldTablesAnswers(stublib.GoldAnswers):
    """gold_stub.py's source answering the gold tables instead of the gold SQL."""

    name = "gold_tables_stub"
    server_version = "gold-tables-stub/1"
    owned_by = "gold-stub"
    default_models = ["gold-tables-stub"]

    def __init__(self, index, gold, keep_prompts=False):
        super().__init__(index, False, keep_prompts)
        self.gold = gold

    def answer(self, hit):
        return json.dumps(self.gold.tables(hit[0], hit[1]) if hit else [])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    stublib.add_gold_arguments(ap)
    ap.add_argument("--db-dir", action="append", default=[], help="directory of <db_id>/<db_id>.sqlite (repeatable)")
    a = ap.parse_args()
    files = stublib.question_files(ap, a)
    db_dirs = list(a.db_dir) + [os.path.join(d, "database") for d in a.dataset]
    db_dirs += [os.path.join(os.path.dirname(os.path.abspath(f)), "database") for f in a.questions]
    index, _ = stublib.load_index(files)
    stublib.model_stub.serve(a, GoldTablesAnswers(index, GoldTables(db_dirs), a.keep_prompts))


if __name__ == "__main__":
    main()
