"""The gold value conditions of a gold SQL query: which string literals it
compares with which real columns, and how each is stored.  Shared by
evidence_eval.py and prompt_coverage.py (Python 3 standard library only);
evidence_eval.py's help describes the rule.

- tokenize(): SQL tokens the way SQLite reads them.
- Database: one SQLite file's schema, the reads of a query (compiled with
  EXPLAIN under an authorizer, never run) and the stored spelling of a literal.
- gold_conditions(): the conditions `colref OP literal`, `literal OP colref`,
  `colref [NOT] IN (literals)` of a query, each resolved to its column by
  SQLite's own name resolution and to the stored values of its literal.
"""

import collections
import os
import re
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


TOKEN_RE = re.compile(
    r"""(?P<ws>\s+|--[^\n]*|/\*.*?(?:\*/|$))
      |(?P<str>'(?:[^']|'')*')
      |(?P<dq>"(?:[^"]|"")*")
      |(?P<bq>`(?:[^`]|``)*`)
      |(?P<br>\[[^\]]*\])
      |(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
      |(?P<id>[A-Za-z_\u0080-\uffff][\w$\u0080-\uffff]*)
      |(?P<op>==|!=|<>|<=|>=|\|\||<<|>>|[-+*/%<>=(),.;&|~])
      |(?P<other>.)""",
    re.S | re.X,
)

CMP_OPS = {"=": "eq", "==": "eq", "!=": "ne", "<>": "ne", "<": "range", ">": "range", "<=": "range", ">=": "range"}
# literal OP colref reads as colref FLIP(OP) literal
FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}
IDENT_KINDS = ("id", "dq", "bq", "br")


class Tok:
    __slots__ = ("kind", "text", "start", "end")

    def __init__(self, kind, text, start, end):
        self.kind, self.text, self.start, self.end = kind, text, start, end

    def upper(self):
        return self.text.upper() if self.kind == "id" else None


def tokenize(sql):
    toks = []
    for m in TOKEN_RE.finditer(sql):
        kind = m.lastgroup
        if kind != "ws":
            toks.append(Tok(kind, m.group(), m.start(), m.end()))
    return toks


def unquote(tok):
    t = tok.text
    if tok.kind == "str":
        return t[1:-1].replace("''", "'")
    if tok.kind == "dq":
        return t[1:-1].replace('""', '"')
    if tok.kind == "bq":
        return t[1:-1].replace("``", "`")
    if tok.kind == "br":
        return t[1:-1]
    return t


def colref_before(toks, i):
    """Token index range [a, i) of a column reference ending just before toks[i], or None."""
    j = i - 1
    if j < 0 or toks[j].kind not in IDENT_KINDS:
        return None
    a = j
    while a >= 2 and toks[a - 1].text == "." and toks[a - 2].kind in IDENT_KINDS:
        a -= 2
    return (a, i)


def colref_after(toks, i):
    """Token index range [i, b) of a column reference starting at toks[i], or None."""
    if i >= len(toks) or toks[i].kind not in IDENT_KINDS:
        return None
    b = i + 1
    while b + 1 < len(toks) and toks[b].text == "." and toks[b + 1].kind in IDENT_KINDS:
        b += 2
    # a function call (ident followed by "(") is not a column reference
    if b < len(toks) and toks[b].text == "(":
        return None
    return (i, b)


def literal_tok(tok):
    return tok.kind in ("str", "dq")


def candidates(toks):
    """Candidate conditions: dicts {ref: (a, b), lits: [token index], op, op_text}."""
    out = []
    n = len(toks)
    for i, t in enumerate(toks):
        u = t.upper()
        if t.kind == "op" and t.text in CMP_OPS:
            # colref OP literal
            ref = colref_before(toks, i)
            if ref and i + 1 < n and literal_tok(toks[i + 1]):
                out.append({"ref": ref, "lits": [i + 1], "op": CMP_OPS[t.text], "op_text": t.text})
            # literal OP colref
            if i >= 1 and literal_tok(toks[i - 1]):
                ref = colref_after(toks, i + 1)
                if ref:
                    op_text = FLIP.get(t.text, t.text)
                    out.append({"ref": ref, "lits": [i - 1], "op": CMP_OPS[t.text], "op_text": op_text})
        elif u in ("LIKE", "GLOB"):
            neg = i >= 1 and toks[i - 1].upper() == "NOT"
            ref = colref_before(toks, i - 1 if neg else i)
            if ref and i + 1 < n and literal_tok(toks[i + 1]):
                op = ("not_" if neg else "") + u.lower()
                out.append({"ref": ref, "lits": [i + 1], "op": op, "op_text": ("NOT " if neg else "") + u})
        elif u == "IN":
            neg = i >= 1 and toks[i - 1].upper() == "NOT"
            ref = colref_before(toks, i - 1 if neg else i)
            if not ref or i + 1 >= n or toks[i + 1].text != "(":
                continue
            lits, k, ok = [], i + 2, True
            while k < n:
                if literal_tok(toks[k]) or toks[k].kind == "num":
                    if literal_tok(toks[k]):
                        lits.append(k)
                    k += 1
                    if k < n and toks[k].text == ",":
                        k += 1
                        continue
                    ok = k < n and toks[k].text == ")"
                    break
                ok = False  # a subquery or an expression: not a literal list
                break
            if ok and lits:
                out.append({"ref": ref, "lits": lits, "op": "not_in" if neg else "in",
                            "op_text": ("NOT " if neg else "") + "IN"})
    return out


class Database:
    """One SQLite database: schema, read counting, stored-value lookup."""

    def __init__(self, db_id, path):
        self.db_id = db_id
        self.path = path
        self.conn = benchlib.open_sqlite_readonly(path)
        s = benchlib.sqlite_schema(self.conn)
        self.tables = s["tables"]
        self.table_by_lower = {t.lower(): t for t in self.tables}
        self.column_by_lower = {(t.lower(), c.lower()): c for t in self.tables for c, _ in s["columns"][t]}
        self._stored_cache = {}

    def reads(self, sql):
        """Counter of SQLITE_READ (table, column) while compiling sql; raises sqlite3.Error."""
        reads = collections.Counter()

        def auth(action, arg1, arg2, dbname, source):
            if action == sqlite3.SQLITE_READ and arg1 and arg2 and not arg1.lower().startswith("sqlite_"):
                reads[(arg1.lower(), arg2.lower())] += 1
            return sqlite3.SQLITE_OK

        self.conn.set_authorizer(auth)
        try:
            self.conn.execute("EXPLAIN " + sql).fetchall()
        finally:
            self.conn.set_authorizer(None)
        return reads

    def canonical_table(self, name):
        n = name.lower()
        if n in self.table_by_lower:
            return n
        tail = n.rsplit(".", 1)[-1]
        return tail if tail in self.table_by_lower else None

    def stored(self, table_l, column_l, literal, trim=False):
        """(text spellings, non-text matches) of literal in table.column, ASCII case-insensitively;
        with trim, spaces around both sides are ignored (the stored spelling keeps them)."""
        key = (table_l, column_l, literal, trim)
        hit = self._stored_cache.get(key)
        if hit is None:
            t = benchlib.quote_ident(self.table_by_lower[table_l])
            c = benchlib.quote_ident(self.column_by_lower[(table_l, column_l)])
            cmp = "trim(%s) = trim(?1) COLLATE NOCASE" % c if trim else "%s = ?1 COLLATE NOCASE" % c
            rows = self.conn.execute(
                "SELECT DISTINCT %s, typeof(%s) FROM %s WHERE %s" % (c, c, t, cmp), (literal,)
            ).fetchall()
            text = sorted({r[0] for r in rows if r[1] == "text"})
            other = sum(1 for r in rows if r[1] != "text")
            hit = self._stored_cache[key] = (text, other)
        return hit


def replace_span(sql, start, end, text):
    return sql[:start] + text + sql[end:]


def strip_pattern(op, lit):
    """Literal of a LIKE/GLOB pattern without leading/trailing wildcards; None if one is inside."""
    if op in ("like", "not_like"):
        core = lit.strip("%")
        return None if "%" in core else core
    if op in ("glob", "not_glob"):
        core = lit.strip("*")
        return None if any(ch in core for ch in "*?[") else core
    return lit


def gold_conditions(db, sql, trim=False):
    """All string-literal conditions of sql with their status; raises sqlite3.Error if sql does not compile.

    A literal that matches only after trimming spaces gets "trim_match": True; with trim it is
    counted (its stored spellings, spaces included, are gold), else it stays literal_not_in_db."""
    base = db.reads(sql)
    toks = tokenize(sql)
    resolved = {}  # (a, b) -> (table_l, column_l) or failure reason

    def resolve(ref):
        if ref in resolved:
            return resolved[ref]
        a, b = ref
        try:
            after = db.reads(replace_span(sql, toks[a].start, toks[b - 1].end, "NULL"))
        except sqlite3.Error:
            resolved[ref] = "replacement does not compile"
            return resolved[ref]
        gone = base - after
        extra = after - base
        if len(gone) == 1 and not extra:
            (tc,) = gone.keys()
            resolved[ref] = tc if tc in db.column_by_lower else "not a table column"
        elif not gone:
            resolved[ref] = "no column read (alias, derived table or not a column)"
        else:
            resolved[ref] = "ambiguous"
        return resolved[ref]

    def is_string(i):
        t = toks[i]
        if t.kind == "str":
            return True
        try:  # "x" is a string exactly when it reads no column
            after = db.reads(replace_span(sql, t.start, t.end, "NULL"))
        except sqlite3.Error:
            return False
        return after == base

    conds = []
    for c in candidates(toks):
        lits = [i for i in c["lits"] if is_string(i)]
        if not lits:
            continue
        target = resolve(c["ref"])
        ref_text = sql[toks[c["ref"][0]].start:toks[c["ref"][1] - 1].end]
        for i in lits:
            raw = unquote(toks[i])
            cond = {"ref": ref_text, "op": c["op"], "op_text": c["op_text"], "literal": raw, "table": None,
                    "column": None, "stored": [], "status": "counted"}
            lit = strip_pattern(c["op"], raw)
            if isinstance(target, str):
                cond["status"] = "unresolved_column"
                cond["reason"] = target
            elif lit is None:
                cond["status"] = "pattern_with_inner_wildcard"
            elif lit == "":
                cond["status"] = "empty_literal"
            else:
                cond["table"], cond["column"] = target
                cond["lookup"] = lit
                text, other = db.stored(target[0], target[1], lit)
                if not text and not other:
                    text, _ = db.stored(target[0], target[1], lit, trim=True)
                    cond["trim_match"] = bool(text)
                    if not trim:
                        text = []
                if text:
                    cond["stored"] = text
                elif other:
                    cond["status"] = "stored_not_text"
                else:
                    cond["status"] = "literal_not_in_db"
            conds.append(cond)
    # One counted condition per (table, column, stored values); keep first.
    seen, out = set(), []
    for cond in conds:
        if cond["status"] == "counted":
            key = (cond["table"], cond["column"], tuple(cond["stored"]))
            if key in seen:
                continue
            seen.add(key)
        out.append(cond)
    return out
