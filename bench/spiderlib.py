"""Spider/BIRD dataset helpers shared by query_eval.py, prompt_coverage.py,
query_overhead.py and peer_compare.py (Python 3 standard library only).

- load_entries() / select(): question selection on top of linklib's
  selected_questions (--questions, --db-filter, --limit), keeping each
  entry's raw fields (Spider's parsed "sql", BIRD's "difficulty", "evidence")
  and the text of --question-key (question or question_syn).
- SpiderSchema: tables.json of one database (table and column names by index).
- sql_refs(): tables and columns a Spider-parsed query ("sql" field) reads.
- hardness(): Spider's difficulty rule (easy/medium/hard/extra), the rule of
  the official evaluation.py (count_component1/2, count_others), including its
  quirks, so the figures are comparable with published per-hardness results.
- run_sql(): run a query read-only with a time limit.
- results_match(): Spider (bag, order only with ORDER BY, columns in any order)
  and BIRD (set of rows) execution comparison.
"""

import collections
import itertools
import json
import os
import re
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from linklib import selected_questions  # noqa: E402

WHERE_OPS = ("not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists")
AGG_OPS = ("none", "max", "min", "count", "sum", "avg")


# ---- questions ---------------------------------------------------------------

def select(args):
    """Questions of args (linklib's --dataset/--questions/--db-filter/--limit
    selection) as dicts: index, db_id, question (the --question-key text),
    sql, raw (the whole dataset entry).  Returns (questions, dbdir, qpath).
    Entries without the chosen key are dropped."""
    questions, dbdir, qpath = selected_questions(args)
    with open(qpath, encoding="utf-8") as f:
        raw = json.load(f)
    key = getattr(args, "question_key", "question") or "question"
    out = []
    for q in questions:
        entry = raw[q["index"]]
        text = entry.get(key)
        if not isinstance(text, str) or not text.strip():
            continue
        out.append({"index": q["index"], "db_id": q["db_id"], "question": text, "sql": q["sql"], "raw": entry})
    return out, dbdir, qpath


def dataset_present(args):
    """True when the question file of args exists (benches skip cleanly otherwise)."""
    qpath = args.questions or os.path.join(args.dataset, "dev.json")
    return os.path.isfile(qpath)


def skip(reason, out=None):
    """Print the skip report and return exit status 0."""
    doc = {"skipped": True, "reason": reason}
    print("skipped: " + reason, file=sys.stderr)
    text = json.dumps(doc)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(text)
    return 0


# ---- tables.json ---------------------------------------------------------------

class SpiderSchema:
    """One database of tables.json: names by index, lower-cased."""

    def __init__(self, entry):
        self.db_id = entry["db_id"]
        self.tables = [t.lower() for t in entry["table_names_original"]]
        self.columns = [(t, c.lower()) for t, c in entry["column_names_original"]]

    def column(self, cid):
        """(table, column) lower-cased of column id cid, or None for '*'."""
        t, c = self.columns[cid]
        if t < 0:
            return None
        return self.tables[t], c


def load_tables_json(path):
    """{db_id: SpiderSchema} of a tables.json (empty when the file is absent)."""
    if not path or not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return {e["db_id"]: SpiderSchema(e) for e in json.load(f)}


def tables_json_for(dataset, qpath):
    """tables.json beside the question file or in the dataset directory."""
    for p in (os.path.join(os.path.dirname(qpath), "tables.json"), os.path.join(dataset, "tables.json"),
              os.path.join(dataset, "dev_tables.json"), os.path.join(dataset, "train_tables.json")):
        if os.path.isfile(p):
            return p
    return None


def _walk_sql(sql, visit_col, visit_table):
    """Call visit_col(col_id) for every col_unit and visit_table(table_id) for
    every table_unit of a Spider-parsed query, nested queries included."""
    if not isinstance(sql, dict):
        return

    def col_unit(cu):
        if isinstance(cu, list) and len(cu) == 3 and isinstance(cu[1], int):
            visit_col(cu[1])

    def val_unit(vu):
        if isinstance(vu, list) and len(vu) == 3:
            col_unit(vu[1])
            col_unit(vu[2])

    def value(v):
        if isinstance(v, dict):
            _walk_sql(v, visit_col, visit_table)
        elif isinstance(v, list):
            col_unit(v)

    def condition(conds):
        for c in conds or []:
            if isinstance(c, list) and len(c) == 5:
                val_unit(c[2])
                value(c[3])
                value(c[4])

    for tu in sql["from"]["table_units"]:
        if tu[0] == "table_unit":
            visit_table(tu[1])
        else:
            _walk_sql(tu[1], visit_col, visit_table)
    condition(sql["from"]["conds"])
    for _, vu in sql["select"][1]:
        val_unit(vu)
    condition(sql["where"])
    for cu in sql["groupBy"] or []:
        col_unit(cu)
    condition(sql["having"])
    if sql["orderBy"]:
        for vu in sql["orderBy"][1]:
            val_unit(vu)
    for k in ("intersect", "union", "except"):
        _walk_sql(sql.get(k), visit_col, visit_table)


def sql_refs(sql, schema):
    """(tables, columns) lower-cased that a Spider-parsed query reads: every
    table unit and every column unit ('*' is no column), nested queries too."""
    tables, columns = set(), set()

    def col(cid):
        tc = schema.column(cid)
        if tc:
            columns.add(tc)
            tables.add(tc[0])

    def tab(tid):
        tables.add(schema.tables[tid])

    _walk_sql(sql, col, tab)
    return tables, columns


# ---- hardness (Spider evaluation.py) -------------------------------------------

def _nested(sql):
    nested = []
    for cu in sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]:
        if isinstance(cu[3], dict):
            nested.append(cu[3])
        if isinstance(cu[4], dict):
            nested.append(cu[4])
    for k in ("intersect", "except", "union"):
        if sql[k] is not None:
            nested.append(sql[k])
    return nested


def _count_agg(units):
    # As in the original: unit[0] != 0, also for condition units (whose [0] is
    # the NOT flag) and for the "and"/"or" strings of HAVING.
    return len([u for u in units if u[0] != AGG_OPS.index("none")])


def _component1(sql):
    n = 0
    n += len(sql["where"]) > 0
    n += len(sql["groupBy"]) > 0
    n += len(sql["orderBy"]) > 0
    n += sql["limit"] is not None
    if len(sql["from"]["table_units"]) > 0:
        n += len(sql["from"]["table_units"]) - 1
    ao = sql["from"]["conds"][1::2] + sql["where"][1::2] + sql["having"][1::2]
    n += len([t for t in ao if t == "or"])
    cus = sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]
    n += len([cu for cu in cus if cu[1] == WHERE_OPS.index("like")])
    return n


def _others(sql):
    n = 0
    agg = _count_agg(sql["select"][1])
    agg += _count_agg(sql["where"][::2])
    agg += _count_agg(sql["groupBy"])
    if len(sql["orderBy"]) > 0:
        agg += _count_agg([u[1] for u in sql["orderBy"][1] if u[1]] + [u[2] for u in sql["orderBy"][1] if u[2]])
    agg += _count_agg(sql["having"])
    n += agg > 1
    n += len(sql["select"][1]) > 1
    n += len(sql["where"]) > 1
    n += len(sql["groupBy"]) > 1
    return n


def hardness(sql):
    """Spider's hardness of a parsed query: easy, medium, hard or extra."""
    c1, c2, o = _component1(sql), len(_nested(sql)), _others(sql)
    if c1 <= 1 and o == 0 and c2 == 0:
        return "easy"
    if (o <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and o < 2 and c2 == 0):
        return "medium"
    if (o > 2 and c1 <= 2 and c2 == 0) or (2 < c1 <= 3 and o <= 2 and c2 == 0) or (c1 <= 1 and o == 0 and c2 <= 1):
        return "hard"
    return "extra"


def difficulty_of(entry):
    """BIRD's "difficulty" field when present, else Spider hardness from the
    parsed "sql" field, else "unknown" (e.g. Spider train, which has no parse)."""
    d = entry.get("difficulty")
    if isinstance(d, str) and d:
        return d
    if isinstance(entry.get("sql"), dict):
        try:
            return hardness(entry["sql"])
        except (KeyError, IndexError, TypeError):
            return "unknown"
    return "unknown"


# ---- execution ------------------------------------------------------------------

class QueryTimeout(Exception):
    pass


def run_sql(conn, sql, timeout_s=30.0):
    """All rows of sql on an open (read-only) connection; raises sqlite3.Error
    or QueryTimeout when it runs longer than timeout_s."""
    deadline = time.monotonic() + timeout_s
    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10000)
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.OperationalError as e:
        if "interrupted" in str(e) and time.monotonic() > deadline:
            raise QueryTimeout("gold query ran longer than %.0f s" % timeout_s)
        raise
    finally:
        conn.set_progress_handler(None, 0)


def open_db(path):
    """Read-only connection that returns undecodable text as bytes instead of failing."""
    conn = benchlib.open_sqlite_readonly(path)
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    return conn


def norm_value(v):
    """One cell in a comparable form: integral floats as int, other floats to 10
    significant digits (the service serialises reals as JSON numbers), bytes as hex."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        if v != v:
            return "NaN"
        if v.is_integer() and abs(v) < 2 ** 63:
            return int(v)
        return float("%.10g" % v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, (list, dict)):
        return json.dumps(v, sort_keys=True)
    return v


def norm_rows(rows):
    return [tuple(norm_value(v) for v in r) for r in rows]


def has_order_by(sql):
    return re.search(r"\border\s+by\b", sql, re.I) is not None


def _spider_equal(pred, gold, order_matters):
    """Spider test-suite equality: same number of rows and columns; some
    permutation of the predicted columns makes the row bags equal (or the row
    lists, when order matters)."""
    if len(pred) != len(gold):
        return False
    if not gold:
        return True
    ncol = len(gold[0])
    if any(len(r) != ncol for r in pred) or any(len(r) != ncol for r in gold):
        return False
    pcols = [collections.Counter(r[i] for r in pred) for i in range(ncol)]
    gcols = [collections.Counter(r[i] for r in gold) for i in range(ncol)]
    # candidates: predicted column j can stand for gold column i when their value bags agree
    cand = [[j for j in range(ncol) if pcols[j] == gcols[i]] for i in range(ncol)]
    if any(not c for c in cand):
        return False
    gold_bag = collections.Counter(gold) if not order_matters else None
    tried = 0
    for perm in itertools.product(*cand):
        if len(set(perm)) != ncol:
            continue
        tried += 1
        if tried > 2000:
            break
        re_pred = [tuple(r[j] for j in perm) for r in pred]
        if order_matters:
            if re_pred == gold:
                return True
        elif collections.Counter(re_pred) == gold_bag:
            return True
    return False


def results_match(pred_rows, gold_rows, semantics, gold_sql):
    """Execution match of two row lists under "spider" or "bird" semantics."""
    pred, gold = norm_rows(pred_rows), norm_rows(gold_rows)
    if semantics == "bird":
        return set(pred) == set(gold)
    return _spider_equal(pred, gold, has_order_by(gold_sql))
