#!/usr/bin/env python3
"""test_pg_schemas.py - table identity across PostgreSQL schemas (TAP).

A PostgreSQL database made here holds a table `t` three times, with
different columns and values: public.t (label), north.t (city) and south.t
(river, length_km), plus north.station (a foreign key to north.t) and a
table `v` in north and in south only.  The rule under test (README.md,
"Table names"): a table's API name is its bare name in PostgreSQL's public
schema (SQLite's main) and `schema.table` otherwise; that one name is how
every endpoint shows and accepts a table, and a bare name shared by tables
of two non-public schemas names neither.

  - GET /databases/{name}: six tables, north.t and south.t with their own
    columns, each under its qualified_name.
  - POST /link: every (table, column) in tables, columns and joins exists
    under that API name; a question about rivers links south.t.river; the
    station join is north.station -> north.t; a link model (stub) naming
    "south.t" gets south.t, naming "t" gets public.t, naming "v" gets
    no table from the model (listed in unknown_tables; vector linking
    answers, fallbacks [link_llm unparseable]).
  - POST /describe: "north.t", "south.t" and "t" are three tables with their
    own columns; "v" is 404; model text (stub, one answer per table) is kept
    per table in the state store and served from there without model calls.
  - PUT/GET /databases/{name}/descriptions: an override of south.t.river
    and one of public t are listed and stored under those names, apply to
    those tables only; "v" and a column of another schema's t are 400.
  - POST /evidence: values of north.t and south.t come back under their API
    names with probes that quote schema and table apart; an evidence model
    (stub) naming "south.t.river" gets south.t's value.
  - databases[].schemas is a boundary (issue 19): the same database served
    again as "atlas_north" with schemas ["north"] runs joins of north's
    tables, resolves bare names in north (t is north.t), reads
    information_schema.tables, and refuses south.t and public.t with a 403
    naming the schema; "atlas" (no schemas: every non-system schema) reads
    south.t, and its bare t is public.t; issue 30: with schemas ["north"],
    information_schema.tables/.columns and pg_tables list north only, and
    'south.t'::regclass, NULL::south.t, to_regclass and has_table_privilege
    are refused alike for existing and missing names.
  - /readyz warns on "atlas" and "atlas_north" (one role, t2s_reader, on
    the same server) that the role serves another configured database, and
    not on "atlas_own" (its own role); the warning does not degrade the
    service.
Skipped without T2S_TEST_PG_* or T2S_BIN.  Every service must exit 0.
"""

import json
import os
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
PID = os.getpid()
TMP = fixtures.scratch_dir("t2s-pg-schemas-")
STATE_PATH = os.path.join(TMP, "state.sqlite")
PGDB = "t2s_schemas_%d" % PID
OWN_ROLE = "t2s_schemas_own_%d" % PID
DB = "atlas"
QUIET = {"level": "warn", "access": False}
LINK_MODEL, DESC_MODEL, EV_MODEL = "link-m", "describe-m", "evidence-m"
INDEX_WAIT_S = 180

SETUP = """
CREATE SCHEMA north;
CREATE SCHEMA south;
CREATE TABLE public.t (id integer PRIMARY KEY, label text);
INSERT INTO public.t VALUES (1, 'plain'), (2, 'simple');
CREATE TABLE north.t (id integer PRIMARY KEY, city text);
INSERT INTO north.t VALUES (1, 'Tromsoe'), (2, 'Bergen'), (3, 'Trondheim');
CREATE TABLE south.t (id integer PRIMARY KEY, river text, length_km integer);
INSERT INTO south.t VALUES (1, 'Zambezi', 2574), (2, 'Limpopo', 1750), (3, 'Okavango', 1600);
CREATE TABLE north.station (station_id integer PRIMARY KEY, t_id integer REFERENCES north.t (id),
                            station_name text);
INSERT INTO north.station VALUES (1, 2, 'Bergen Central'), (2, 1, 'Tromsoe Harbour');
CREATE TABLE north.v (id integer, note text);
CREATE TABLE south.v (id integer, remark text);
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT USAGE ON SCHEMA public, north, south TO t2s_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public, north, south TO t2s_reader;
GRANT CONNECT ON DATABASE {DB} TO {OWN};
GRANT USAGE ON SCHEMA north TO {OWN};
GRANT SELECT ON ALL TABLES IN SCHEMA north TO {OWN};
ANALYZE;
"""
TABLES = {"t": ["id", "label"], "north.t": ["id", "city"], "south.t": ["id", "river", "length_km"],
          "north.station": ["station_id", "t_id", "station_name"], "north.v": ["id", "note"],
          "south.v": ["id", "remark"]}

DESC = {"north.t": {"table": "Each row is a northern town.", "columns": {"city": "Name of the town."}},
        "south.t": {"table": "Each row is a southern river.", "columns": {"river": "Name of the river."}},
        "t": {"table": "Each row is a plain label.", "columns": {"label": "The label text."}}}


# --------------------------------------------------------------------------- helpers

def stub_rules(stub, rules):
    r = t2s.http_request("127.0.0.1", stub.port, "POST", "/_stub/rules",
                         json_body={"rules": rules, "default_content": "[]"})
    if r.status != 200:
        raise RuntimeError("stub rules refused: %r" % r)


def chat_requests(stub, model):
    r = t2s.http_request("127.0.0.1", stub.port, "GET", "/_stub/requests")
    return [x for x in (r.json or {}).get("requests", []) if x.get("path") == "/v1/chat/completions" and
            isinstance(x.get("body"), dict) and x["body"].get("model") == model]


def model_cfg(stub, model):
    return {"base_url": stub.base_url, "model": model, "timeout_ms": 10000, "retries": 0}


def link(svc, question, mode):
    return svc.request("POST", "/link", json={"database": DB, "question": question, "mode": mode}, timeout=60)


def describe(svc, tables=None):
    body = {"database": DB}
    if tables is not None:
        body["tables"] = tables
    return svc.request("POST", "/describe", json=body, timeout=60)


def desc_tables(r):
    """{name: {"source", "description", "columns": {name: (source, description)}}} of a /describe answer."""
    out = {}
    for t in (r.json or {}).get("tables", []) if r.status == 200 else []:
        out[t["name"]] = {"source": t["source"], "description": t["description"],
                          "columns": {c["name"]: (c["source"], c["description"]) for c in t["columns"]}}
    return out


def put_descriptions(svc, entries):
    return svc.request("PUT", "/databases/%s/descriptions" % DB, json={"descriptions": entries})


def evidence(svc, question):
    return svc.request("POST", "/evidence", json={"database": DB, "question": question}, timeout=60)


def wait_index(svc):
    deadline = time.monotonic() + INDEX_WAIT_S
    while time.monotonic() < deadline:
        r = evidence(svc, "index readiness probe")
        if r.status != 200 or (r.json or {}).get("value_index") == "ready":
            return r.status == 200
        time.sleep(0.2)
    return False


def refs_exist(j):
    """Every (table, column) /link shows, as pairs that TABLES lacks (empty: all exist)."""
    refs = [(c.get("table"), c.get("column")) for c in j.get("columns", [])]
    for e in j.get("joins", []):
        refs += [(e["left"]["table"], e["left"]["column"]), (e["right"]["table"], e["right"]["column"])]
    bad = [r for r in refs if r[1] not in TABLES.get(r[0], [])]
    bad += [(t.get("name"), None) for t in j.get("tables", []) if t.get("name") not in TABLES]
    return bad


def state_rows(sql):
    con = sqlite3.connect("file:%s?mode=ro" % STATE_PATH, uri=True, timeout=30)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# --------------------------------------------------------------------------- checks

def check_catalog(svc):
    r = svc.request("GET", "/databases/%s" % DB)
    tables = {t.get("qualified_name"): t for t in (r.json or {}).get("tables", [])} if r.status == 200 else {}
    tap.eq(sorted(tables), sorted(TABLES), "catalog_lists_each_schema_table_under_its_api_name")
    tap.eq({k: [c["name"] for c in t["columns"]] for k, t in tables.items()}, TABLES,
           "catalog_each_t_has_its_own_columns")
    tap.eq([(tables.get(k) or {}).get("schema") for k in ("t", "north.t", "south.t")], ["public", "north", "south"],
           "catalog_keeps_the_schema_of_each_t")


def check_link_vector(svc):
    r = link(svc, "Which river is longer than 2000 km?", "vector")
    j = r.json or {}
    tap.ok(r.status == 200 and not refs_exist(j), "link_every_table_and_column_exists_under_its_api_name",
           diag=lambda: "%r\nbad: %r" % (r, refs_exist(j)))
    cols = {(c["table"], c["column"]) for c in j.get("columns", [])}
    tap.ok(("south.t", "river") in cols and "south.t" in [t["name"] for t in j.get("tables", [])],
           "link_river_question_links_south_t_river", diag=lambda: repr(j))
    r = link(svc, "Which station names are in the city of Bergen?", "vector")
    j = r.json or {}
    joins = {tuple(sorted([(e["left"]["table"], e["left"]["column"]), (e["right"]["table"], e["right"]["column"])]))
             for e in j.get("joins", [])}
    tap.ok(r.status == 200 and (("north.station", "t_id"), ("north.t", "id")) in joins and not refs_exist(j),
           "link_station_join_goes_to_north_t", diag=lambda: repr(j))


def check_link_model(svc, stub):
    for answer, want, name in ((["south.t"], ["south.t"], "link_model_naming_south_t_gets_south_t"),
                               (["t"], ["t"], "link_model_naming_t_gets_public_t")):
        stub_rules(stub, [{"match": {"model": LINK_MODEL}, "respond": {"content": json.dumps(answer)}}])
        r = link(svc, "List every label, city and river and note.", "llm")
        j = r.json or {}
        tap.ok(r.status == 200 and [t["name"] for t in j.get("tables", [])] == want and not refs_exist(j),
               name, diag=lambda: repr(r))
    # An ambiguous bare name names no table: the model's answer is unusable, vector linking answers.
    stub_rules(stub, [{"match": {"model": LINK_MODEL}, "respond": {"content": json.dumps(["v"])}}])
    r = link(svc, "List every label, city and river and note.", "llm")
    j = r.json or {}
    tap.ok(r.status == 200 and "v" in j.get("unknown_tables", []) and j.get("mode") == "vector" and
           [(f["stage"], f["reason"]) for f in j.get("fallbacks", [])] == [("link_llm", "unparseable")] and
           not any("link model" in x for t in j.get("tables", []) for x in t["reasons"]) and not refs_exist(j),
           "link_model_naming_an_ambiguous_bare_name_gets_no_table_and_falls_back_to_vector", diag=lambda: repr(r))
    reqs = chat_requests(stub, LINK_MODEL)
    prompt = "\n".join(str(m.get("content")) for m in (reqs[-1]["body"]["messages"] if reqs else []))
    tap.ok("- north.t(id, city)" in prompt and "- south.t(id, river, length_km)" in prompt and
           "- t(id, label)" in prompt and "- north.station.t_id = north.t.id" in prompt,
           "link_model_prompt_names_tables_and_keys_by_api_name", diag=lambda: prompt)


def check_describe(svc, stub):
    r = describe(svc, ["north.t", "south.t", "t"])
    d = desc_tables(r)
    tap.eq([t["name"] for t in (r.json or {}).get("tables", [])], ["north.t", "south.t", "t"],
           "describe_three_ts_are_three_tables_in_the_order_asked")
    tap.eq({k: sorted(v["columns"]) for k, v in d.items()},
           {"north.t": ["city", "id"], "south.t": ["id", "length_km", "river"], "t": ["id", "label"]},
           "describe_each_t_has_its_own_columns")
    tap.ok("Bergen" in d.get("north.t", {}).get("columns", {}).get("city", ("", ""))[1] and
           "Zambezi" in d.get("south.t", {}).get("columns", {}).get("river", ("", ""))[1],
           "describe_metadata_shows_each_tables_own_samples", diag=lambda: repr(d))
    r = describe(svc, ["v"])
    tap.ok(r.status == 404, "describe_ambiguous_bare_name_is_404", diag=lambda: repr(r))
    r = describe(svc, ["north.v"])
    tap.ok(r.status == 200 and list(desc_tables(r)) == ["north.v"], "describe_qualified_name_of_v_is_found",
           diag=lambda: repr(r))

    rules = [{"match": {"model": DESC_MODEL, "regex": r"\nTable: %s[ \n]" % name.replace(".", r"\.")},
              "respond": {"content": json.dumps(answer)}} for name, answer in DESC.items()]
    stub_rules(stub, rules + [{"match": {"model": DESC_MODEL}, "respond": {"content": "not JSON"}}])
    r = describe(svc, ["north.t", "south.t", "t"])
    d = desc_tables(r)
    want = {k: (v["table"], v["columns"]) for k, v in DESC.items()}
    got = {k: (v["description"], {c: text for c, (src, text) in v["columns"].items() if src == "model"})
           for k, v in d.items()}
    tap.eq(got, want, "describe_model_text_is_each_tables_own")
    stub_rules(stub, [{"match": {"model": DESC_MODEL}, "respond": {"content": "garbage"}}])
    before = len(chat_requests(stub, DESC_MODEL))
    r = describe(svc, ["south.t", "north.t", "t"])
    d = desc_tables(r)
    got = {k: (v["description"], {c: text for c, (src, text) in v["columns"].items() if src == "model"})
           for k, v in d.items()}
    tap.ok(r.status == 200 and got == want and r.json.get("model_calls") == 0 and
           len(chat_requests(stub, DESC_MODEL)) == before and r.json.get("cache_hits") == 3,
           "describe_model_text_is_served_per_table_from_the_state_store", diag=lambda: repr(r.json))
    rows = state_rows("SELECT DISTINCT table_name FROM description_cache WHERE db_name = '%s'" % DB)
    tap.eq(sorted(x[0] for x in rows), ["north.t", "south.t", "t"], "state_store_keys_descriptions_by_api_name")


def check_overrides(svc):
    r = put_descriptions(svc, [{"table": "south.t", "column": "river", "text": "Name of the river, as mapped."},
                               {"table": "t", "text": "Labels of the public schema."}])
    got = sorted(((o["table"], o["column"]) for o in (r.json or {}).get("overrides", [])), key=lambda x: (x[0], x[1] or ""))
    tap.ok(r.status == 200 and got == [("south.t", "river"), ("t", None)], "overrides_put_lists_api_names",
           diag=lambda: repr(r))
    r = svc.request("GET", "/databases/%s/descriptions" % DB)
    got = sorted(((o["table"], o["column"]) for o in (r.json or {}).get("overrides", [])), key=lambda x: (x[0], x[1] or ""))
    tap.eq(got, [("south.t", "river"), ("t", None)], "overrides_get_lists_api_names")
    rows = state_rows("SELECT table_name, column_name FROM description_overrides WHERE db_name = '%s' "
                      "ORDER BY 1, 2" % DB)
    tap.eq(rows, [("south.t", "river"), ("t", "")], "state_store_keys_overrides_by_api_name")
    d = desc_tables(describe(svc))
    src = {k: (v["source"], {c: s for c, (s, _) in v["columns"].items()}) for k, v in d.items()}
    tap.ok(src.get("south.t", ("", {}))[1].get("river") == "override" and src.get("t", ("",))[0] == "override" and
           src.get("north.t", ("", {}))[0] != "override" and
           all(s != "override" for s in src.get("north.t", ("", {}))[1].values()) and
           src.get("south.t", ("",))[0] != "override",
           "overrides_apply_to_the_named_table_only", diag=lambda: repr(src))
    for entry, name in (({"table": "v", "text": "x"}, "overrides_ambiguous_bare_name_is_400"),
                        ({"table": "north.t", "column": "river", "text": "x"},
                         "overrides_column_of_another_schemas_t_is_400")):
        r = put_descriptions(svc, [entry])
        tap.ok(r.status == 400, name, diag=lambda: repr(r))


def check_evidence(svc, stub):
    if not wait_index(svc):
        tap.ok(False, "evidence_value_index_becomes_ready")
        return
    r = evidence(svc, "Is the Zambezi longer than anything near Bergen?")
    vals = {(v["table"], v["column"], v["value"]): v for v in (r.json or {}).get("values", [])}
    tap.ok(("south.t", "river", "Zambezi") in vals and ("north.t", "city", "Bergen") in vals,
           "evidence_values_name_their_schema_table", diag=lambda: repr(r))
    sql = (vals.get(("south.t", "river", "Zambezi")) or {}).get("probe", {}).get("sql", "")
    tap.ok('"south"."t"' in sql or "south.t" in sql.replace('"', ""), "evidence_probe_reads_south_t",
           diag=lambda: sql)
    stub_rules(stub, [{"match": {"model": EV_MODEL}, "respond": {"content": json.dumps(
        {"schema-value-pair": [{"schema": "south.t.river", "value": "limpopo"},
                               {"schema": "north.t.city", "value": "trondheim"},
                               {"schema": "v.note", "value": "x"}], "knowledge": []})}}])
    r = evidence(svc, "How long is that river?")
    got = {(v["table"], v["column"], v["value"], v["source"]) for v in (r.json or {}).get("values", [])}
    tap.ok(("south.t", "river", "Limpopo", "model") in got and ("north.t", "city", "Trondheim", "model") in got,
           "evidence_model_pairs_resolve_qualified_names", diag=lambda: repr(r))
    reqs = chat_requests(stub, EV_MODEL)
    prompt = "\n".join(str(m.get("content")) for m in (reqs[-1]["body"]["messages"] if reqs else []))
    tap.ok("- south.t(id, river, length_km)" in prompt and "- t(id, label)" in prompt,
           "evidence_model_prompt_names_tables_by_api_name", diag=lambda: prompt)


def check_schema_boundary(svc):
    def run(db, sql):
        r = fixtures.execute(svc, db, sql)
        return r, (r.json or {}).get("rows") if r.status == 200 else r.text[:300]

    r, rows = run("atlas_north", "SELECT s.station_name, t.city FROM north.station s JOIN north.t t "
                                 "ON t.id = s.t_id ORDER BY 1")
    tap.eq(rows, [["Bergen Central", "Bergen"], ["Tromsoe Harbour", "Tromsoe"]],
           "schemas_boundary_joins_of_the_configured_schema_run")
    r, rows = run("atlas_north", "SELECT count(*), (SELECT count(*) FROM station) FROM t")
    tap.eq(rows, [[3, 2]], "schemas_boundary_bare_names_resolve_in_the_configured_schemas")
    r, rows = run("atlas_north", "SELECT table_schema || '.' || table_name FROM information_schema.tables "
                                 "WHERE table_schema = 'north' ORDER BY 1")
    tap.eq(rows, [["north.station"], ["north.t"], ["north.v"]], "schemas_boundary_information_schema_tables_reads")
    for sql, schema, name in (("SELECT river FROM south.t", "south", "another_schema"),
                              ("SELECT label FROM public.t", "public", "public_when_not_configured")):
        r, _ = run("atlas_north", sql)
        detail = (r.json or {}).get("detail", "")
        tap.ok(fixtures.is_problem(r, 403, "sql-rejected") and
               ("schema %s is not one of this database's schemas (north)" % schema) in detail,
               "schemas_boundary_refuses_%s_with_403_naming_it" % name, diag=r.text[:300])
    r, rows = run(DB, "SELECT (SELECT count(*) FROM south.t), (SELECT count(*) FROM t)")
    tap.eq(rows, [[3, 2]], "without_configured_schemas_every_schema_reads_and_bare_t_is_public_t")
    # Issue 30: the catalogs list the configured schemas only, and names of others are not reachable.
    for sql, name in (("SELECT DISTINCT table_schema FROM information_schema.tables ORDER BY 1", "tables"),
                      ("SELECT DISTINCT c.table_schema FROM information_schema.columns AS c ORDER BY 1", "columns"),
                      ("SELECT DISTINCT schemaname FROM pg_tables ORDER BY 1", "pg_tables"),
                      ("SELECT DISTINCT p.schemaname FROM pg_catalog.pg_tables p, information_schema.tables t "
                       "WHERE t.table_name = p.tablename ORDER BY 1", "joined")):
        r, rows = run("atlas_north", sql)
        tap.eq(rows, [["north"]], "schemas_boundary_catalog_%s_lists_only_the_configured_schemas" % name)
    r, rows = run("atlas_north", "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'south'")
    tap.eq(rows, [[0]], "schemas_boundary_catalog_columns_of_another_schema_are_not_listed")
    for sql, name in (("SELECT 'south.t'::regclass", "regclass_of_an_existing_table"),
                      ("SELECT 'nowhere.t'::regclass", "regclass_of_a_missing_table"),
                      ("SELECT NULL::south.t", "row_type_of_an_existing_table"),
                      ("SELECT NULL::nowhere.t", "row_type_of_a_missing_table"),
                      ("SELECT to_regclass('south.t')", "to_regclass"),
                      ("SELECT has_table_privilege('south.t', 'select')", "has_table_privilege")):
        r, _ = run("atlas_north", sql)
        tap.ok(fixtures.is_problem(r, 403, "sql-rejected"), "schemas_boundary_refuses_%s" % name, diag=r.text[:300])
    # existing or not, the answer is the same: no oracle
    a, _ = run("atlas_north", "SELECT NULL::south.t")
    b, _ = run("atlas_north", "SELECT NULL::nowhere.t")
    tap.eq((a.json or {}).get("detail", "").replace("south", "X"), (b.json or {}).get("detail", "").replace("nowhere", "X"),
           "schemas_boundary_refusal_is_the_same_for_an_existing_and_a_missing_schema")
    r, rows = run(DB, "SELECT DISTINCT schemaname FROM pg_tables WHERE schemaname IN ('north', 'south') ORDER BY 1")
    tap.eq(rows, [["north"], ["south"]], "without_configured_schemas_the_catalogs_are_not_narrowed")


def check_shared_role_warning(svc):
    r = svc.request("GET", "/readyz")
    checks = ((r.json or {}).get("checks") or {}).get("databases", {})
    for db in (DB, "atlas_north"):
        warning = (checks.get(db) or {}).get("warning", "")
        tap.ok(r.status == 200 and checks.get(db, {}).get("status") == "up" and
               'role "t2s_reader" also reads 1 other configured database' in warning,
               "readyz_warns_that_%s_shares_its_role" % db, diag=r.text[:600])
    tap.ok("warning" not in (checks.get("atlas_own") or {}) and (checks.get("atlas_own") or {}).get("status") == "up",
           "readyz_no_warning_for_a_database_with_its_own_role", diag=r.text[:600])
    tap.eq((r.json or {}).get("status"), "ready", "readyz_shared_role_is_a_warning_not_a_failure")


def main():
    if not t2s.server_binary():
        tap.skip("pg_schemas", "T2S_BIN is not set")
        return tap.done()
    if not fixtures.have_pg():
        tap.skip("pg_schemas", "no PostgreSQL (T2S_TEST_PG_PORT unset)")
        return tap.done()
    pg = fixtures.PgDatabases(tap)
    pg.create_role(OWN_ROLE)
    pg.create(PGDB, SETUP.replace("{OWN}", t2s.qi(OWN_ROLE)))
    stub = fixtures.ModelStub()
    try:
        cfg = {"databases": [{"name": DB, "url": t2s.pg_url(PGDB)},
                             {"name": "atlas_north", "url": t2s.pg_url(PGDB), "schemas": ["north"]},
                             {"name": "atlas_own", "url": t2s.pg_url(PGDB, OWN_ROLE), "schemas": ["north"]}],
               "state": {"url": "sqlite://" + STATE_PATH}, "auth": {"allow_anonymous_writes": True},
               "log": QUIET, "models": {"link": model_cfg(stub, LINK_MODEL), "describe": model_cfg(stub, DESC_MODEL),
                                        "evidence": model_cfg(stub, EV_MODEL)}}
        with fixtures.serving(tap, cfg, "pg_schemas_service_exits_0_on_sigterm", timeout=120) as svc:
            for check in (lambda: check_catalog(svc), lambda: check_link_vector(svc),
                          lambda: check_link_model(svc, stub), lambda: check_describe(svc, stub),
                          lambda: check_overrides(svc), lambda: check_evidence(svc, stub),
                          lambda: check_schema_boundary(svc), lambda: check_shared_role_warning(svc)):
                try:
                    check()
                except Exception:  # noqa: BLE001 - report, then go on with the next check
                    fixtures.report_exception(tap, svc)
    finally:
        stub.close()
        pg.drop_all()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
