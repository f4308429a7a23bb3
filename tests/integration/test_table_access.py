#!/usr/bin/env python3
"""test_table_access.py - table-level access per key (auth.api_keys[].tables, pipeline/db/schema_grant.h)
on one engine: `test_table_access.py sqlite` or `test_table_access.py pg` (TAP; pg skips without
T2S_TEST_PG_PORT).

The database holds customers, orders (a foreign key to customers), payroll (salaries) and two views:
customer_names (reads customers) and payroll_view (reads payroll).  The key "sales" may see customers,
orders and customer_names; "hr" may see payroll; "all" everything.  For "sales":
  - GET /databases lists 3 tables, GET /databases/shop shows only its tables (no foreign key to
    another), /describe describes only them and answers a hidden table like a missing one, /link and
    /evidence never name payroll or its values, and the descriptions and examples pages leave out
    what names payroll;
  - /execute refuses every statement that reads payroll: by name, joined, in a subquery, in a CTE
    body, in a set operation, through payroll_view, through the catalog (sqlite_master /
    information_schema), with the same message as for a table that does not exist; a CTE named
    payroll is not the table and is allowed; its own tables and views answer;
  - /query is answered from its tables (the built-in) and a question about salaries is not answered
    from payroll; with a model configured (the stub), no prompt sent for it names payroll or a salary;
    a stored example that reads payroll is never shown to it, nor reused;
  - the answer cache never hands "all"'s answer to "sales": the same request by both is answered
    separately (two model calls), and "hr" gets its own.
"""

import hashlib
import json
import os
import secrets
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
KEYS = {name: "t2s-tables-%s-%s" % (name, secrets.token_hex(12)) for name in ("sales", "hr", "all", "admin")}

SCHEMA = """
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, full_name TEXT, country TEXT);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(customer_id),
                     amount REAL, employee_id INTEGER REFERENCES payroll(employee_id));
CREATE TABLE payroll (employee_id INTEGER PRIMARY KEY, employee_name TEXT, salary INTEGER, bank_account TEXT);
CREATE VIEW customer_names AS SELECT full_name FROM customers;
CREATE VIEW payroll_view AS SELECT employee_name, salary FROM payroll;
"""
ROWS = {
    "customers": [(1, "Ada Moreau", "France"), (2, "Bram de Vries", "Netherlands"), (3, "Elise Martin", "France")],
    "payroll": [(10, "Zelda Quorum", 91000, "IBAN-SECRET-1"), (11, "Yannick Pell", 87000, "IBAN-SECRET-2")],
    "orders": [(100, 1, 49.0, 10), (101, 3, 12.5, 11)],
}
# PostgreSQL: payroll before orders (the foreign key), the reader role granted everything.
PG_SQL = """
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, full_name TEXT, country TEXT);
CREATE TABLE payroll (employee_id INTEGER PRIMARY KEY, employee_name TEXT, salary INTEGER, bank_account TEXT);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(customer_id),
                     amount REAL, employee_id INTEGER REFERENCES payroll(employee_id));
CREATE VIEW customer_names AS SELECT full_name FROM customers;
CREATE VIEW payroll_view AS SELECT employee_name, salary FROM payroll;
CREATE FUNCTION payroll_total() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT sum(salary) FROM payroll';
INSERT INTO customers VALUES (1, 'Ada Moreau', 'France'), (2, 'Bram de Vries', 'Netherlands'),
                             (3, 'Elise Martin', 'France');
INSERT INTO payroll VALUES (10, 'Zelda Quorum', 91000, 'IBAN-SECRET-1'), (11, 'Yannick Pell', 87000, 'IBAN-SECRET-2');
INSERT INTO orders VALUES (100, 1, 49.0, 10), (101, 3, 12.5, 11);
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT USAGE ON SCHEMA public TO t2s_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO t2s_reader;
"""
SECRETS = ("payroll", "salary", "Zelda", "IBAN-SECRET", "bank_account")


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


def config(url, stub=None):
    cfg = {
        "databases": [{"name": "shop", "url": url}],
        "auth": {"api_keys": [
            {"name": "sales", "key_sha256": sha(KEYS["sales"]), "databases": ["shop"],
             "tables": {"shop": ["customers", "orders", "customer_names", "payroll_view_typo"]}},
            {"name": "hr", "key_sha256": sha(KEYS["hr"]), "databases": ["shop"], "tables": {"shop": ["payroll"]}},
            {"name": "all", "key_sha256": sha(KEYS["all"]), "databases": ["shop"]},
            {"name": "admin", "key_sha256": sha(KEYS["admin"]), "databases": ["*"], "scopes": ["query", "admin"]},
        ]},
        "log": {"level": "warn", "access": False},
    }
    if stub:
        cfg["models"] = {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 5000}}
        cfg["generate"] = {"cache_ttl_s": 300}
    return cfg


def as_key(name):
    return {"Authorization": "Bearer " + KEYS[name]}


def no_secret(tap_name, obj):
    if isinstance(obj, dict):  # what the caller sent comes back as it was sent
        obj = {k: v for k, v in obj.items() if k not in ("question", "evidence")}
    text = json.dumps(obj) if not isinstance(obj, str) else obj
    found = [s for s in SECRETS if s.lower() in text.lower()]
    tap.ok(not found, tap_name, diag=found and text[:600])


class Engine:
    name = None
    catalog_reads = ()
    missing_message = None

    def execute(self, svc, sql, key="sales"):
        return svc.request("POST", "/execute", json={"database": "shop", "sql": sql}, headers=as_key(key))


class Sqlite(Engine):
    name = "sqlite"
    catalog_reads = ("SELECT name FROM sqlite_master", "SELECT * FROM pragma_table_info('payroll')")

    def setup(self):
        tmp = fixtures.scratch_dir("t2s-tables-sqlite-")
        return "sqlite://" + fixtures.write_sqlite(os.path.join(tmp, "shop.sqlite"), SCHEMA, ROWS)

    def missing(self, name):
        return "no such table: " + name

    def cleanup(self):
        pass


class Postgres(Engine):
    name = "pg"
    # a hidden table's row type and name lookups answer as for a table that does not exist
    existence_probes = ("SELECT NULL::{t}", "SELECT CAST(NULL AS {t})", "SELECT NULL::public.{t}",
                        "SELECT NULL::{t}[]", "SELECT NULL::_{t}", "SELECT pg_typeof(NULL::{t})",
                        "SELECT to_regtype('{t}')", "SELECT has_type_privilege('{t}', 'USAGE')",
                        "SELECT pg_input_is_valid('{t}', 'regclass')", "SELECT '{t}'::regclass",
                        "SELECT '{t}'::regtype", "SELECT format_type(to_regtype('{t}'), NULL)")
    # the granted tables' row types and the catalog's types stay usable
    own_types = (("SELECT NULL::customers IS NULL", [[True]]), ("SELECT NULL::public.orders[] IS NULL", [[True]]),
                 ("SELECT 'a'::text || 'b'", [["ab"]]), ("SELECT '(1,2)'::point IS NULL", [[False]]))
    catalog_reads = ("SELECT table_name FROM information_schema.tables", "SELECT tablename FROM pg_tables",
                     "SELECT payroll_total()", "SELECT to_regclass('payroll')",
                     "SELECT has_table_privilege('payroll', 'SELECT')", "SELECT pg_relation_size('payroll')",
                     "SELECT obj_description('payroll'::regclass)")

    def setup(self):
        self.pg = fixtures.PgDatabases(tap)
        return self.pg.create("t2s_tables_%d" % os.getpid(), PG_SQL)

    def missing(self, name):
        return 'relation "%s" does not exist' % name

    def cleanup(self):
        self.pg.drop_all()


def check_schema_views(svc):
    r = svc.request("GET", "/databases", headers=as_key("sales"))
    shop = [d for d in (r.json or {}).get("databases", []) if d.get("name") == "shop"]
    tap.ok(shop and shop[0].get("tables") == 3, "database_list_counts_only_granted_tables", diag=shop)
    r = svc.request("GET", "/databases/shop", headers=as_key("sales"))
    names = sorted(t.get("name") for t in (r.json or {}).get("tables", []))
    tap.eq(names, ["customer_names", "customers", "orders"], "schema_shows_only_granted_tables")
    no_secret("schema_names_no_hidden_table_or_column", r.json)
    r = svc.request("GET", "/databases/shop", headers=as_key("all"))
    tap.ok(len((r.json or {}).get("tables", [])) == 5, "an_unlimited_key_sees_every_table")
    r = svc.request("POST", "/describe", json={"database": "shop"}, headers=as_key("sales"))
    tap.eq(r.status, 200, "describe_answers")
    no_secret("describe_names_no_hidden_table", r.json)
    r_hidden = svc.request("POST", "/describe", json={"database": "shop", "tables": ["payroll"]}, headers=as_key("sales"))
    r_missing = svc.request("POST", "/describe", json={"database": "shop", "tables": ["nothere"]}, headers=as_key("sales"))
    tap.eq((r_hidden.status, (r_hidden.json or {}).get("type")), (r_missing.status, (r_missing.json or {}).get("type")),
           "describing_a_hidden_table_answers_like_a_missing_one")
    for q in ("What is the salary of each employee?", "Zelda Quorum bank account", "payroll"):
        r = svc.request("POST", "/link", json={"database": "shop", "question": q}, headers=as_key("sales"))
        tap.eq(r.status, 200, "link_answers: " + q)
        no_secret("link_shows_no_hidden_table: " + q, r.json)
        r = svc.request("POST", "/evidence", json={"database": "shop", "question": q}, headers=as_key("sales"))
        no_secret("evidence_shows_no_hidden_value: " + q, r.json)
    r = svc.request("POST", "/link", json={"database": "shop", "question": "What is the salary of each employee?"},
                    headers=as_key("hr"))
    tap.ok("payroll" in json.dumps(r.json), "the_hr_key_links_its_table")


def check_guard(svc, eng):
    refused = [
        ("by_name", "SELECT * FROM payroll", "payroll"),
        ("joined", "SELECT c.full_name FROM customers c JOIN payroll p ON p.employee_id = c.customer_id", "payroll"),
        ("in_a_subquery", "SELECT full_name FROM customers WHERE customer_id IN (SELECT employee_id FROM payroll)",
         "payroll"),
        ("in_a_cte_body", "WITH x AS (SELECT salary FROM payroll) SELECT * FROM x", "payroll"),
        ("in_a_union", "SELECT full_name FROM customers UNION SELECT employee_name FROM payroll", "payroll"),
        ("in_a_scalar_subquery", "SELECT (SELECT max(salary) FROM payroll)", "payroll"),
        ("through_a_view", "SELECT * FROM payroll_view", "payroll_view"),
    ]
    for name, sql, table in refused:
        r = eng.execute(svc, sql)
        detail = (r.json or {}).get("detail") or ""
        tap.ok(400 <= r.status < 500 and eng.missing(table) in detail, "refused_" + name, diag=(r.status, detail))
    hidden = eng.execute(svc, "SELECT * FROM payroll")
    missing = eng.execute(svc, "SELECT * FROM nothere")
    tap.eq((hidden.status, (hidden.json or {}).get("type"), ((hidden.json or {}).get("detail") or "").replace("payroll", "X")),
           (missing.status, (missing.json or {}).get("type"), ((missing.json or {}).get("detail") or "").replace("nothere", "X")),
           "a_hidden_table_is_refused_like_a_missing_one")
    for sql, rows in getattr(eng, "own_types", ()):
        r = eng.execute(svc, sql)
        tap.eq((r.status, (r.json or {}).get("rows")), (200, rows), "allowed_type: " + sql)
    for probe in getattr(eng, "existence_probes", ()):
        hidden = eng.execute(svc, probe.format(t="payroll"))
        missing = eng.execute(svc, probe.format(t="nothere"))

        def seen(r, name):
            return r.status, (r.json or {}).get("type"), ((r.json or {}).get("detail") or "").replace(name, "X")
        tap.eq(seen(hidden, "payroll"), seen(missing, "nothere"),
               "a_hidden_tables_type_answers_like_a_missing_one: " + probe)
    for sql in eng.catalog_reads:
        r = eng.execute(svc, sql)
        tap.ok(400 <= r.status < 500, "catalog_read_refused: " + sql, diag=(r.status, r.text[:300]))
        no_secret("catalog_read_leaks_nothing: " + sql, (r.json or {}).get("rows"))
    allowed = [
        ("own_table", "SELECT count(*) FROM customers", [[3]]),
        ("own_join", "SELECT count(*) FROM orders o JOIN customers c ON c.customer_id = o.customer_id", [[2]]),
        ("own_view", "SELECT count(*) FROM customer_names", [[3]]),
        ("cte_named_like_the_hidden_table", "WITH payroll AS (SELECT 7 AS salary) SELECT salary FROM payroll", [[7]]),
    ]
    for name, sql, rows in allowed:
        r = eng.execute(svc, sql)
        tap.eq((r.status, (r.json or {}).get("rows")), (200, rows), "allowed_" + name)
    r = eng.execute(svc, "SELECT count(*) FROM payroll", key="hr")
    tap.eq((r.status, (r.json or {}).get("rows")), (200, [[2]]), "hr_reads_its_table")
    r = eng.execute(svc, "SELECT count(*) FROM customers", key="hr")
    tap.ok(400 <= r.status < 500, "hr_may_not_read_customers")
    r = eng.execute(svc, "SELECT count(*) FROM payroll_view", key="all")
    tap.eq(r.status, 200, "an_unlimited_key_reads_every_view")


def check_examples(svc):
    r = svc.request("POST", "/databases/shop/examples", headers=as_key("admin"),
                    json={"question": "What is the total salary of employees?", "sql": "SELECT sum(salary) FROM payroll"})
    tap.eq(r.status, 201, "admin_stores_an_example_on_payroll")
    r = svc.request("POST", "/databases/shop/examples", headers=as_key("admin"),
                    json={"question": "How many customers are from France?",
                          "sql": "SELECT count(*) FROM customers WHERE country = 'France'"})
    tap.eq(r.status, 201, "admin_stores_an_example_on_customers")
    r = svc.request("GET", "/databases/shop/examples", headers=as_key("sales"))
    qs = [e.get("question") for e in (r.json or {}).get("examples", [])]
    tap.eq(qs, ["How many customers are from France?"], "example_list_leaves_out_hidden_tables")
    r = svc.request("POST", "/evidence", json={"database": "shop", "question": "What is the total salary of employees?"},
                    headers=as_key("sales"))
    no_secret("evidence_examples_leave_out_hidden_tables", (r.json or {}).get("examples"))
    r = svc.request("POST", "/query", json={"database": "shop", "question": "What is the total salary of employees?"},
                    headers=as_key("sales"))
    no_secret("query_never_reuses_a_hidden_example", {"sql": (r.json or {}).get("sql"), "rows": (r.json or {}).get("rows"),
                                                       "detail": (r.json or {}).get("detail")})
    r = svc.request("POST", "/query", json={"database": "shop", "question": "What is the total salary of employees?"},
                    headers=as_key("hr"))
    tap.eq((r.status, (r.json or {}).get("rows")), (200, [[178000]]), "hr_reuses_the_example_on_its_table")
    r = svc.request("POST", "/query", json={"database": "shop", "question": "How many customers are there?"},
                    headers=as_key("sales"))
    tap.eq((r.status, (r.json or {}).get("rows")), (200, [[3]]), "sales_query_answered_from_its_tables")


def check_model_and_cache(eng, url):
    stub = fixtures.ModelStub()
    try:
        stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": "SELECT count(*) FROM orders"}}])
        with t2s.Service(config(url, stub)) as svc:
            body = {"database": "shop", "question": "Which employees earn the most, and how many orders each?",
                    "options": {"generator": "model"}}
            r = svc.request("POST", "/query", json=body, headers=as_key("sales"))
            tap.eq(r.status, 200, "model_answer_for_sales")
            prompts = json.dumps([q.get("body") for q in stub.requests()])
            tap.ok(prompts != "[]", "the_model_was_asked")
            no_secret("no_prompt_names_a_hidden_table_or_value", prompts)
            before = len(stub.requests())
            r = svc.request("POST", "/query", json=body, headers=as_key("sales"))
            tap.ok(r.headers.get("X-Cache") == "hit" and len(stub.requests()) == before, "same_key_is_served_from_cache",
                   diag=r.headers.get("X-Cache"))
            r = svc.request("POST", "/query", json=body, headers=as_key("all"))
            tap.ok(r.headers.get("X-Cache") == "miss" and len(stub.requests()) > before,
                   "a_key_with_other_tables_is_not_served_sales_answer", diag=r.headers.get("X-Cache"))
            r = svc.request("POST", "/query", json=body, headers=as_key("hr"))
            tap.ok(r.headers.get("X-Cache") != "hit", "hr_gets_its_own_answer", diag=r.headers.get("X-Cache"))
            tap.ok(400 <= r.status < 500 or r.status == 200 and "orders" not in json.dumps((r.json or {}).get("rows")),
                   "hr_is_not_answered_from_orders", diag=r.text[:300])
            fixtures.stop_ok(tap, svc, "model_service_stops_cleanly")
    finally:
        stub.close()


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "sqlite"
    eng = {"sqlite": Sqlite, "pg": Postgres}[name]()
    if name == "pg" and not fixtures.have_pg():
        tap.skip("table_access_pg", "no PostgreSQL server (T2S_TEST_PG_PORT is unset)")
        return
    url = eng.setup()
    try:
        with t2s.Service(config(url)) as svc:
            check_schema_views(svc)
            check_guard(svc, eng)
            check_examples(svc)
            fixtures.stop_ok(tap, svc, "stops_cleanly")
        check_model_and_cache(eng, url)
    finally:
        eng.cleanup()


sys.exit(fixtures.run_with_binary(tap, "table_access_checks", main))
