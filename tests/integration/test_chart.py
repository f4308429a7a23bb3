#!/usr/bin/env python3
"""test_chart.py - every answer with rows carries `chart`, a Vega-Lite v6 spec suggested from
the result's column types and shape (pipeline/sql/exec_chart.h), or null when a chart would
not help; against the real binary, SQLite files written here, the PostgreSQL server of
tests/lib/servers.sh (its part is skipped when T2S_TEST_PG_PORT is unset) and the model stub.

Covers, through /execute:
  - a category and a number -> bar (horizontal past 10 bars; a text category rather than a
    key), a date and a number -> line (temporal x), an integer year and a number -> line,
    two numbers -> point (also in place of more than 40 bars), a date, a category and a
    number -> line coloured by the category, on SQLite and on PostgreSQL
    (date, timestamp and numeric columns of its own);
  - each spec validates against the real Vega-Lite JSON Schema (npm vega-lite's
    build/vega-lite-schema.json, with ajv) and compiles with Vega-Lite itself without
    warnings (tests/chart/validate.mjs; skipped when node or tests/chart/node_modules is
    missing); every encoding's field names a result column (Vega-Lite's escaping of dots and
    brackets undone: a column "t.total" is the field "t\\.total"), and data.values hold
    exactly the rows' values of the charted columns, keyed by the column names;
  - null for: one value (a single row), no rows, text only, a single number column, more
    than 40 categories for bars, two columns of the same name;
  - /query's answer, and the stream's final event, carry the chart of their rows; /generate
    (no rows) carries chart null.
Every service is stopped with SIGTERM and must exit 0.
"""

import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-chart-")
TOOLS = os.path.join(t2s.SOURCE_ROOT, "tests", "chart")
PG_DB = "t2s_chart_%d" % os.getpid()

SCHEMA = """
CREATE TABLE sales (id INTEGER PRIMARY KEY, region TEXT, day DATE, yr INTEGER, amount REAL, qty INTEGER,
                    note TEXT);
CREATE TABLE people (name TEXT, score INTEGER);
"""
REGIONS = ["North", "South", "East", "West"]
SALES = [(i + 1, REGIONS[i % 4], "2024-%02d-%02d" % (1 + i % 6, 1 + i % 27), 2019 + i % 5,
          10.5 * (i % 7) + 1, 3 + i % 11, "n%d" % i) for i in range(60)]
PEOPLE = [("person %d" % i, i * 3 % 17) for i in range(60)]
ROWS = {"sales": SALES, "people": PEOPLE}

PG_SETUP = """
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
CREATE TABLE sales (id int PRIMARY KEY, region text, day date, at timestamp, amount numeric(10,2), qty int);
INSERT INTO sales SELECT g, (ARRAY['North','South','East','West'])[1 + g % 4],
  DATE '2024-01-01' + (g % 40), TIMESTAMP '2024-01-01 08:00' + g * INTERVAL '5 hours', (g % 7) * 10.5 + 1, 3 + g % 11
  FROM generate_series(1, 60) g;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO t2s_reader;
"""

# (check name, sql, expected mark or None, channel -> expected column, engine-specific).
SHAPES = [
    ("bar_from_a_category_and_a_number",
     "SELECT region, SUM(amount) AS \"t.total\" FROM sales GROUP BY region ORDER BY 2 DESC",
     "bar", {"x": "region", "y": "t.total"}),
    ("horizontal_bar_past_ten_bars",
     "SELECT note AS \"label[1]\", qty FROM sales WHERE id <= 15",
     "bar", {"y": "label[1]", "x": "qty"}),
    ("line_from_a_date_and_a_number",
     "SELECT day, SUM(amount) AS total FROM sales GROUP BY day ORDER BY day",
     "line", {"x": "day", "y": "total"}),
    ("line_from_a_year_and_a_number",
     "SELECT yr AS year, COUNT(*) AS n FROM sales GROUP BY yr ORDER BY yr",
     "line", {"x": "year", "y": "n"}),
    ("line_from_a_time_of_day_and_a_number",
     "SELECT printf('%02d:30', id % 24) AS at, SUM(qty) AS units FROM sales GROUP BY 1 ORDER BY 1",
     "line", {"x": "at", "y": "units"}),
    ("line_from_year_strings_and_a_number",
     "SELECT CAST(yr AS TEXT) AS year, SUM(amount) AS total FROM sales GROUP BY 1 ORDER BY 1",
     "line", {"x": "year", "y": "total"}),
    ("point_from_two_numbers",
     "SELECT amount, qty FROM sales",
     "point", {"x": "amount", "y": "qty"}),
    ("coloured_line_from_a_date_a_category_and_a_number",
     "SELECT day, region, SUM(qty) AS units FROM sales GROUP BY day, region ORDER BY day",
     "line", {"x": "day", "y": "units", "color": "region"}),
    ("points_in_place_of_too_many_bars",
     "SELECT note, amount, qty FROM sales",
     "point", {"x": "amount", "y": "qty"}),
    ("bars_labelled_by_text_rather_than_a_key",
     "SELECT id, region, amount FROM sales WHERE id <= 4",
     "bar", {"x": "region", "y": "amount"}),
    ("null_for_one_value", "SELECT COUNT(*) FROM sales", None, None),
    ("null_for_one_row", "SELECT region, amount FROM sales WHERE id = 1", None, None),
    ("null_for_no_rows", "SELECT region, amount FROM sales WHERE id < 0", None, None),
    ("null_for_text_only", "SELECT region, note FROM sales", None, None),
    ("null_for_a_single_number_column", "SELECT amount FROM sales", None, None),
    ("null_for_too_many_categories", "SELECT name, score FROM people", None, None),
    ("null_for_two_columns_of_one_name", "SELECT region AS v, amount AS v FROM sales", None, None),
]

PG_SHAPES = [
    ("pg_bar_from_text_and_numeric",
     "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region",
     "bar", {"x": "region", "y": "total"}),
    ("pg_line_from_a_date_column",
     "SELECT day, SUM(qty) AS units FROM sales GROUP BY day ORDER BY day",
     "line", {"x": "day", "y": "units"}),
    ("pg_line_from_a_timestamp_column",
     "SELECT at, amount FROM sales ORDER BY at",
     "line", {"x": "at", "y": "amount"}),
    ("pg_coloured_line",
     "SELECT date_trunc('month', at)::date AS month, region, SUM(qty) AS units FROM sales GROUP BY 1, 2 ORDER BY 1",
     "line", {"x": "month", "y": "units", "color": "region"}),
    ("pg_null_for_one_value", "SELECT COUNT(*) FROM sales", None, None),
]


def unescape_field(field):
    """A Vega-Lite field string back to the column name (backslash escapes undone)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 1 < len(field):
            i += 1
        out.append(field[i])
        i += 1
    return "".join(out)


def node_skip_reason():
    if not shutil.which("node"):
        return "node is not installed"
    if not os.path.isdir(os.path.join(TOOLS, "node_modules", "vega-lite")):
        return "tests/chart/node_modules is missing (scripts/install-deps.sh installs it)"
    return None


def validate_specs(specs):
    """validate.mjs's verdict per name."""
    r = subprocess.run(["node", os.path.join(TOOLS, "validate.mjs")], cwd=TOOLS, input=json.dumps(specs),
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("validate.mjs failed: %s" % r.stderr[-2000:])
    return {v["name"]: v for v in map(json.loads, r.stdout.splitlines())}


def check_shape(name, answer, mark, channels, specs):
    """The checks on one answer's chart; a spec to validate goes into specs."""
    chart = answer.get("chart", "missing")
    if mark is None:
        tap.ok(chart is None, name, diag=lambda: json.dumps(chart)[:600])
        return
    if not tap.ok(isinstance(chart, dict), name + "_has_a_chart", diag=lambda: json.dumps(chart)[:600]):
        return
    specs[name] = chart
    kind = chart["mark"]["type"] if isinstance(chart.get("mark"), dict) else chart.get("mark")
    tap.eq(kind, mark, name + "_mark")
    enc = chart.get("encoding", {})
    got = {ch: unescape_field(enc[ch]["field"]) for ch in enc}
    tap.eq(got, channels, name + "_encodings_name_result_columns")
    cols = answer["columns"]
    tap.ok(all(c in cols for c in got.values()), name + "_every_field_is_a_column", diag=lambda: (got, cols))
    idx = [cols.index(c) for c in channels.values()]
    want = [{cols[i]: row[i] for i in idx} for row in answer["rows"]]
    tap.ok(chart["data"]["values"] == want, name + "_data_values_are_the_rows",
           diag=lambda: (chart["data"]["values"][:3], want[:3]))
    tap.eq(chart.get("$schema"), "https://vega.github.io/schema/vega-lite/v6.json", name + "_declares_vega_lite_v6")


def check_validation(specs):
    reason = node_skip_reason()
    if reason:
        tap.skip("charts_validate_against_the_vega_lite_schema", reason)
        return
    verdicts = validate_specs(specs)
    for name in specs:
        v = verdicts.get(name, {})
        tap.ok(v.get("valid"), name + "_validates_against_the_vega_lite_schema", diag=lambda: v)
        tap.ok(v.get("compiled") and not v.get("warnings"), name + "_compiles_with_vega_lite_without_warnings",
               diag=lambda: v)


def execute(svc, database, sql):
    r = svc.request("POST", "/v1/execute", json={"database": database, "sql": sql})
    if r.status != 200:
        raise RuntimeError("%s: %d %s" % (sql, r.status, r.text[:300]))
    return r.json


def check_validator_refuses_a_broken_spec():
    """The validator can fail: a spec naming a mark that does not exist is refused."""
    if node_skip_reason():
        return
    v = validate_specs({"broken": {"data": {"values": []}, "mark": "pie-ish", "encoding": {}}})["broken"]
    tap.ok(not v["valid"], "validator_refuses_an_invalid_spec", diag=lambda: v)


def check_answers():
    db_path = fixtures.write_sqlite(os.path.join(TMP, "sales.sqlite"), SCHEMA, ROWS)
    concert = fixtures.write_sqlite(os.path.join(TMP, "concert.sqlite"), fixtures.SMALL_CONCERT_SCHEMA,
                                    fixtures.SMALL_CONCERT_ROWS)
    pg = fixtures.PgDatabases(tap)
    stub = fixtures.ModelStub()
    try:
        pg_url = pg.create(PG_DB, PG_SETUP)
        dbs = [{"name": "sales", "url": "sqlite://" + db_path}, {"name": "concert", "url": "sqlite://" + concert}]
        if pg_url:
            dbs.append({"name": "pgsales", "url": pg_url})
        cfg = {"databases": dbs,
               "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % time.monotonic_ns())},
               "generate": {"cache_ttl_s": 0},
               "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 20000,
                                       "retries": 0}},
               "log": {"level": "info", "access": False}}
        stub.rules([], default_content="```sql\nSELECT country, count(*) AS singers FROM singer "
                                       "GROUP BY country ORDER BY country\n```")
        specs = {}
        with fixtures.serving(tap, cfg, "service_exits_0_on_sigterm") as svc:
            for name, sql, mark, channels in SHAPES:
                check_shape(name, execute(svc, "sales", sql), mark, channels, specs)
            if pg_url:
                for name, sql, mark, channels in PG_SHAPES:
                    check_shape(name, execute(svc, "pgsales", sql), mark, channels, specs)
            else:
                tap.skip("pg_charts", "T2S_TEST_PG_PORT is not set")
            body = {"database": "concert", "question": "How many singers are there in each country?",
                    "options": {"generator": "model"}}
            q = svc.request("POST", "/v1/query", json=body)
            if tap.eq(q.status, 200, "query_answers_200"):
                check_shape("query_answer_carries_a_bar_chart", q.json, "bar", {"y": "country", "x": "singers"},
                            specs)
            s = svc.request("POST", "/v1/query", json=body, headers={"Accept": "text/event-stream"})
            final = None
            for block in s.text.split("\n\n"):
                if block.startswith("event: result\n"):
                    final = json.loads(block.split("\ndata: ", 1)[1])
            tap.ok(final is not None and q.json is not None and final.get("chart") == q.json.get("chart"),
                   "stream_final_event_carries_the_same_chart", diag=lambda: s.text[-600:])
            g = svc.request("POST", "/v1/generate", json=body)
            tap.ok(g.status == 200 and "chart" in g.json and g.json["chart"] is None,
                   "generate_without_rows_carries_chart_null", diag=lambda: g.text[:400])
        check_validation(specs)
    finally:
        stub.close()
        pg.drop_all()


def main():
    try:
        check_validator_refuses_a_broken_spec()
        return fixtures.run_with_binary(tap, "chart_tests", check_answers)
    except Exception:
        fixtures.report_exception(tap)
        return tap.done()


if __name__ == "__main__":
    sys.exit(main())
