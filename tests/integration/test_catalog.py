#!/usr/bin/env python3
"""test_catalog.py - the catalog as GET /databases and GET /databases/{name}
show it, checked against the real databases (TAP).

What is checked, with the real text2sqld binary ($T2S_BIN):
  - A small SQLite fixture written by this test (always runs): tables,
    columns, declared types, nullability, composite primary key, foreign
    keys (including one naming the referenced table without columns), case
    of names kept, exact row counts, samples; a view is listed as a view.
  - The 20 Spider dev SQLite databases (skipped without ../shared/datasets):
    GET /databases lists all 20 "up"; each GET /databases/{name} agrees with
    the file itself (read here with Python's sqlite3 and PRAGMA table_info /
    foreign_key_list) on tables, columns, primary keys and foreign keys; it
    agrees with tables.json wherever the file agrees with tables.json, and
    the dataset's own discrepancies (tables.json vs the file) are listed as
    TAP diagnostics, not failures.  Row counts equal count(*) and are not
    estimates; samples are at most catalog.sample_values distinct non-null
    values that occur in the column.
  - PostgreSQL (skipped without T2S_TEST_PG_PORT): each Spider database of
    $T2S_TEST_PG_SPIDER_DBS, registered as postgresql://t2s_reader@.../<db>,
    has the same tables, columns and primary keys as its SQLite original and
    exactly the foreign keys PostgreSQL holds (read as the admin via psql).
    A database created here (public + sales schemas) checks comments,
    schema-qualified names, a cross-schema foreign key, the "schemas" config
    filter, catalog row-count estimates after ANALYZE, and that tables the
    reader role cannot SELECT are hidden.
  - Unreachable databases (PostgreSQL on a closed port, a missing SQLite
    file) do not stop the service: listed "down" with an error, GET on them
    is a 503 problem, the others keep working.
  - schema_hash is the same across restarts and for two registrations of the
    same file, and differs between different schemas.
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402
from fixtures import is_problem  # noqa: E402
from t2s import pg_url, qi, sqlite_ro  # noqa: E402

tap = t2s.Tap()
PID = os.getpid()
SAMPLE_VALUES = 3  # not the default (5), so the cap is really the config's


# --------------------------------------------------------------------------- helpers

def file_facts(path):
    """What the SQLite file itself says, read with PRAGMAs: {table: {columns,
    pk, fks}} in sqlite_master order (internal sqlite_* tables left out)."""
    con = sqlite_ro(path)
    try:
        names = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
            "ESCAPE '\\' ORDER BY rowid")]
        facts = {"order": names, "tables": {}, "internal": [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'sqlite\\_%' "
            "ESCAPE '\\'")]}
        for t in names:
            cols, pk = [], []
            for cid, cname, ctype, notnull, _dflt, pkpos in con.execute(
                    "PRAGMA main.table_info(%s)" % qi(t)):
                cols.append(cname)
                if pkpos:
                    pk.append((pkpos, cname))
            facts["tables"][t] = {"columns": cols, "pk": [c for _, c in sorted(pk)],
                                  "fk_rows": list(con.execute(
                                      "PRAGMA main.foreign_key_list(%s)" % qi(t)))}
        # Foreign keys as (table, column, ref_table, ref_column); "REFERENCES t"
        # without columns means t's primary key (resolved case-insensitively, as SQLite does).
        lower = {t.lower(): t for t in names}
        for t in names:
            fks = set()
            groups = {}
            for fid, seq, rtable, fcol, tcol, *_ in facts["tables"][t]["fk_rows"]:
                groups.setdefault(fid, []).append((seq, fcol, rtable, tcol))
            for fid, rows in groups.items():
                rows.sort()
                ref = lower.get((rows[0][2] or "").lower())
                refpk = facts["tables"][ref]["pk"] if ref else []
                for k, (_seq, fcol, rtable, tcol) in enumerate(rows):
                    if tcol is None:
                        tcol = refpk[k] if k < len(refpk) else ""
                    fks.add((t, fcol, rtable, tcol))
            facts["tables"][t]["fks"] = fks
        return facts
    finally:
        con.close()


def service_facts(model):
    """The same facts from a GET /databases/{name} body."""
    facts = {"order": [t["name"] for t in model["tables"]], "tables": {}}
    for t in model["tables"]:
        fks = set()
        for fk in t["foreign_keys"]:
            for a, b in zip(fk["columns"], fk["references"]["columns"]):
                fks.add((t["name"], a, fk["references"]["table"], b))
        facts["tables"][t["name"]] = {"columns": [c["name"] for c in t["columns"]],
                                      "pk": list(t["primary_key"]), "fks": fks,
                                      "raw": t}
    return facts


def json_facts(schema):
    """The same facts from one tables.json entry (Spider format)."""
    tables = schema["table_names_original"]
    cols = schema["column_names_original"]
    facts = {"order": list(tables), "tables": {t: {"columns": [], "pk": [], "fks": set()}
                                               for t in tables}}
    for ti, cname in cols:
        if ti >= 0:
            facts["tables"][tables[ti]]["columns"].append(cname)
    for p in schema["primary_keys"]:
        for ci in (p if isinstance(p, list) else [p]):
            ti, cname = cols[ci]
            facts["tables"][tables[ti]]["pk"].append(cname)
    for a, b in schema["foreign_keys"]:
        (ta, ca), (tb, cb) = cols[a], cols[b]
        facts["tables"][tables[ta]]["fks"].add((tables[ta], ca, tables[tb], cb))
    return facts


def spider_db_ids():
    d = t2s.spider_dir()
    if d is None:
        return []
    base = os.path.join(d, "database")
    return sorted(x for x in os.listdir(base) if t2s.spider_db_path(x))


def samples_problems(path, model, sample_values):
    """Checks every column's samples against the file: at most sample_values,
    distinct, non-empty, occurring in the column (as text; a sample cut to
    sample_value_max_len must be a prefix of a value), and as many as the
    first 1000 rows offer up to the cap.  Returns a list of problems."""
    problems = []
    con = sqlite_ro(path)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        for t in model["tables"]:
            if t.get("kind") != "table":
                continue
            for c in t["columns"]:
                s = c["samples"]
                where = "%s.%s" % (t["name"], c["name"])
                if len(s) > sample_values:
                    problems.append("%s: %d samples > %d" % (where, len(s), sample_values))
                if len(set(s)) != len(s):
                    problems.append("%s: duplicate samples %r" % (where, s))
                for v in s:
                    if not isinstance(v, str) or v == "":
                        problems.append("%s: bad sample %r" % (where, v))
                        continue
                    q = ("SELECT 1 FROM %s WHERE %s IS NOT NULL AND (CAST(%s AS TEXT) = ?1 OR "
                         "(length(CAST(?1 AS BLOB)) >= 60 AND substr(CAST(%s AS TEXT), 1, length(?1)) = ?1)) "
                         "LIMIT 1" % (qi(t["name"]), qi(c["name"]), qi(c["name"]), qi(c["name"])))
                    if con.execute(q, (v,)).fetchone() is None:
                        problems.append("%s: sample %r does not occur in the column" % (where, v))
                avail = con.execute(
                    "SELECT count(DISTINCT CAST(x AS TEXT)) FROM (SELECT %s AS x FROM (SELECT * FROM %s "
                    "LIMIT 1000)) WHERE x IS NOT NULL AND typeof(x) != 'blob' AND CAST(x AS TEXT) != ''"
                    % (qi(c["name"]), qi(t["name"]))).fetchone()[0]
                if len(s) != min(sample_values, avail):
                    problems.append("%s: %d samples, but %d distinct values are available (cap %d)"
                                    % (where, len(s), avail, sample_values))
    finally:
        con.close()
    return problems


# --------------------------------------------------------------------------- fixture SQLite

FIXTURE_SQL = """
CREATE TABLE "Customer" (
  "CustomerID" INTEGER PRIMARY KEY,
  "FullName" VARCHAR(80) NOT NULL,
  city TEXT,
  score REAL
);
CREATE TABLE "Order Lines" (
  order_no INTEGER NOT NULL,
  line_no INTEGER NOT NULL,
  "CustomerID" INTEGER REFERENCES "Customer"("CustomerID"),
  product TEXT,
  qty INT,
  PRIMARY KEY (order_no, line_no)
);
CREATE TABLE shipment (
  ship_id INTEGER PRIMARY KEY,
  order_no INTEGER,
  line_no INTEGER,
  cust INTEGER REFERENCES "Customer",
  FOREIGN KEY (order_no, line_no) REFERENCES "Order Lines"(order_no, line_no)
);
CREATE TABLE empty_one (a, b BLOB);
CREATE VIEW big_customers AS SELECT "FullName" FROM "Customer" WHERE score > 50;
"""


def make_fixture(path):
    cities = ["Oslo", "Lima", "Pune", None, "Kyiv"]
    return fixtures.write_sqlite(path, FIXTURE_SQL, {
        "Customer": [(i, "Person %02d" % i, cities[i % 5], i * 2.5) for i in range(1, 41)],
        "Order Lines": [(i // 3, i % 3, (i % 40) + 1, "prod-%d" % (i % 7), i % 11) for i in range(1, 121)],
        "shipment": [(i, 1, 1, 1) for i in range(1, 8)]})


def check_fixture(svc, path):
    r = svc.request("GET", "/databases/fixture")
    if not tap.eq(r.status, 200, "fixture_get_database_answers_200"):
        return
    m = r.json
    tap.eq(m.get("engine"), "sqlite", "fixture_engine_is_sqlite")
    tables = {t["name"]: t for t in m["tables"]}
    tap.eq(sorted(tables), sorted(["Customer", "Order Lines", "shipment", "empty_one", "big_customers"]),
           "fixture_lists_tables_and_view_with_their_own_case")
    tap.eq(tables.get("big_customers", {}).get("kind"), "view", "fixture_view_has_kind_view")
    tap.eq(tables.get("Customer", {}).get("kind"), "table", "fixture_table_has_kind_table")
    c = tables.get("Customer")
    if c:
        tap.eq([x["name"] for x in c["columns"]], ["CustomerID", "FullName", "city", "score"],
               "fixture_columns_in_declared_order_with_case")
        tap.eq([x["type"] for x in c["columns"]], ["INTEGER", "VARCHAR(80)", "TEXT", "REAL"],
               "fixture_declared_types_as_written")
        tap.eq([x["nullable"] for x in c["columns"]], [False, False, True, True],
               "fixture_nullability_from_not_null_and_primary_key")
        tap.eq(c["primary_key"], ["CustomerID"], "fixture_single_primary_key")
        tap.eq(c["row_count"], 40, "fixture_row_count_exact")
        tap.eq(c["row_count_estimated"], False, "fixture_row_count_not_estimated")
        tap.eq(c["qualified_name"], "Customer", "fixture_qualified_name_is_bare_for_sqlite")
        city = next(x for x in c["columns"] if x["name"] == "city")
        tap.eq(sorted(city["samples"]), sorted(["Lima", "Pune", "Kyiv"]),
               "fixture_samples_are_first_distinct_non_null_values_up_to_cap")
        score = next(x for x in c["columns"] if x["name"] == "score")
        tap.eq(score["samples"], ["2.5", "5.0", "7.5"], "fixture_real_samples_as_sqlite_text")
    ol = tables.get("Order Lines")
    if ol:
        tap.eq(ol["primary_key"], ["order_no", "line_no"], "fixture_composite_primary_key_in_key_order")
        tap.eq([x["primary_key"] for x in ol["columns"]], [True, True, False, False, False],
               "fixture_columns_flag_primary_key_membership")
        tap.eq(ol["foreign_keys"], [{"columns": ["CustomerID"], "references": {
            "schema": None, "table": "Customer", "columns": ["CustomerID"]}}],
            "fixture_foreign_key_with_quoted_names")
        tap.eq(ol["row_count"], 120, "fixture_row_count_of_table_with_space_in_name")
    sh = tables.get("shipment")
    if sh:
        fks = sorted(sh["foreign_keys"], key=lambda f: f["references"]["table"])
        tap.eq(fks, [
            {"columns": ["cust"], "references": {"schema": None, "table": "Customer",
                                                 "columns": ["CustomerID"]}},
            {"columns": ["order_no", "line_no"], "references": {
                "schema": None, "table": "Order Lines", "columns": ["order_no", "line_no"]}}],
            "fixture_foreign_keys_composite_and_implicit_primary_key_reference")
    e = tables.get("empty_one")
    if e:
        tap.eq(e["row_count"], 0, "fixture_empty_table_counts_zero")
        tap.eq([x["samples"] for x in e["columns"]], [[], []], "fixture_empty_table_has_no_samples")
        tap.eq([x["type"] for x in e["columns"]], ["", "BLOB"], "fixture_untyped_column_has_empty_type")
    probs = samples_problems(path, m, SAMPLE_VALUES)
    tap.ok(not probs, "fixture_samples_occur_in_their_columns", diag="\n".join(probs[:20]))


# --------------------------------------------------------------------------- Spider SQLite

def check_spider_sqlite(svc, dbs):
    r = svc.request("GET", "/databases")
    if not tap.eq(r.status, 200, "list_databases_answers_200"):
        return
    listed = {d["name"]: d for d in r.json["databases"]}
    spider = [listed.get(d) for d in dbs]
    tap.ok(all(x is not None for x in spider), "list_databases_includes_all_%d_spider_databases" % len(dbs),
           diag=lambda: "missing: %s" % [d for d in dbs if d not in listed])
    up = [d for d in dbs if listed.get(d, {}).get("status") == "up"]
    tap.eq(len(up), len(dbs), "all_%d_spider_databases_are_up" % len(dbs))
    tap.ok(all(listed[d].get("engine") == "sqlite" and isinstance(listed[d].get("tables"), int) and
               len(listed[d].get("schema_hash", "")) == 64 for d in up),
           "listed_spider_databases_have_engine_tables_and_hash")

    tables_json = {s["db_id"]: s for s in (t2s.spider_tables_json() or [])}
    file_ok, json_ok, counts_ok, samples_ok = [], [], [], []
    for db in dbs:
        path = t2s.spider_db_path(db)
        resp = svc.request("GET", "/databases/%s" % db)
        if resp.status != 200:
            tap.ok(False, "spider_%s_get_answers_200" % db, diag=resp.text[:500])
            continue
        model = resp.json
        svc_f = service_facts(model)
        file_f = file_facts(path)
        problems = []
        if sorted(svc_f["order"]) != sorted(file_f["order"]):
            problems.append("tables: service %s, file %s" % (svc_f["order"], file_f["order"]))
        for t in file_f["order"]:
            s = svc_f["tables"].get(t)
            f = file_f["tables"][t]
            if s is None:
                continue
            if s["columns"] != f["columns"]:
                problems.append("%s columns: service %s, file %s" % (t, s["columns"], f["columns"]))
            if s["pk"] != f["pk"]:
                problems.append("%s primary key: service %s, file %s" % (t, s["pk"], f["pk"]))
            if s["fks"] != f["fks"]:
                problems.append("%s foreign keys: service %s, file %s" % (
                    t, sorted(s["fks"]), sorted(f["fks"])))
            pk_flags = [c["name"] for c in s["raw"]["columns"] if c["primary_key"]]
            if sorted(pk_flags) != sorted(f["pk"]):
                problems.append("%s primary_key flags %s, file %s" % (t, pk_flags, f["pk"]))
        tap.ok(not problems, "spider_%s_schema_matches_the_sqlite_file" % db, diag="\n".join(problems))
        file_ok.append(not problems)

        # tables.json: wherever it agrees with the file, the service must agree with it;
        # where the dataset disagrees with its own file, list it (the file wins).
        tj = tables_json.get(db)
        if tj is None:
            tap.skip("spider_%s_agrees_with_tables_json_where_the_file_does" % db, "not in tables.json")
        else:
            jf = json_facts(tj)
            disagreements, wrong = [], []
            for t in jf["order"]:
                if t not in file_f["tables"]:
                    kind = "an internal SQLite table" if t in file_f["internal"] else "not in the file"
                    disagreements.append("table %s is in tables.json but %s" % (t, kind))
                    if t in svc_f["tables"]:
                        wrong.append("service lists %s, which the file does not hold as a user table" % t)
                    continue
                j, f, s = jf["tables"][t], file_f["tables"][t], svc_f["tables"].get(t)
                if s is None:
                    wrong.append("service lacks table %s" % t)
                    continue
                for col in j["columns"]:
                    if col in f["columns"] and col not in s["columns"]:
                        wrong.append("service lacks column %s.%s" % (t, col))
                    elif col not in f["columns"]:
                        disagreements.append("column %s.%s is in tables.json, not in the file" % (t, col))
                for col in f["columns"]:
                    if col not in j["columns"]:
                        disagreements.append("column %s.%s is in the file, not in tables.json" % (t, col))
                for col in j["pk"]:
                    if col in f["pk"] and col not in s["pk"]:
                        wrong.append("service lacks primary key column %s.%s" % (t, col))
                    elif col not in f["pk"]:
                        disagreements.append("tables.json says %s.%s is a primary key column; the file "
                                             "does not" % (t, col))
                extra_pk = [c for c in f["pk"] if c not in j["pk"]]
                if extra_pk:
                    disagreements.append("primary key of %s in the file is %s; tables.json lists %s"
                                         % (t, f["pk"], j["pk"]))
                for fk in j["fks"]:
                    if fk in f["fks"] and fk not in s["fks"]:
                        wrong.append("service lacks foreign key %s.%s -> %s.%s" % fk)
                    elif fk not in f["fks"]:
                        disagreements.append("foreign key %s.%s -> %s.%s is in tables.json, not in the file"
                                             % fk)
                for fk in f["fks"]:
                    if fk not in j["fks"]:
                        disagreements.append("foreign key %s.%s -> %s.%s is in the file, not in tables.json"
                                             % fk)
            tap.ok(not wrong, "spider_%s_agrees_with_tables_json_where_the_file_does" % db,
                   diag="\n".join(wrong))
            json_ok.append(not wrong)
            for d in disagreements:
                tap.diag("dataset discrepancy in %s (the file wins): %s" % (db, d))

        # Row counts: exact for SQLite.
        con = sqlite_ro(path)
        try:
            bad = []
            for t in model["tables"]:
                want = con.execute("SELECT count(*) FROM %s" % qi(t["name"])).fetchone()[0]
                if t["row_count"] != want or t["row_count_estimated"] is not False:
                    bad.append("%s: row_count %r estimated %r, count(*) %d" % (
                        t["name"], t["row_count"], t["row_count_estimated"], want))
        finally:
            con.close()
        tap.ok(not bad, "spider_%s_row_counts_equal_count_star_and_are_exact" % db, diag="\n".join(bad))
        counts_ok.append(not bad)
        probs = samples_problems(path, model, SAMPLE_VALUES)
        tap.ok(not probs, "spider_%s_samples_are_capped_distinct_and_occur_in_the_column" % db,
               diag="\n".join(probs[:20]))
        samples_ok.append(not probs)
    tap.diag("spider sqlite catalog: %d/%d match the file, %d/%d agree with tables.json where the file "
             "does, %d/%d exact row counts, %d/%d sample sets valid" % (
                 sum(file_ok), len(file_ok), sum(json_ok), len(json_ok), sum(counts_ok), len(counts_ok),
                 sum(samples_ok), len(samples_ok)))


# --------------------------------------------------------------------------- Spider PostgreSQL

def pg_foreign_keys(dbname):
    """{(table, column, ref_table, ref_column)} of every FK in schema public, read as the admin."""
    rows = t2s.psql(
        "SELECT c.relname, a.attname, fc.relname, fa.attname FROM pg_constraint con "
        "JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_class fc ON fc.oid = con.confrelid "
        "CROSS JOIN LATERAL unnest(con.conkey, con.confkey) AS k(a1, a2) "
        "JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.a1 "
        "JOIN pg_attribute fa ON fa.attrelid = con.confrelid AND fa.attnum = k.a2 "
        "WHERE con.contype = 'f' AND n.nspname = 'public';", dbname)
    return {tuple(r) for r in rows}


def check_spider_pg(svc, pg_dbs):
    for db in pg_dbs:
        rs = svc.request("GET", "/databases/%s" % db)
        rp = svc.request("GET", "/databases/pg_%s" % db)
        if not (tap.eq(rs.status, 200, "pg_spider_%s_sqlite_model_answers_200" % db) and
                tap.eq(rp.status, 200, "pg_spider_%s_postgres_model_answers_200" % db)):
            continue
        s, p = service_facts(rs.json), service_facts(rp.json)
        tap.eq(rp.json.get("engine"), "postgresql", "pg_spider_%s_engine_is_postgresql" % db)
        tap.eq(sorted(p["order"]), sorted(s["order"]), "pg_spider_%s_same_tables_as_sqlite" % db)
        diffs = []
        for t in s["order"]:
            if t not in p["tables"]:
                continue
            if p["tables"][t]["columns"] != s["tables"][t]["columns"]:
                diffs.append("%s columns: pg %s, sqlite %s" % (t, p["tables"][t]["columns"],
                                                               s["tables"][t]["columns"]))
        tap.ok(not diffs, "pg_spider_%s_same_column_names_in_order" % db, diag="\n".join(diffs))
        diffs = ["%s: pg %s, sqlite %s" % (t, p["tables"][t]["pk"], s["tables"][t]["pk"])
                 for t in s["order"] if t in p["tables"] and p["tables"][t]["pk"] != s["tables"][t]["pk"]]
        tap.ok(not diffs, "pg_spider_%s_same_primary_keys" % db, diag="\n".join(diffs))
        svc_fks = set()
        for t in p["tables"].values():
            svc_fks |= t["fks"]
        try:
            want = pg_foreign_keys(db)
        except t2s.PsqlError as e:
            tap.ok(False, "pg_spider_%s_foreign_keys_equal_the_constraints_in_postgres" % db, diag=str(e))
            continue
        tap.eq(sorted(svc_fks), sorted(want), "pg_spider_%s_foreign_keys_equal_the_constraints_in_postgres" % db)
        tap.ok(svc_fks <= set().union(*[x["fks"] for x in s["tables"].values()]) if s["tables"] else True,
               "pg_spider_%s_foreign_keys_are_a_subset_of_the_sqlite_ones" % db,
               diag=lambda: sorted(svc_fks - set().union(*[x["fks"] for x in s["tables"].values()])))
        refs = [fk["references"]["schema"] for t in rp.json["tables"] for fk in t["foreign_keys"]]
        tap.ok(all(x == "public" for x in refs), "pg_spider_%s_foreign_keys_reference_schema_public" % db,
               diag=repr(refs))
        # Row counts: estimates from the catalog after the loader's ANALYZE.
        con = sqlite_ro(t2s.spider_db_path(db))
        try:
            bad = []
            for t in rp.json["tables"]:
                want_n = con.execute("SELECT count(*) FROM %s" % qi(t["name"])).fetchone()[0]
                if t["row_count_estimated"] is not True or t["row_count"] is None or \
                        abs(t["row_count"] - want_n) > max(2, want_n * 0.1):
                    bad.append("%s: %r (estimated %r), true %d" % (t["name"], t["row_count"],
                                                                  t["row_count_estimated"], want_n))
        finally:
            con.close()
        tap.ok(not bad, "pg_spider_%s_row_counts_are_catalog_estimates_close_to_truth" % db,
               diag="\n".join(bad))


# --------------------------------------------------------------------------- PostgreSQL fixture

def pg_fixture_sql():
    return """
CREATE SCHEMA sales;
CREATE TABLE public.customers (id integer PRIMARY KEY, name text NOT NULL, region text);
CREATE TABLE sales.orders (order_id bigint PRIMARY KEY, customer_id integer REFERENCES public.customers(id),
                           amount numeric(10,2), "Note" varchar(40));
CREATE TABLE public.secret (id int PRIMARY KEY, token text);
CREATE TABLE public."MixedCase" ("Key" int, "Value" text, PRIMARY KEY ("Key"));
CREATE VIEW public.customer_names AS SELECT id, name FROM public.customers;
COMMENT ON TABLE public.customers IS 'People who buy things';
COMMENT ON COLUMN public.customers.region IS 'Sales region, upper case';
COMMENT ON COLUMN sales.orders.amount IS 'Order total in EUR';
INSERT INTO public.customers SELECT g, 'customer ' || g, CASE WHEN g % 2 = 0 THEN 'NORTH' ELSE 'SOUTH' END
  FROM generate_series(1, 5000) g;
INSERT INTO sales.orders SELECT g, (g % 5000) + 1, g * 1.5, 'n' || (g % 4) FROM generate_series(1, 300) g;
INSERT INTO public.secret VALUES (1, 'hunter2');
INSERT INTO public."MixedCase" VALUES (1, 'one'), (2, 'two');
CREATE TABLE public.never_analyzed (x int);
ANALYZE public.customers;
ANALYZE sales.orders;
ANALYZE public."MixedCase";
REVOKE TEMPORARY ON DATABASE {DB} FROM PUBLIC;
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT USAGE ON SCHEMA sales TO t2s_reader;
GRANT SELECT ON public.customers, sales.orders, public."MixedCase", public.customer_names,
  public.never_analyzed TO t2s_reader;
"""


def check_pg_fixture(svc):
    r = svc.request("GET", "/databases/pgfix")
    if not tap.eq(r.status, 200, "pg_fixture_get_answers_200"):
        tap.diag(r.text[:500])
        return
    tables = {t["qualified_name"]: t for t in r.json["tables"]}
    tap.eq(sorted(tables), sorted(["customers", "sales.orders", "MixedCase", "customer_names",
                                   "never_analyzed"]),
           "pg_fixture_lists_readable_tables_and_views_qualified_outside_public")
    tap.ok("secret" not in tables and all(t["name"] != "secret" for t in r.json["tables"]),
           "pg_fixture_hides_table_the_reader_cannot_select")
    o = tables.get("sales.orders")
    if o:
        tap.eq((o["schema"], o["name"]), ("sales", "orders"), "pg_fixture_non_public_table_has_schema_sales")
        tap.eq(o["foreign_keys"], [{"columns": ["customer_id"], "references": {
            "schema": "public", "table": "customers", "columns": ["id"]}}],
            "pg_fixture_cross_schema_foreign_key_references_schema_public")
        amount = next((c for c in o["columns"] if c["name"] == "amount"), {})
        tap.eq(amount.get("comment"), "Order total in EUR", "pg_fixture_column_comment_in_other_schema")
        tap.eq(amount.get("type"), "numeric(10,2)", "pg_fixture_column_type_with_modifiers")
        tap.eq([c["name"] for c in o["columns"]], ["order_id", "customer_id", "amount", "Note"],
               "pg_fixture_column_names_keep_case")
        tap.eq(o["primary_key"], ["order_id"], "pg_fixture_primary_key_of_non_public_table")
    c = tables.get("customers")
    if c:
        tap.eq(c["comment"], "People who buy things", "pg_fixture_table_comment_from_comment_on_table")
        region = next((x for x in c["columns"] if x["name"] == "region"), {})
        tap.eq(region.get("comment"), "Sales region, upper case", "pg_fixture_column_comment_from_comment_on_column")
        name = next((x for x in c["columns"] if x["name"] == "name"), {})
        tap.eq(name.get("comment"), None, "pg_fixture_column_without_comment_has_null")
        tap.eq(name.get("nullable"), False, "pg_fixture_not_null_column_not_nullable")
        tap.eq(sorted(region.get("samples", [])), ["NORTH", "SOUTH"], "pg_fixture_samples_distinct_values")
        tap.eq(c["row_count_estimated"], True, "pg_fixture_analyzed_row_count_is_estimated")
        tap.ok(isinstance(c["row_count"], int) and abs(c["row_count"] - 5000) <= 500,
               "pg_fixture_analyzed_row_count_close_to_5000", diag=repr(c["row_count"]))
        tap.ok(len(name.get("samples", [])) <= SAMPLE_VALUES, "pg_fixture_samples_capped")
    mc = tables.get("MixedCase")
    if mc:
        tap.eq([x["name"] for x in mc["columns"]], ["Key", "Value"], "pg_fixture_mixed_case_names_kept")
        tap.eq(mc["primary_key"], ["Key"], "pg_fixture_mixed_case_primary_key")
    v = tables.get("customer_names")
    if v:
        tap.eq(v["kind"], "view", "pg_fixture_view_has_kind_view")
    na = tables.get("never_analyzed")
    if na:
        tap.ok(na["row_count"] == 0, "pg_fixture_never_analyzed_table_counted",
               diag=repr((na["row_count"], na["row_count_estimated"])))

    r = svc.request("GET", "/databases/pgfix_sales")
    if tap.eq(r.status, 200, "pg_fixture_schema_filter_get_answers_200"):
        names = [(t["schema"], t["name"], t["qualified_name"]) for t in r.json["tables"]]
        tap.eq(names, [("sales", "orders", "sales.orders")], "pg_schemas_config_restricts_to_sales")
        fks = r.json["tables"][0]["foreign_keys"] if r.json["tables"] else []
        tap.eq([fk["references"]["schema"] for fk in fks], ["public"],
               "pg_schema_filter_keeps_foreign_key_to_other_schema")
        whole = svc.request("GET", "/databases/pgfix").json or {}
        tap.ok(r.json.get("schema_hash") != whole.get("schema_hash"),
               "pg_schema_filter_changes_schema_hash")


# --------------------------------------------------------------------------- main

def main():
    tmp = fixtures.scratch_dir("t2s-catalog-")
    pgdbs = fixtures.PgDatabases(tap)
    try:
        fixture = make_fixture(os.path.join(tmp, "fixture.sqlite"))
        fixture_copy = os.path.join(tmp, "fixture_copy.sqlite")
        shutil.copyfile(fixture, fixture_copy)
        dbs = spider_db_ids()
        pg = fixtures.have_pg()
        pg_spider = [d for d in os.environ.get("T2S_TEST_PG_SPIDER_DBS", "").split()
                     if t2s.spider_db_path(d)] if pg else []
        databases = [{"name": "fixture", "url": "sqlite://" + fixture},
                     {"name": "fixture_again", "url": "sqlite://" + fixture},
                     {"name": "fixture_copy", "url": "sqlite://" + fixture_copy},
                     {"name": "missing_file", "url": "sqlite://" + os.path.join(tmp, "nope", "x.sqlite")}]
        databases += [{"name": d, "url": "sqlite://" + t2s.spider_db_path(d)} for d in dbs]
        pgfix = "t2s_catalog_%d" % PID
        if pg:
            closed = t2s.free_port()
            databases.append({"name": "pg_closed", "url": "postgresql://t2s_reader@127.0.0.1:%d/x" % closed})
            databases += [{"name": "pg_" + d, "url": pg_url(d)} for d in pg_spider]
            pgdbs.create(pgfix, pg_fixture_sql())
            databases.append({"name": "pgfix", "url": pg_url(pgfix)})
            databases.append({"name": "pgfix_sales", "url": pg_url(pgfix), "schemas": ["sales"]})
        config = {"catalog": {"sample_values": SAMPLE_VALUES, "connect_timeout_s": 3},
                  "databases": databases, "log": {"level": "warn", "access": False}}

        hashes_first = {}
        with fixtures.serving(tap, config, "service_exits_0_on_sigterm", timeout=120) as svc:
            tap.ok(True, "service_starts_with_unreachable_databases_registered")
            check_fixture(svc, fixture)

            # Unreachable databases: listed down with an error; GET is a 503 problem.
            listed = {d["name"]: d for d in svc.request("GET", "/databases").json["databases"]}
            down = ["missing_file"] + (["pg_closed"] if pg else [])
            for name in down:
                d = listed.get(name, {})
                tap.eq(d.get("status"), "down", "unreachable_%s_listed_down" % name)
                tap.ok(isinstance(d.get("error"), str) and d["error"] != "",
                       "unreachable_%s_listed_with_error_text" % name, diag=repr(d))
                r = svc.request("GET", "/databases/%s" % name)
                tap.ok(is_problem(r, 503, "unavailable"), "unreachable_%s_get_is_503_problem" % name,
                       diag=r.text[:300])
                tap.ok(isinstance(r.json, dict) and bool(r.json.get("detail")),
                       "unreachable_%s_problem_has_detail" % name, diag=r.text[:300])
            tap.eq(listed.get("fixture", {}).get("status"), "up", "reachable_fixture_listed_up_beside_down_ones")
            r = svc.request("POST", "/execute", json={"database": "fixture",
                                                      "sql": 'SELECT count(*) FROM "Customer"'})
            tap.ok(r.status == 200 and r.json["rows"] == [[40]],
                   "execute_on_reachable_database_works_beside_down_ones", diag=r.text[:300])
            r = svc.request("GET", "/databases/no_such_db_%d" % PID)
            tap.ok(is_problem(r, 404, "not-found"), "unknown_database_get_is_404_problem", diag=r.text[:300])

            # schema_hash: same file twice, a byte copy, a different schema.
            h = {d["name"]: d.get("schema_hash") for d in listed.values()}
            tap.ok(h.get("fixture") and h.get("fixture") == h.get("fixture_again"),
                   "schema_hash_identical_for_two_registrations_of_the_same_file")
            tap.eq(h.get("fixture_copy"), h.get("fixture"), "schema_hash_identical_for_a_copy_of_the_file")
            if dbs:
                tap.ok(len({h.get(d) for d in dbs}) == len(dbs), "schema_hash_differs_between_spider_schemas")
                check_spider_sqlite(svc, dbs)
            else:
                tap.skip("spider_sqlite_catalog", "no Spider data (../shared/datasets)")
            if pg:
                check_pg_fixture(svc)
                if pg_spider:
                    check_spider_pg(svc, pg_spider)
                    for d in pg_spider:
                        tap.ok(h.get("pg_" + d) and h.get("pg_" + d) != h.get(d),
                               "schema_hash_of_%s_differs_between_engines" % d)
                else:
                    tap.skip("pg_spider_catalog", "T2S_TEST_PG_SPIDER_DBS is empty")
            else:
                tap.skip("postgres_catalog", "no PostgreSQL (T2S_TEST_PG_PORT unset)")
            hashes_first = {d["name"]: d.get("schema_hash") for d in svc.request(
                "GET", "/databases").json["databases"]}

        # A restart yields the same hashes.
        with fixtures.serving(tap, config, "restarted_service_exits_0_on_sigterm", timeout=120) as svc:
            second = {d["name"]: d.get("schema_hash") for d in svc.request(
                "GET", "/databases").json["databases"]}
            same = {k: v for k, v in hashes_first.items() if v}
            tap.ok(same and all(second.get(k) == v for k, v in same.items()),
                   "schema_hash_stable_across_restarts",
                   diag=lambda: [k for k, v in same.items() if second.get(k) != v])
    except Exception:  # noqa: BLE001 - report and fail, then clean up
        fixtures.report_exception(tap)
    finally:
        pgdbs.drop_all()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
