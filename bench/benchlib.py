"""Shared helpers for the bench/ scripts (Python 3 standard library only).

- LinkClient: a keep-alive HTTP/1.1 JSON client, one connection per thread,
  that reconnects once when the server closed an idle connection.
- percentile(): nearest-rank percentile (the value at rank ceil(p/100 * n) of
  the sorted sample), the definition every bench script reports.
- approx_tokens(): the fixed tokenizer approximation used for prompt sizes,
  ceil(characters / 4). It is not any model's tokenizer; it is stable and good
  enough to compare the linked schema with the whole schema.
- render_create_tables(): the CREATE TABLE text the token counts are taken on.
- sqlite_schema(): tables, columns (declared types) and foreign keys of a
  SQLite file, in the database's own spelling.
- emit(): the one JSON document every bench script prints (and --out writes).
- DATASETS: the datasets folder, $T2S_DATASETS or ../shared/datasets beside
  the repository; the scripts' default dataset paths are under it.
"""

import http.client
import json
import math
import os
import re
import socket
import sqlite3
import sys
import threading
import time
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The Spider/BIRD datasets (spider-dev, spider-train, ...): $T2S_DATASETS, else
# ../shared/datasets beside the repository (as scripts/test.sh and tests/lib/t2s.py).
DATASETS = os.environ.get("T2S_DATASETS") or os.path.normpath(os.path.join(REPO, "..", "shared", "datasets"))


def percentile(values, p):
    """Nearest-rank percentile of a list of numbers; None for an empty list."""
    if not values:
        return None
    s = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(s)))
    return s[min(rank, len(s)) - 1]


def latency_summary(values):
    """p50/p95/p99/mean/min/max of a list of milliseconds (rounded to 3 places)."""
    if not values:
        return {"n": 0}
    r = lambda x: None if x is None else round(x, 3)
    return {
        "n": len(values),
        "p50": r(percentile(values, 50)),
        "p95": r(percentile(values, 95)),
        "p99": r(percentile(values, 99)),
        "mean": r(sum(values) / len(values)),
        "min": r(min(values)),
        "max": r(max(values)),
    }


def approx_tokens(text):
    """Approximate token count: ceil(len(text) / 4)."""
    return math.ceil(len(text) / 4)


_SIMPLE_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def quote_ident(name):
    """Double-quote an identifier unless it is a plain [A-Za-z_][A-Za-z0-9_]* word."""
    if _SIMPLE_IDENT.match(name):
        return name
    return '"' + name.replace('"', '""') + '"'


def render_create_tables(tables):
    """Render [(table, [(column, type)], [(col, ref_table, ref_col)])] as CREATE TABLE text.

    One line per column ("  name TYPE,"), foreign keys as FOREIGN KEY lines.
    The caller decides which tables, columns and keys to include.
    """
    out = []
    for name, cols, fks in tables:
        lines = ["  %s %s" % (quote_ident(c), t) if t else "  %s" % quote_ident(c) for c, t in cols]
        for c, rt, rc in fks:
            lines.append("  FOREIGN KEY (%s) REFERENCES %s (%s)" % (quote_ident(c), quote_ident(rt), quote_ident(rc)))
        out.append("CREATE TABLE %s (\n%s\n);" % (quote_ident(name), ",\n".join(lines)))
    return "\n".join(out)


def open_sqlite_readonly(path):
    """Open a SQLite file read-only and immutable (works in read-only directories)."""
    uri = "file:%s?mode=ro&immutable=1" % urllib.parse.quote(path)
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


def sqlite_schema(conn):
    """Schema of an open SQLite database in its own spelling.

    Returns {"tables": [name...], "columns": {table: [(column, declared_type)]},
    "fks": {table: [(column, ref_table, ref_column)]}}. Internal sqlite_* tables
    are left out; views are included (the service lists them too).
    """
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table','view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
    ).fetchall()
    tables, columns, fks = [], {}, {}
    for (name,) in rows:
        tables.append(name)
        qn = '"' + name.replace('"', '""') + '"'
        columns[name] = [(r[1], r[2] or "") for r in conn.execute("PRAGMA table_info(%s)" % qn)]
        fl = []
        for r in conn.execute("PRAGMA foreign_key_list(%s)" % qn):
            # (id, seq, table, from, to, on_update, on_delete, match); "to" may be NULL (implicit PK)
            fl.append((r[3], r[2], r[4] or ""))
        fks[name] = fl
    return {"tables": tables, "columns": columns, "fks": fks}


class HttpError(Exception):
    def __init__(self, status, body):
        super().__init__("HTTP %d: %s" % (status, body[:300]))
        self.status = status
        self.body = body


class LinkClient:
    """Keep-alive JSON client for one base URL; safe to share between threads."""

    def __init__(self, base_url, api_key=None, timeout=30.0):
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https"):
            raise ValueError("--url must be http:// or https://, got %r" % base_url)
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.prefix = u.path.rstrip("/")
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self.headers["Authorization"] = "Bearer " + api_key
        self._local = threading.local()

    def _conn(self, fresh=False):
        c = getattr(self._local, "conn", None)
        if c is None or fresh:
            if c is not None:
                c.close()
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            c = cls(self.host, self.port, timeout=self.timeout)
            c.connect()
            # No Nagle delay: a request is one write, but be explicit so a
            # delayed ACK can never add ~40 ms to a measured latency.
            c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._local.conn = c
        return c

    def request(self, method, path, body=None):
        """Send one request; returns (status, parsed JSON or None, raw text, wall ms).

        Retries once on a connection the server had closed. Raises OSError /
        http.client exceptions on transport failures after the retry.
        """
        data = None if body is None else json.dumps(body).encode("utf-8")
        for attempt in (0, 1):
            c = self._conn(fresh=attempt == 1)
            t0 = time.perf_counter()
            try:
                c.request(method, self.prefix + path, body=data, headers=self.headers)
                resp = c.getresponse()
                raw = resp.read()
            except (http.client.RemoteDisconnected, http.client.BadStatusLine, BrokenPipeError,
                    ConnectionResetError, ConnectionAbortedError, http.client.CannotSendRequest):
                if attempt == 1:
                    raise
                continue
            ms = (time.perf_counter() - t0) * 1000.0
            if resp.getheader("Connection", "").lower() == "close":
                c.close()
                self._local.conn = None
            text = raw.decode("utf-8", "replace")
            try:
                parsed = json.loads(text) if text else None
            except ValueError:
                parsed = None
            return resp.status, parsed, text, ms
        raise RuntimeError("unreachable")

    def post_json(self, path, body):
        """POST a JSON body; returns (parsed JSON, wall ms) or raises HttpError on non-2xx."""
        status, parsed, text, ms = self.request("POST", path, body)
        if status < 200 or status >= 300 or not isinstance(parsed, dict):
            raise HttpError(status, text)
        return parsed, ms

    def get_json(self, path):
        status, parsed, text, _ = self.request("GET", path)
        if status < 200 or status >= 300:
            raise HttpError(status, text)
        return parsed


def server_total_ms(resp):
    """timings_ms.total of a /link response as float, or None."""
    t = resp.get("timings_ms") if isinstance(resp, dict) else None
    if isinstance(t, dict) and isinstance(t.get("total"), (int, float)):
        return float(t["total"])
    return None


def wait_value_indexes(client, dbs, timeout):
    """Poll POST /evidence per database until value_index is "ready" or "failed..."; returns {db: info}."""
    t0 = time.perf_counter()
    state = {name: {"state": None, "stats": None, "ready_after_s": None} for name in dbs}
    pending = set(dbs)
    while pending:
        for name in sorted(pending):
            try:
                resp, _ = client.post_json("/evidence", {"database": name, "question": "which values are stored"})
            except (HttpError, OSError, ValueError) as e:
                state[name]["state"] = "error: %s" % e
                continue
            st = resp.get("value_index")
            state[name]["state"] = st
            if isinstance(resp.get("value_index_stats"), dict):
                state[name]["stats"] = resp["value_index_stats"]
            if st == "ready" or (isinstance(st, str) and st.startswith("failed")):
                state[name]["ready_after_s"] = round(time.perf_counter() - t0, 3)
                pending.discard(name)
        if pending:
            if time.perf_counter() - t0 > timeout:
                break
            time.sleep(0.05)
    return state, round(time.perf_counter() - t0, 3)


def emit(report, out):
    """Print the JSON report on stdout (and write it to out when given)."""
    text = json.dumps(report, indent=2, ensure_ascii=False)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stdout = None
