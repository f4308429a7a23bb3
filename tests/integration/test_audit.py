#!/usr/bin/env python3
"""test_audit.py - the audit log (log.audit_file, server/audit.h) of the real text2sqld binary.

One JSON line per /query, /generate, /execute and admin write, written when the request completes:
time, request id (the X-Request-Id the client got), caller (the key's name), database, question, SQL,
status, rows, elapsed time, generator and confidence; refused requests too (401 with a null caller,
404 for a database the key may not use).  No key, token or password ever appears in it (the keys,
their digests and the database password are looked for in the raw text).  After the file is renamed
away and SIGHUP is sent, lines go to a new file at the configured path and the renamed one gets no
more.  When the file becomes unwritable (its path replaced by /dev/full, then SIGHUP), requests are
still answered and text2sqld_audit_write_failures_total counts each lost line.  A path that cannot be
opened at start is refused (exit 1, naming log.audit_file).
"""

import hashlib
import json
import os
import secrets
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-audit-")

KEY_Q = "t2s-audit-query-%s" % secrets.token_hex(16)
KEY_ADMIN = "t2s-audit-admin-%s" % secrets.token_hex(16)
WRONG = "t2s-audit-wrong-%s" % secrets.token_hex(16)


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


DB = fixtures.write_sqlite(os.path.join(TMP, "shop.sqlite"),
                           "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, full_name TEXT, country TEXT);"
                           "CREATE TABLE secrets_table (id INTEGER PRIMARY KEY, v TEXT);",
                           {"customers": [(1, "Ada Moreau", "France"), (2, "Bram de Vries", "Netherlands"),
                                          (3, "Elise Martin", "France")],
                            "secrets_table": [(1, "x")]})
AUDIT = os.path.join(TMP, "audit.log")

CONFIG = {
    "databases": [{"name": "shop", "url": "sqlite://" + DB}],
    "auth": {"api_keys": [
        {"name": "reader-app", "key_sha256": sha(KEY_Q), "databases": ["shop"]},
        {"name": "ops", "key_sha256": sha(KEY_ADMIN), "databases": ["*"], "scopes": ["query", "admin"]},
    ]},
    "log": {"level": "debug", "access": True, "audit_file": AUDIT},
}


def bearer(key):
    return {"Authorization": "Bearer " + key}


def read_lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return "", []
    lines = []
    for raw in text.splitlines():
        try:
            lines.append(json.loads(raw))
        except ValueError:
            lines.append({"unparsable": raw})
    return text, lines


def line_for(lines, request_id):
    found = [x for x in lines if x.get("request_id") == request_id]
    return found[0] if len(found) == 1 else None


def metric(svc, name):
    r = svc.request("GET", "/metrics")
    for ln in (r.text or "").splitlines():
        if ln.startswith(name + " ") or ln.startswith(name + "{"):
            return float(ln.split()[-1])
    return None


def check_answers(svc):
    rid = {}
    r = svc.request("POST", "/query", json={"database": "shop", "question": "How many customers are there?"},
                    headers=bearer(KEY_Q))
    tap.eq(r.status, 200, "query_answered")
    rid["query"] = (r.headers.get("X-Request-Id"), r.json or {})
    r = svc.request("POST", "/generate", json={"database": "shop", "question": "How many customers are from France?"},
                    headers=bearer(KEY_Q))
    tap.eq(r.status, 200, "generate_answered")
    rid["generate"] = (r.headers.get("X-Request-Id"), r.json or {})
    r = svc.request("POST", "/execute", json={"database": "shop", "sql": "SELECT full_name FROM customers"},
                    headers=bearer(KEY_Q))
    tap.eq(r.status, 200, "execute_answered")
    rid["execute"] = (r.headers.get("X-Request-Id"), r.json or {})
    r = svc.request("POST", "/execute", json={"database": "shop", "sql": "DELETE FROM customers"},
                    headers=bearer(KEY_Q))
    tap.eq(r.status, 403, "a_write_is_refused")
    rid["refused"] = (r.headers.get("X-Request-Id"), None)
    r = svc.request("POST", "/query", json={"database": "shop", "question": "How many customers?"},
                    headers=bearer(WRONG))
    tap.eq(r.status, 401, "a_wrong_key_is_refused")
    rid["unauthorized"] = (r.headers.get("X-Request-Id"), None)
    r = svc.request("POST", "/query", json={"database": "nowhere", "question": "How many customers?"},
                    headers=bearer(KEY_Q))
    tap.eq(r.status, 404, "a_missing_database_is_404")
    rid["missing"] = (r.headers.get("X-Request-Id"), None)
    r = svc.request("POST", "/databases/shop/examples",
                    json={"question": "Who are the customers?", "sql": "SELECT full_name FROM customers"},
                    headers=bearer(KEY_ADMIN))
    tap.eq(r.status, 201, "admin_write_answered")
    rid["admin"] = (r.headers.get("X-Request-Id"), None)
    r = svc.request("GET", "/databases/shop", headers=bearer(KEY_Q))
    rid["read"] = (r.headers.get("X-Request-Id"), None)
    r = svc.request("POST", "/link", json={"database": "shop", "question": "customers"}, headers=bearer(KEY_Q))
    rid["link"] = (r.headers.get("X-Request-Id"), None)

    # A line is written when its request completes, just after the answer was sent.
    audited = [rid[k][0] for k in ("query", "generate", "execute", "refused", "unauthorized", "missing", "admin")]
    fixtures.wait_until(lambda: all(line_for(read_lines(AUDIT)[1], x) for x in audited), timeout=10)
    text, lines = read_lines(AUDIT)
    tap.ok(lines and all("unparsable" not in x for x in lines), "every_line_is_json", diag=text[:500])

    q = line_for(lines, rid["query"][0]) or {}
    body = rid["query"][1]
    tap.eq((q.get("caller"), q.get("action"), q.get("database"), q.get("question"), q.get("status")),
           ("reader-app", "query", "shop", "How many customers are there?", 200), "query_line_names_who_asked_what")
    tap.eq((q.get("sql"), q.get("rows"), q.get("generator")),
           (body.get("sql"), body.get("row_count"), body.get("generator")), "query_line_has_sql_rows_generator")
    tap.ok(isinstance(q.get("confidence"), float) and abs(q["confidence"] - body.get("confidence", -1)) < 1e-3,
           "query_line_has_confidence", diag=q)
    tap.ok(isinstance(q.get("elapsed_ms"), (int, float)) and q["elapsed_ms"] >= 0 and q.get("time", "").endswith("Z"),
           "query_line_has_time_and_elapsed", diag=q)

    g = line_for(lines, rid["generate"][0]) or {}
    tap.eq((g.get("action"), g.get("sql"), g.get("rows")), ("generate", rid["generate"][1].get("sql"), None),
           "generate_line_has_sql_and_no_rows")

    e = line_for(lines, rid["execute"][0]) or {}
    tap.eq((e.get("action"), e.get("sql"), e.get("rows"), e.get("status"), e.get("question")),
           ("execute", "SELECT full_name FROM customers", 3, 200, None), "execute_line_has_sql_and_rows")
    f = line_for(lines, rid["refused"][0]) or {}
    tap.eq((f.get("sql"), f.get("status"), f.get("rows")), ("DELETE FROM customers", 403, None),
           "refused_statement_is_logged_with_its_status")
    u = line_for(lines, rid["unauthorized"][0])
    tap.ok(u is not None and u.get("caller") is None and u.get("status") == 401, "unauthorized_request_logged_without_caller",
           diag=u)
    m = line_for(lines, rid["missing"][0]) or {}
    tap.eq((m.get("caller"), m.get("database"), m.get("status")), ("reader-app", "nowhere", 404),
           "missing_database_logged_with_404")
    a = line_for(lines, rid["admin"][0]) or {}
    tap.eq((a.get("caller"), a.get("action"), a.get("database"), a.get("method"), a.get("status")),
           ("ops", "admin", "shop", "POST", 201), "admin_write_logged")
    tap.ok(line_for(lines, rid["read"][0]) is None and line_for(lines, rid["link"][0]) is None,
           "reads_and_links_are_not_audited")
    for secret, what in ((KEY_Q, "query_key"), (KEY_ADMIN, "admin_key"), (WRONG, "wrong_key"),
                         (sha(KEY_Q), "key_digest"), ("Bearer", "authorization_header")):
        tap.ok(secret not in text, "audit_log_holds_no_" + what)


def check_rotation(svc):
    rotated = AUDIT + ".1"
    os.rename(AUDIT, rotated)
    r = svc.request("POST", "/execute", json={"database": "shop", "sql": "SELECT 1"}, headers=bearer(KEY_Q))
    before = r.headers.get("X-Request-Id")
    # the line is written as the request completes, just after its answer: wait for it before the reopen
    fixtures.wait_until(lambda: line_for(read_lines(rotated)[1], before), timeout=10)
    svc.proc.send_signal(signal.SIGHUP)
    fixtures.wait_until(lambda: os.path.exists(AUDIT), timeout=10)
    r = svc.request("POST", "/execute", json={"database": "shop", "sql": "SELECT 2"}, headers=bearer(KEY_Q))
    after = r.headers.get("X-Request-Id")
    fixtures.wait_until(lambda: line_for(read_lines(AUDIT)[1], after), timeout=10)
    _, old = read_lines(rotated)
    _, new = read_lines(AUDIT)
    tap.ok(line_for(old, before) is not None, "before_sighup_lines_go_to_the_renamed_file")
    tap.ok(line_for(new, after) is not None and line_for(old, after) is None,
           "after_sighup_lines_go_to_a_new_file", diag=(len(old), len(new)))


def check_unwritable(svc):
    before = metric(svc, "text2sqld_audit_write_failures_total") or 0.0
    os.remove(AUDIT)
    os.symlink("/dev/full", AUDIT)
    svc.proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    statuses = []
    for i in range(3):
        r = svc.request("POST", "/execute", json={"database": "shop", "sql": "SELECT %d" % i}, headers=bearer(KEY_Q))
        statuses.append(r.status)
    tap.eq(statuses, [200, 200, 200], "requests_answered_while_the_audit_log_cannot_be_written")
    fixtures.wait_until(lambda: (metric(svc, "text2sqld_audit_write_failures_total") or 0.0) - before >= 3, timeout=10)
    after = metric(svc, "text2sqld_audit_write_failures_total") or 0.0
    tap.ok(after - before >= 3, "each_lost_audit_line_is_counted", diag=(before, after))
    tap.ok(svc.alive(), "service_alive_after_audit_failures")


def check_bad_path():
    cfg = json.loads(json.dumps(CONFIG))
    cfg["log"]["audit_file"] = os.path.join(TMP, "no-such-dir", "audit.log")
    code, out = t2s.run_config_only(cfg)
    tap.ok(code != 0 and "log.audit_file" in out, "unopenable_audit_file_refused_at_start", diag=(code, out[-300:]))


def main():
    with t2s.Service(CONFIG) as svc:
        check_answers(svc)
        check_rotation(svc)
        check_unwritable(svc)
        fixtures.stop_ok(tap, svc, "stops_cleanly")
        log = svc.log_text()
        tap.ok(KEY_Q not in log and KEY_ADMIN not in log, "service_log_holds_no_key")
    check_bad_path()


sys.exit(fixtures.run_with_binary(tap, "audit_checks", main))
