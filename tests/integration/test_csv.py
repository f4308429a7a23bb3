#!/usr/bin/env python3
"""test_csv.py - Accept: text/csv on /v1/query and /v1/execute (and their unversioned aliases)
answers the rows as RFC 4180 CSV (handlers/result_csv.h), against the real binary, a SQLite
file written here, the PostgreSQL server of tests/lib/servers.sh (its part is skipped when
T2S_TEST_PG_PORT is unset) and the model stub; every body is parsed with Python's csv module.

Covers:
  - awkward values (commas, quotes, CR, LF, CRLF, leading and trailing spaces, unicode
    beyond the BMP, the empty string, NULL, integers beyond 2^53, reals; pg: numeric,
    boolean, date, json, arrays, text with a NUL-free mix of all of these) come back as
    the JSON answer of the same statement has them: header record = `columns`, one record
    per row, NULL as an unquoted empty field and the empty string as a quoted one;
    every record ends with CRLF, no bare LF outside a quoted field; UTF-8 without a BOM;
  - Content-Type text/csv; charset=utf-8, Content-Disposition naming execute.csv or
    query.csv, sent chunked;
  - a large result (5,000 rows of ~120 bytes, several of the writer's pieces) under
    max_rows 3,000: exactly 3,000 records, X-Truncated-By: max_rows, as the JSON answer;
    the byte limit (execution.max_result_bytes) cuts the CSV where it cuts the JSON;
  - negotiation: no Accept, */*, application/json, and text/csv;q=0 alone give JSON;
    text/csv, text/*, text/csv;q=0.9 over application/json;q=0.5 give CSV, the reverse
    JSON; text/html or application/xml alone is a 406 not-acceptable problem; errors
    (unknown column, unknown database) stay application/problem+json with their status;
  - a client that closes after the head of an 8 MiB CSV leaves the service answering
    (and, under AddressSanitizer, nothing leaked at exit);
  - /v1/query and /query with Accept: text/csv answer the rows of the answer as CSV equal
    to its JSON rows; text/event-stream beside text/csv still streams.
Every service is stopped with SIGTERM and must exit 0.
"""

import csv
import io
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-csv-")
PG_DB = "t2s_csv_%d" % os.getpid()
CSV_TYPE = "text/csv; charset=utf-8"

AWKWARD = ["plain", "comma, inside", 'a "quoted" word', "line\nbreak", "carriage\rreturn", "crlf\r\nend",
           "  spaces  ", "", "é ü ß — 日本語 😀", '"', ",", "\n", "trailing,", 'x""y']

SQLITE_SCHEMA = """
CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, n INTEGER, r REAL);
"""
SQLITE_ROWS = {"t": [(i + 1, v, (2 ** 62 + i) if i % 3 == 0 else (None if i % 3 == 1 else -i), 0.1 * i if i % 2
                      else None) for i, v in enumerate(AWKWARD)] + [(len(AWKWARD) + 1, None, None, 1e22)]}

PG_SETUP = """
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
CREATE TABLE t (id int PRIMARY KEY, s text, big bigint, num numeric(20,5), ok boolean, day date, doc json, arr int[]);
GRANT SELECT ON ALL TABLES IN SCHEMA public TO t2s_reader;
"""


def pg_literal(v):
    return "NULL" if v is None else "'" + v.replace("'", "''") + "'"


def pg_rows_sql():
    values = []
    for i, v in enumerate(AWKWARD):
        values.append("(%d, %s, %s, %s, %s, %s, %s, %s)" % (
            i + 1, pg_literal(v), "9007199254740993" if i % 2 else "NULL", "%d.12345" % i if i % 3 else "NULL",
            ["true", "false", "NULL"][i % 3], "DATE '2024-02-%02d'" % (i + 1),
            pg_literal(json.dumps({"k": v, "n": i})) + "::json", "ARRAY[%d, %d]" % (i, -i)))
    values.append("(%d, NULL, NULL, NULL, NULL, NULL, NULL, NULL)" % (len(AWKWARD) + 1))
    return "INSERT INTO t VALUES %s;" % ", ".join(values)


def parse_csv(body):
    """The records of a CSV body (bytes), read with Python's csv module as RFC 4180 says."""
    return list(csv.reader(io.StringIO(body.decode("utf-8"), newline=""), strict=True))


def cell_matches(text, value):
    """A CSV field against the JSON answer's value."""
    if value is None:
        return text == ""
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, int):
        return text == str(value)
    if isinstance(value, float):
        return float(text) == value
    if isinstance(value, str):
        return text == value
    return json.loads(text) == value  # arrays, json


def records_end_with_crlf(body):
    """Every record ends with CRLF: no LF without CR before it outside quoted fields."""
    quoted, prev = False, b""
    for b in body:
        ch = bytes([b])
        if ch == b'"':
            quoted = not quoted
        elif ch == b"\n" and not quoted and prev != b"\r":
            return False
        prev = ch
    return body.endswith(b"\r\n")


def empty_fields_raw(body):
    """For the records' raw text: which fields are unquoted-empty (NULL) and which quoted-empty ("")."""
    out, field, quoted, in_quotes, rows = [], "", False, False, []
    text = body.decode("utf-8")
    i = 0
    while i < len(text):
        c = text[i]
        if in_quotes:
            if c == '"' and text[i + 1:i + 2] == '"':
                field += '"'
                i += 1
            elif c == '"':
                in_quotes = False
            else:
                field += c
        elif c == '"':
            in_quotes = quoted = True
        elif c == ",":
            out.append((field, quoted))
            field, quoted = "", False
        elif c == "\r" and text[i + 1:i + 2] == "\n":
            out.append((field, quoted))
            rows.append(out)
            out, field, quoted = [], "", False
            i += 1
        else:
            field += c
        i += 1
    return rows


def check_same_as_json(svc, prefix, path, body, name):
    """The CSV answer of body equals its JSON answer; returns (csv response, json answer)."""
    j = svc.request("POST", path, json=body, headers={"Accept": "application/json"})
    c = svc.request("POST", path, json=body, headers={"Accept": "text/csv"})
    if not tap.ok(j.status == 200 and c.status == 200, "%s_%s_answers_200" % (prefix, name),
                  diag=lambda: (j.status, j.text[:300], c.status, c.text[:300])):
        return c, None
    tap.eq(c.headers.get("Content-Type"), CSV_TYPE, "%s_%s_content_type_is_text_csv_utf8" % (prefix, name))
    recs = parse_csv(c.body)
    tap.eq(recs[0] if recs else None, j.json["columns"], "%s_%s_header_record_is_the_columns" % (prefix, name))
    rows = j.json["rows"]
    same = len(recs) == len(rows) + 1 and all(
        len(rec) == len(row) and all(cell_matches(t, v) for t, v in zip(rec, row))
        for rec, row in zip(recs[1:], rows))
    tap.ok(same, "%s_%s_records_equal_the_json_rows" % (prefix, name),
           diag=lambda: [(rec, row) for rec, row in zip(recs[1:], rows)
                         if len(rec) != len(row) or not all(cell_matches(t, v) for t, v in zip(rec, row))][:5]
           or (len(recs), len(rows)))
    tap.ok(records_end_with_crlf(c.body), "%s_%s_records_end_with_crlf" % (prefix, name),
           diag=lambda: repr(c.body[:300]))
    tap.ok(not c.body.startswith(b"\xef\xbb\xbf"), "%s_%s_has_no_byte_order_mark" % (prefix, name))
    return c, j.json


def check_nulls_and_empty(c, answer, prefix):
    """NULL is an unquoted empty field, the empty string a quoted one."""
    raw = empty_fields_raw(c.body)[1:]
    bad = []
    for rec, row in zip(raw, answer["rows"]):
        for (text, quoted), v in zip(rec, row):
            if v is None and (text or quoted):
                bad.append(("null", text, quoted))
            if v == "" and not quoted:
                bad.append(("empty", text, quoted))
    tap.ok(not bad and len(raw) == len(answer["rows"]), prefix + "_null_unquoted_empty_string_quoted",
           diag=lambda: bad[:5])


def check_engine(svc, prefix, database):
    c, answer = check_same_as_json(svc, prefix, "/v1/execute", {"database": database, "sql": "SELECT * FROM t ORDER BY id"},
                                   "awkward_values")
    if answer:
        check_nulls_and_empty(c, answer, prefix)
        tap.eq(c.headers.get("Content-Disposition"), 'attachment; filename="execute.csv"',
               prefix + "_execute_names_execute_csv")
        tap.ok("chunked" in (c.headers.get("Transfer-Encoding") or "").lower(), prefix + "_csv_is_sent_chunked",
               diag=lambda: c.headers)
        tap.ok(c.headers.get("X-Truncated-By") is None, prefix + "_complete_rows_carry_no_truncated_header")
    # The unversioned alias answers the same.
    alias = svc.request("POST", "/execute", json={"database": database, "sql": "SELECT * FROM t ORDER BY id"},
                        headers={"Accept": "text/csv"})
    tap.ok(alias.status == 200 and c is not None and alias.body == c.body, prefix + "_unversioned_alias_same_csv")

    big_sql = ("WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 5000) "
               "SELECT i, 'row ' || i || ', \"quoted\" and a long tail of text to make the body larger than one "
               "piece of the writer' AS s FROM g")
    body = {"database": database, "sql": big_sql, "max_rows": 3000}
    c, answer = check_same_as_json(svc, prefix, "/v1/execute", body, "large_result_at_the_row_limit")
    if answer:
        tap.eq(len(parse_csv(c.body)) - 1, 3000, prefix + "_large_result_has_max_rows_records")
        tap.eq(c.headers.get("X-Truncated-By"), "max_rows", prefix + "_large_result_says_truncated_by_max_rows")
        tap.ok(len(c.body) > 3 * 64 * 1024, prefix + "_large_result_spans_several_pieces", diag=len(c.body))
        # the access log counts the bytes of a body written piece by piece, as of any other
        line = fixtures.access_line(svc, c.headers.get("X-Request-Id"))
        tap.eq((line or {}).get("bytes_out"), len(c.body), prefix + "_access_log_counts_the_csv_bytes_sent")


def check_client_leaves_mid_csv(svc, database):
    """A client that reads the head of a large CSV and closes: the service frees the rows (no
    leak at exit, under AddressSanitizer) and keeps answering."""
    import socket
    big = ("WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 20000) "
           "SELECT i, printf('%01000d', i) AS pad FROM g")
    data = json.dumps({"database": database, "sql": big, "max_rows": 20000}).encode()  # ~8 MiB: the byte limit
    for _ in range(3):
        sock = socket.create_connection((svc.host, svc.port), timeout=30)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(("POST /v1/execute HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                      "Accept: text/csv\r\nContent-Length: %d\r\n\r\n" % len(data)).encode() + data)
        head = sock.recv(4096)
        sock.close()
    tap.ok(head.startswith(b"HTTP/1.1 200") and b"text/csv" in head, "csv_client_leaving_got_the_head",
           diag=lambda: head[:200])
    r = svc.request("POST", "/v1/execute", json={"database": database, "sql": "SELECT 1 AS one"},
                    headers={"Accept": "text/csv"})
    tap.ok(r.status == 200 and r.body == b"one\r\n1\r\n", "service_answers_after_clients_left_mid_csv",
           diag=lambda: (r.status, r.body[:100]))


def check_negotiation(svc, database):
    body = {"database": database, "sql": "SELECT id, s FROM t ORDER BY id"}
    cases = [(None, "json"), ("*/*", "json"), ("application/json", "json"), ("text/csv;q=0", "json"),
             ("text/csv", "csv"), ("text/*", "csv"), ("text/csv;q=0.9, application/json;q=0.5", "csv"),
             ("application/json;q=0.9, text/csv;q=0.5", "json"), ("text/csv;q=0, */*", "json"),
             ("text/html;q=0.9, text/csv", "csv"), ("TEXT/CSV; header=present", "csv"),
             ("text/html", 406), ("application/xml, text/plain", 406), ("application/json;q=0, text/csv;q=0", 406)]
    for accept, want in cases:
        headers = {"Accept": accept} if accept is not None else {}
        r = svc.request("POST", "/v1/execute", json=body, headers=headers)
        ct = r.headers.get("Content-Type") or ""
        label = (accept or "none").replace("/", "_").replace("*", "any").replace(";", "_").replace(" ", "")
        if want == "json":
            ok = r.status == 200 and ct.startswith("application/json")
        elif want == "csv":
            ok = r.status == 200 and ct == CSV_TYPE
        else:
            ok = (r.status == 406 and ct.startswith("application/problem+json") and r.json is not None
                  and r.json.get("type") == "urn:text2sqld:problem:not-acceptable" and r.headers.get("X-Request-Id"))
        tap.ok(ok, "accept_%s_gets_%s" % (label, want), diag=lambda: (r.status, ct, r.text[:200]))
    r = svc.request("POST", "/v1/execute", json={"database": database, "sql": "SELECT nope FROM t"},
                    headers={"Accept": "text/csv"})
    tap.ok(r.status == 400 and fixtures.is_problem(r, 400, "sql-invalid"), "csv_request_error_stays_problem_json",
           diag=lambda: (r.status, r.headers.get("Content-Type"), r.text[:200]))
    r = svc.request("POST", "/v1/execute", json={"database": "nowhere", "sql": "SELECT 1"},
                    headers={"Accept": "text/csv"})
    tap.ok(r.status == 404 and (r.headers.get("Content-Type") or "").startswith("application/problem+json"),
           "csv_unknown_database_stays_problem_json", diag=lambda: (r.status, r.text[:200]))


def check_byte_limit(cfg):
    """execution.max_result_bytes cuts the CSV where it cuts the JSON."""
    cfg = dict(cfg, execution={"max_result_bytes": 20000, "max_rows": 20000})
    cfg["databases"] = cfg["databases"][:1]
    with fixtures.serving(tap, cfg, "byte_limited_service_exits_0_on_sigterm") as svc:
        body = {"database": "lite", "sql": "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g "
                                           "WHERE i < 5000) SELECT i, printf('%0100d', i) AS pad FROM g"}
        c, answer = check_same_as_json(svc, "sqlite", "/v1/execute", body, "result_at_the_byte_limit")
        if answer:
            tap.ok(answer["truncated_by"] == "max_result_bytes" and c.headers.get("X-Truncated-By") ==
                   "max_result_bytes", "byte_limit_says_truncated_by_max_result_bytes",
                   diag=lambda: (answer["truncated_by"], c.headers))


def check_query(svc):
    body = {"database": "lite", "question": "List every id and text", "options": {"generator": "model"}}
    for path in ("/v1/query", "/query"):
        c, answer = check_same_as_json(svc, "sqlite", path, body, "query_%s" % path.strip("/").replace("/", "_"))
        if answer:
            tap.eq(c.headers.get("Content-Disposition"), 'attachment; filename="query.csv"',
                   "query_%s_names_query_csv" % path.strip("/").replace("/", "_"))
    r = svc.request("POST", "/v1/query", json=body, headers={"Accept": "text/event-stream, text/csv"})
    tap.ok(r.status == 200 and (r.headers.get("Content-Type") or "").startswith("text/event-stream"),
           "query_event_stream_beside_csv_still_streams", diag=lambda: (r.status, r.headers.get("Content-Type")))
    r = svc.request("POST", "/v1/query", json=body, headers={"Accept": "image/png"})
    tap.ok(fixtures.is_problem(r, 406, "not-acceptable"), "query_unacceptable_accept_is_406",
           diag=lambda: (r.status, r.text[:200]))


def check_all():
    lite = fixtures.write_sqlite(os.path.join(TMP, "awkward.sqlite"), SQLITE_SCHEMA, SQLITE_ROWS)
    pg = fixtures.PgDatabases(tap)
    stub = fixtures.ModelStub()
    try:
        pg_url = pg.create(PG_DB, PG_SETUP)
        if pg_url:
            t2s.psql(pg_rows_sql(), PG_DB)
        dbs = [{"name": "lite", "url": "sqlite://" + lite}]
        if pg_url:
            dbs.append({"name": "pg", "url": pg_url})
        cfg = {"databases": dbs,
               "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % time.monotonic_ns())},
               "generate": {"cache_ttl_s": 0},
               "execution": {"max_rows": 20000},
               "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 20000,
                                       "retries": 0}},
               "log": {"level": "info", "access": True}}
        stub.rules([], default_content="```sql\nSELECT id, s, r FROM t ORDER BY id\n```")
        with fixtures.serving(tap, cfg, "service_exits_0_on_sigterm") as svc:
            check_engine(svc, "sqlite", "lite")
            if pg_url:
                check_engine(svc, "pg", "pg")
            else:
                tap.skip("pg_csv", "T2S_TEST_PG_PORT is not set")
            check_negotiation(svc, "lite")
            check_client_leaves_mid_csv(svc, "lite")
            check_query(svc)
        check_byte_limit(cfg)
    finally:
        stub.close()
        pg.drop_all()


def main():
    try:
        return fixtures.run_with_binary(tap, "csv_tests", check_all)
    except Exception:
        fixtures.report_exception(tap)
        return tap.done()


if __name__ == "__main__":
    sys.exit(main())
