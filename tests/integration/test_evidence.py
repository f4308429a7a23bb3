#!/usr/bin/env python3
"""test_evidence.py - POST /evidence, POST /describe, the examples store and
description overrides against the real binary and real databases (TAP).

A SQLite fixture written here (singer: names with quotes and SQL text,
countries, ages, birth dates, years stored as text, e-mails, URLs, free-text
bios, UUID tickets, an id-named text column; flight: "Aberdeen" both as an
origin and as a destination; product: a text primary key of codes) runs
without datasets; the same data is loaded into a PostgreSQL database this
test creates (skipped without T2S_TEST_PG_*). Spider's concert_singer and
world_1 run when ../shared/datasets is present (and in PostgreSQL when listed
in T2S_TEST_PG_SPIDER_DBS). The state store is a SQLite file in a scratch
directory, named explicitly so restarts share it. Model servers are
tests/stub/model_stub.py.

  - /evidence: the value index builds in the background (polled until
    "value_index" is "ready"; every answer before is 200 with partial true);
    a differently-cased mention comes back with its stored spelling
    ("france" -> singer.Country 'France'); multi-word values; a value held
    by two columns is ranked by the question's words (origin/destination,
    world_1's Continent/Region); numbers and dates give range items naming
    the column, only when inside its range; numbers stored as text match
    exactly (2015 does not give '2014'); synonyms ("youngest" -> Age); every
    value carries its probe (SQL with a placeholder, the bound parameter,
    rows holding the value); quotes and SQL text in questions and in stored
    values are harmless (database checksums unchanged); id-like, e-mail,
    URL and free-text columns are not matched (and are, once the skip rules
    are turned off: the rules are what excludes them).
  - index bounds on a generated table (50k distinct values):
    values.max_values_per_column keeps the most frequent values only;
    values.max_bytes truncates the index; a request right after a refresh
    that changed the schema is answered partial while the new index builds.
  - examples: POST (SQL validated: invalid 400, writes 403, 201 with id),
    GET (paged, total), DELETE (404 when absent); /evidence returns the most
    similar ones with scores, best first, at most evidence.max_examples;
    they survive a restart.
  - evidence model (stub): schema-value pairs are probed and come back with
    the stored case and source "model", knowledge becomes "domain" items;
    malformed answers leave /evidence 200 with model_calls counted.
  - /describe: metadata descriptions for all tables or a subset; unknown
    table 404; describe model (stub) scripted per table gives source
    "model", a malformed answer falls back to metadata with the error
    listed; model text is cached (Redis when configured; the state store
    across a restart); PUT /databases/{name}/descriptions overrides win
    (source "override") and survive a refresh and a restart; text null
    removes one; unknown table/column 400.
  - errors: missing and unknown fields 400, unknown database 404 on every
    new endpoint.
Every service is stopped with SIGTERM and must exit 0.
"""

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
PID = os.getpid()
TMP = fixtures.scratch_dir("t2s-evidence-")
STATE_URL = "sqlite://" + os.path.join(TMP, "state.sqlite")
PGDB = "t2s_evidence_%d" % PID
QUIET = {"level": "warn", "access": False}
INDEX_WAIT_S = 180  # bounded wait for a value index (sanitizer builds are slow)

# --------------------------------------------------------------------------- fixture data

BIOS = ["%s grew up by the sea and began singing in a church choir at the age of %d years." % (n, 7 + i)
        for i, n in enumerate(["Joe", "Rose", "Justin", "Sinead", "Tribal", "John", "Tim", "Bobby"])]
UUIDS = ["3f2b8c1e-%04d-4a5b-9c7d-1e2f3a4b5c6d" % (1000 + i) for i in range(8)]
BOBBY = "Little Bobby'); DROP TABLE singer; --"
SINGERS = [
    (1, "Joe Sharp", "France", 52, "1972-03-14", "2014", "joe.sharp@example.com",
     "https://example.org/artists/joe-sharp", BIOS[0], UUIDS[0], "Marigold"),
    (2, "Rose White", "France", 41, "1983-07-02", "2016", "rose.white@example.com",
     "https://example.org/artists/rose-white", BIOS[1], UUIDS[1], "Bluebell"),
    (3, "Justin Brown", "United States", 29, "1995-11-30", "2014", "justin.brown@example.com",
     "https://example.org/artists/justin-brown", BIOS[2], UUIDS[2], "Snowdrop"),
    (4, "Sinead O'Brien", "Ireland", 33, "1991-01-20", "1999", "sinead@example.ie",
     "https://example.org/artists/sinead", BIOS[3], UUIDS[3], "Primrose"),
    (5, "Tribal King", "France", 68, "1956-05-05", "1999", "tribal.king@example.com",
     "https://example.org/artists/tribal-king", BIOS[4], UUIDS[4], "Daffodil"),
    (6, "John Nizinik", "Netherlands", 43, "1981-09-09", "2016", "john@example.nl",
     "https://example.org/artists/john-nizinik", BIOS[5], UUIDS[5], "Crocus"),
    (7, "Timbaland", "United States", 19, "2005-02-28", "2014", "timbaland@example.com",
     "https://example.org/artists/timbaland", BIOS[6], UUIDS[6], "Foxglove"),
    (8, BOBBY, "Iceland", 37, "1987-04-01", "2016", "bobby@example.is",
     "https://example.org/artists/bobby", BIOS[7], UUIDS[7], "Heather"),
]
FLIGHTS = [
    (1, "Aberdeen", "Paris", 120.0, "2023-04-01"), (2, "Glasgow", "Aberdeen", 80.5, "2023-04-02"),
    (3, "Aberdeen", "Boston", 420.0, "2023-05-10"), (4, "Boston", "Aberdeen", 399.0, "2023-06-11"),
    (5, "Denver", "Glasgow", 350.0, "2023-07-01"), (6, "Paris", "Denver", 510.0, "2023-08-15"),
]
PRODUCTS = [("A1034", "Guitar strings"), ("B2201", "Drum sticks"), ("C3317", "Piano stool"),
            ("D4410", "Violin bow")]

SQLITE_DDL = """
CREATE TABLE singer (Singer_ID INTEGER PRIMARY KEY, Name TEXT, Country TEXT, Age INTEGER,
                     Birth_Date DATE, Debut_Year TEXT, Email TEXT, Homepage TEXT, Bio TEXT,
                     Ticket TEXT, Ref_Id TEXT);
CREATE TABLE flight (flight_no INTEGER PRIMARY KEY, origin TEXT, destination TEXT, price REAL,
                     departure DATE);
CREATE TABLE product (Sku TEXT PRIMARY KEY, title TEXT);
"""
PG_DDL = """
CREATE TABLE singer ("Singer_ID" integer PRIMARY KEY, "Name" text, "Country" text, "Age" integer,
                     "Birth_Date" date, "Debut_Year" text, "Email" text, "Homepage" text, "Bio" text,
                     "Ticket" text, "Ref_Id" text);
CREATE TABLE flight (flight_no integer PRIMARY KEY, origin text, destination text,
                     price double precision, departure date);
CREATE TABLE product ("Sku" text PRIMARY KEY, title text);
"""
FIXTURE_TABLES = ["singer", "flight", "product"]


def lit(v):
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("'", "''") + "'"


def pg_inserts():
    out = []
    for table, rows in (("singer", SINGERS), ("flight", FLIGHTS), ("product", PRODUCTS)):
        out.append("INSERT INTO %s VALUES %s;" % (table, ", ".join(
            "(" + ", ".join(lit(v) for v in r) + ")" for r in rows)))
    return "\n".join(out)


def make_sqlite_fixture(name):
    path = os.path.join(TMP, name + ".sqlite")
    return fixtures.write_sqlite(path, SQLITE_DDL, {"singer": SINGERS, "flight": FLIGHTS,
                                                    "product": PRODUCTS})


def make_big_table(path, rows=50000, extra_columns=0):
    """town: 100 'Hub XY Central' names each 30 times in the first 3000
    rows, then 'Rare Town N' once each (rows - 3000 distinct); extra_columns
    more text columns of distinct values make the build take longer."""
    cols = "".join(", c%d TEXT" % i for i in range(extra_columns))
    sel = "".join(", 'w%d ' || ((x * %d) %% %d) || ' lane'" % (i, 7 + i, rows) for i in range(extra_columns))
    return fixtures.write_sqlite(path, (
        "CREATE TABLE town (town_no INTEGER PRIMARY KEY, name TEXT%s);"
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) "
        "INSERT INTO town SELECT x, CASE WHEN x <= 3000 THEN 'Hub ' || char(65 + (x %% 100) %% 26) || "
        "char(65 + (x %% 100) / 26) || ' Central' ELSE 'Rare Town ' || x END%s FROM c;") % (cols, rows, sel))


# --------------------------------------------------------------------------- helpers

def evidence(svc, db, question, timeout=60):
    return svc.request("POST", "/evidence", json={"database": db, "question": question}, timeout=timeout)


def describe(svc, db, tables=None, timeout=60):
    body = {"database": db}
    if tables is not None:
        body["tables"] = tables
    return svc.request("POST", "/describe", json=body, timeout=timeout)


def wait_index(svc, db, name, timeout=INDEX_WAIT_S):
    """Polls /evidence until value_index is "ready"; records one check that
    it got there and that every earlier answer was 200 with partial true.
    Returns the ready response or None."""
    deadline = time.monotonic() + timeout
    bad = []
    last = None
    while time.monotonic() < deadline:
        r = evidence(svc, db, "index readiness probe")
        last = r
        if r.status != 200 or not isinstance(r.json, dict):
            bad.append(repr(r))
            break
        state = r.json.get("value_index")
        if state == "ready":
            if r.json.get("partial") is not False:
                bad.append("ready but partial %r" % r.json.get("partial"))
            break
        if r.json.get("partial") is not True or not str(state).startswith("building"):
            bad.append("state %r partial %r" % (state, r.json.get("partial")))
            break
        time.sleep(0.05)
    ok = (last is not None and last.status == 200 and isinstance(last.json, dict) and
          last.json.get("value_index") == "ready" and not bad)
    tap.ok(ok, name, diag=lambda: "%s; last: %r" % ("; ".join(bad), last))
    return last if ok else None


def vals(r):
    """[(table, column, value)] of an /evidence response (empty when not 200)."""
    if r.status != 200 or not isinstance(r.json, dict):
        return []
    return [(v.get("table"), v.get("column"), v.get("value")) for v in r.json.get("values", [])]


def items(r, kind=None, source=None):
    if r.status != 200 or not isinstance(r.json, dict):
        return []
    return [e for e in r.json.get("evidence", [])
            if (kind is None or e.get("kind") == kind) and (source is None or e.get("source") == source)]


def find_value(r, table, column, value=None):
    for v in (r.json or {}).get("values", []) if r.status == 200 else []:
        if v.get("table") == table and v.get("column") == column and (value is None or v.get("value") == value):
            return v
    return None


def probe_faults(v, placeholder):
    """What is wrong with one value's provenance: its probe must hold SQL
    with the placeholder, the bound parameter apart (not spliced into the
    text), and rows that contain the value."""
    p = v.get("probe") or {}
    faults = []
    sql = p.get("sql")
    if not isinstance(sql, str) or placeholder not in sql:
        faults.append("probe sql %r lacks %s" % (sql, placeholder))
    params = p.get("params")
    if not (isinstance(params, list) and len(params) == 1 and isinstance(params[0], str) and params[0]):
        faults.append("params %r" % (params,))
    elif isinstance(sql, str) and len(params[0].strip("%")) >= 3 and params[0].strip("%") in sql \
            and params[0].strip("%") not in (v.get("table") or "") + (v.get("column") or ""):
        faults.append("parameter %r spliced into sql %r" % (params[0], sql))
    if not isinstance(p.get("rows"), list) or v.get("value") not in p.get("rows"):
        faults.append("rows %r lack value %r" % (p.get("rows"), v.get("value")))
    if not isinstance(v.get("score"), (int, float)) or not 0 < v["score"] <= 1:
        faults.append("score %r" % v.get("score"))
    if not isinstance(v.get("matched"), str) or not v["matched"]:
        faults.append("matched %r" % v.get("matched"))
    return faults


def all_probe_faults(r, placeholder):
    faults = []
    for v in (r.json or {}).get("values", []):
        faults += ["%s.%s=%r: %s" % (v.get("table"), v.get("column"), v.get("value"), f)
                   for f in probe_faults(v, placeholder)]
    return faults


def first_column_for(r, value):
    """The column of the first value equal to value, or None."""
    for t, c, v in vals(r):
        if v == value:
            return (t, c)
    return None


def metric_sum(svc, name, *labels):
    """Sum of the samples of metric `name` whose label set contains every
    one of labels (e.g. 'stage="evidence"')."""
    total = 0.0
    for line in svc.request("GET", "/metrics").text.splitlines():
        if line.startswith(name + "{") and all(l in line for l in labels):
            total += float(line.rsplit(" ", 1)[1])
    return total


def stub_rules(stub, rules, default_content="stub reply"):
    r = t2s.http_request("127.0.0.1", stub.port, "POST", "/_stub/rules",
                         json_body={"rules": rules, "default_content": default_content})
    if r.status != 200:
        raise RuntimeError("stub rules refused: %r" % r)


def stub_requests(stub):
    r = t2s.http_request("127.0.0.1", stub.port, "GET", "/_stub/requests")
    return (r.json or {}).get("requests", [])


def chat_text(req):
    body = req.get("body") if isinstance(req.get("body"), dict) else {}
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, dict))


def model_cfg(stub, model):
    return {"base_url": stub.base_url, "model": model, "timeout_ms": 10000, "retries": 0}


def desc_table(r, name):
    for t in (r.json or {}).get("tables", []) if r.status == 200 else []:
        if t.get("name") == name:
            return t
    return None


def desc_column(r, table, column):
    t = desc_table(r, table)
    for c in (t or {}).get("columns", []):
        if c.get("name") == column:
            return c
    return None


# --------------------------------------------------------------------------- /evidence on the fixture

def check_fixture_evidence(svc, db, engine, placeholder, checksum):
    """The value checks shared by the SQLite and PostgreSQL fixtures."""
    p = "%s_fixture" % engine
    before = checksum()
    if wait_index(svc, db, "%s_value_index_becomes_ready_and_answers_before_are_partial" % p) is None:
        return

    r = evidence(svc, db, "How many singers from france are there?")
    tap.ok(("singer", "Country", "France") in vals(r),
           "%s_lowercase_mention_gives_stored_case_singer_country_France" % p, diag=lambda: repr(r))
    tap.ok(["singer.Country = 'France'" == e["text"] for e in items(r, "value", "value_index")].count(True) == 1,
           "%s_value_item_spells_singer_country_equals_France" % p, diag=lambda: repr(items(r)))
    faults = all_probe_faults(r, placeholder)
    tap.ok(vals(r) and not faults, "%s_every_value_carries_its_parameterised_probe_and_rows" % p,
           diag=lambda: "; ".join(faults) or repr(r))
    v = find_value(r, "singer", "Country", "France")
    tap.ok(v is not None and v["probe"]["rows"] == ["France"] and v["matched"].lower() == "france",
           "%s_france_probe_rows_are_exactly_the_stored_value" % p, diag=lambda: repr(v))

    r = evidence(svc, db, "list the singers from united states")
    tap.ok(("singer", "Country", "United States") in vals(r), "%s_multi_word_value_united_states" % p,
           diag=lambda: repr(r))
    tap.ok(not all_probe_faults(r, placeholder), "%s_multi_word_value_probe_is_parameterised" % p,
           diag=lambda: "; ".join(all_probe_faults(r, placeholder)))

    r1 = evidence(svc, db, "Which flights have destination aberdeen?")
    r2 = evidence(svc, db, "Which flights have origin aberdeen?")
    tap.ok(first_column_for(r1, "Aberdeen") == ("flight", "destination") and
           ("flight", "origin", "Aberdeen") in vals(r1),
           "%s_value_in_two_columns_ranks_destination_first_when_asked_for_destination" % p,
           diag=lambda: repr(vals(r1)))
    tap.ok(first_column_for(r2, "Aberdeen") == ("flight", "origin"),
           "%s_value_in_two_columns_ranks_origin_first_when_asked_for_origin" % p,
           diag=lambda: repr(vals(r2)))

    r = evidence(svc, db, "singers older than 45")
    rng = [e["text"] for e in items(r, "value", "range")]
    tap.ok(any("singer.Age" in t and "45" in t for t in rng),
           "%s_number_in_range_gives_range_item_naming_singer_age" % p, diag=lambda: repr(items(r)))
    r = evidence(svc, db, "singers older than 900")
    tap.ok(r.status == 200 and not any("singer.Age" in e["text"] for e in items(r, "value", "range")),
           "%s_number_outside_every_age_gives_no_age_range_item" % p, diag=lambda: repr(items(r)))
    r = evidence(svc, db, "singers born after 1985-06-01")
    tap.ok(any("singer.Birth_Date" in e["text"] and "1985-06-01" in e["text"] for e in items(r, "value", "range")),
           "%s_date_in_range_gives_range_item_naming_singer_birth_date" % p, diag=lambda: repr(items(r)))
    r = evidence(svc, db, "singers born after 2050-01-01")
    tap.ok(r.status == 200 and not any("Birth_Date" in e["text"] for e in items(r, "value", "range")),
           "%s_date_outside_the_range_gives_no_birth_date_range_item" % p, diag=lambda: repr(items(r)))
    r = evidence(svc, db, "flights departing in May 2023")
    tap.ok(any("flight.departure" in e["text"] for e in items(r, "value", "range")),
           "%s_month_name_and_year_give_range_item_naming_flight_departure" % p, diag=lambda: repr(items(r)))
    r = evidence(svc, db, "flights departing in 2023-05")
    tap.ok(any("flight.departure" in e["text"] and "2023-05" in e["text"] for e in items(r, "value", "range")),
           "%s_iso_month_gives_range_item_naming_flight_departure" % p, diag=lambda: repr(items(r)))
    r = evidence(svc, db, "flights departing in 1999-05")
    tap.ok(r.status == 200 and not any("flight.departure" in e["text"] for e in items(r, "value", "range")),
           "%s_iso_month_outside_the_range_gives_no_departure_item" % p, diag=lambda: repr(items(r)))

    r = evidence(svc, db, "singers whose debut was in 2014")
    tap.ok(("singer", "Debut_Year", "2014") in vals(r), "%s_number_stored_as_text_matches_exactly" % p,
           diag=lambda: repr(r))
    r = evidence(svc, db, "singers whose debut was in 2015")
    tap.ok(r.status == 200 and not any(c == "Debut_Year" or v in ("2014", "2016") for _, c, v in vals(r)),
           "%s_number_stored_as_text_is_not_matched_fuzzily_2015_is_not_2014" % p, diag=lambda: repr(vals(r)))

    r = evidence(svc, db, "Who is the youngest singer?")
    tap.ok(any("youngest" in e["text"] and "singer.Age" in e["text"] for e in items(r, "synonym")),
           "%s_synonym_item_youngest_refers_to_singer_age" % p, diag=lambda: repr(items(r)))

    r = evidence(svc, db, "songs by sinead o'brien")
    tap.ok(("singer", "Name", "Sinead O'Brien") in vals(r) and
           "singer.Name = 'Sinead O''Brien'" in [e["text"] for e in items(r, "value")],
           "%s_value_with_quote_found_and_its_item_doubles_the_quote" % p, diag=lambda: repr(r))
    r = evidence(svc, db, "Who is %s" % BOBBY)
    tap.ok(("singer", "Name", BOBBY) in vals(r) and not all_probe_faults(r, placeholder),
           "%s_stored_value_holding_sql_text_comes_back_verbatim_through_a_bound_probe" % p,
           diag=lambda: repr(r))
    hostile = ["Show singers named x' OR 1=1; DROP TABLE singer; -- and \"Joe\" Sharp's songs",
               "'; DELETE FROM flight; SELECT '", "france') OR ('1'='1", "\"Country\" = 'France' --",
               "Robert'); DROP TABLE flight;--", "%' OR '%'='", "\\'; UPDATE singer SET Age = 0; --"]
    statuses = [evidence(svc, db, q).status for q in hostile]
    tap.eq(statuses, [200] * len(hostile), "%s_questions_with_quotes_and_sql_text_answer_200" % p)
    after = checksum()
    tap.ok(before == after, "%s_database_unchanged_after_hostile_questions" % p,
           diag=lambda: "before %s after %s" % (before, after))

    skipped = [("Email", "Who has the email joe.sharp@example.com?"),
               ("Homepage", "Whose homepage is https://example.org/artists/joe-sharp ?"),
               ("Bio", "Whose bio is \"%s\"" % BIOS[2]),
               ("Ticket", "Who holds ticket %s?" % UUIDS[3]),
               ("Ref_Id", "Whose ref is marigold?"),
               ("Sku", "What is product A1034?")]
    for col, q in skipped:
        r = evidence(svc, db, q)
        tap.ok(r.status == 200 and not any(c == col for _, c, _ in vals(r)),
               "%s_skipped_column_%s_is_not_matched" % (p, col.lower()), diag=lambda: repr(vals(r)))
    return skipped


def check_skip_rules_off(engine, db_entry, skipped):
    """With every skip rule off, the same questions do find those columns:
    the rules (not the lookups) are what excluded them."""
    cfg = {"databases": [db_entry], "state": {"url": STATE_URL}, "log": QUIET,
           "values": {"skip_ids": False, "skip_urls_emails": False, "skip_long_text": False}}
    p = "%s_skip_rules_off" % engine
    with fixtures.serving(tap, cfg, "%s_service_exits_0_on_sigterm" % p, timeout=120) as svc:
        if wait_index(svc, db_entry["name"], "%s_value_index_ready" % p) is None:
            return
        for col, q in skipped:
            r = evidence(svc, db_entry["name"], q)
            tap.ok(any(c == col for _, c, _ in vals(r)), "%s_column_%s_is_matched" % (p, col.lower()),
                   diag=lambda: repr(vals(r)))


# --------------------------------------------------------------------------- Spider

def check_spider_evidence(svc, prefix, cs, world, placeholder):
    if cs:
        if wait_index(svc, cs, "%s_concert_singer_value_index_ready" % prefix):
            r = evidence(svc, cs, "How many singers are from france?")
            tap.ok(("singer", "Country", "France") in vals(r), "%s_concert_singer_france_stored_case" % prefix,
                   diag=lambda: repr(vals(r)))
            tap.ok(not all_probe_faults(r, placeholder), "%s_concert_singer_probes_parameterised" % prefix,
                   diag=lambda: "; ".join(all_probe_faults(r, placeholder)))
            r = evidence(svc, cs, "Show the singers from the united states")
            tap.ok(("singer", "Country", "United States") in vals(r),
                   "%s_concert_singer_multi_word_united_states" % prefix, diag=lambda: repr(vals(r)))
            r = evidence(svc, cs, "concerts held in 2014")
            tap.ok(("concert", "Year", "2014") in vals(r), "%s_concert_singer_year_stored_as_text_2014" % prefix,
                   diag=lambda: repr(vals(r)))
            r = evidence(svc, cs, "concerts held in 2012")
            tap.ok(r.status == 200 and not any(c == "Year" for _, c, _ in vals(r)),
                   "%s_concert_singer_absent_year_2012_matches_no_year" % prefix, diag=lambda: repr(vals(r)))
            r = evidence(svc, cs, "What is the age of the youngest singer?")
            tap.ok(any("singer.Age" in e["text"] for e in items(r, "synonym")),
                   "%s_concert_singer_youngest_synonym_age" % prefix, diag=lambda: repr(items(r)))
    else:
        tap.skip("%s_concert_singer" % prefix, "Spider concert_singer not available")
    if world:
        if wait_index(svc, world, "%s_world_1_value_index_ready" % prefix):
            r = evidence(svc, world, "What languages are spoken in the united states?")
            tap.ok(("country", "Name", "United States") in vals(r), "%s_world_1_united_states_country_name" % prefix,
                   diag=lambda: repr(vals(r)))
            r = evidence(svc, world, "How many countries are in southern europe?")
            tap.ok(("country", "Region", "Southern Europe") in vals(r),
                   "%s_world_1_southern_europe_region" % prefix, diag=lambda: repr(vals(r)))
            tap.ok(not all_probe_faults(r, placeholder), "%s_world_1_probes_parameterised" % prefix,
                   diag=lambda: "; ".join(all_probe_faults(r, placeholder)))
            r1 = evidence(svc, world, "Which countries are in the continent north america?")
            r2 = evidence(svc, world, "Which countries are in the region north america?")
            tap.ok(first_column_for(r1, "North America") == ("country", "Continent"),
                   "%s_world_1_north_america_ranked_continent_first_when_asked_for_continent" % prefix,
                   diag=lambda: repr(vals(r1)))
            tap.ok(first_column_for(r2, "North America") == ("country", "Region"),
                   "%s_world_1_north_america_ranked_region_first_when_asked_for_region" % prefix,
                   diag=lambda: repr(vals(r2)))
            r = evidence(svc, world, "Which countries have an independence year after 1990?")
            tap.ok(any("country.IndepYear" in e["text"] for e in items(r, "value", "range")),
                   "%s_world_1_year_gives_indepyear_range_item" % prefix, diag=lambda: repr(items(r)))
    else:
        tap.skip("%s_world_1" % prefix, "Spider world_1 not available")


# --------------------------------------------------------------------------- bounds and partial answers

def check_bounds():
    path = make_big_table(os.path.join(TMP, "big.sqlite"))
    entry = {"name": "big", "url": "sqlite://" + path}
    cfg = {"databases": [entry], "state": {"url": STATE_URL}, "log": QUIET,
           "values": {"max_values_per_column": 100}}
    with fixtures.serving(tap, cfg, "bounded_index_service_exits_0_on_sigterm", timeout=120) as svc:
        r = wait_index(svc, "big", "bounded_index_ready")
        if r is not None:
            st = r.json.get("value_index_stats") or {}
            tap.ok(st.get("columns_indexed", 0) >= 1 and 0 < st.get("values", 0) <= 100 * st["columns_indexed"],
                   "max_values_per_column_100_bounds_the_values_of_a_50k_distinct_column", diag=lambda: repr(st))
            r = evidence(svc, "big", "Which town is Hub CA Central?")
            tap.ok(("town", "name", "Hub CA Central") in vals(r), "bounded_index_keeps_the_most_frequent_values",
                   diag=lambda: repr(vals(r)))
            r = evidence(svc, "big", "Which town is Rare Town 31337?")
            tap.ok(r.status == 200 and not any(v.startswith("Rare Town") for _, _, v in vals(r)),
                   "bounded_index_leaves_out_values_past_the_bound", diag=lambda: repr(vals(r)))
    cfg["values"] = {"max_bytes": 200000}
    with fixtures.serving(tap, cfg, "tiny_index_service_exits_0_on_sigterm", timeout=120) as svc:
        r = wait_index(svc, "big", "tiny_index_ready")
        if r is not None:
            st = r.json.get("value_index_stats") or {}
            tap.ok(st.get("truncated") is True and 0 < st.get("bytes", 0) <= 200000,
                   "max_bytes_truncates_the_index_and_bounds_its_memory", diag=lambda: repr(st))
            r = evidence(svc, "big", "Which town is Hub CA Central?")
            tap.eq(r.status, 200, "truncated_index_still_answers_200")
    # The control: with default bounds the rare values are indexed (the check above can fail).
    cfg["values"] = {}
    with fixtures.serving(tap, cfg, "default_index_service_exits_0_on_sigterm", timeout=120) as svc:
        r = wait_index(svc, "big", "default_index_ready")
        if r is not None:
            st = r.json.get("value_index_stats") or {}
            tap.ok(st.get("values", 0) > 100 * st.get("columns_indexed", 0) and st.get("truncated") is False,
                   "default_bounds_index_more_than_100_values_per_column", diag=lambda: repr(st))


def check_partial():
    """A refresh that changes the schema starts a new build; a request right
    after it is answered at once (200), partial, with what needs no index."""
    path = make_big_table(os.path.join(TMP, "slow.sqlite"), rows=200000, extra_columns=4)
    fixtures.write_sqlite(path, "CREATE TABLE person (person_name TEXT, age INTEGER);",
                          {"person": [("Ann Lee", 31), ("Bo Chen", 45)]})
    cfg = {"databases": [{"name": "slow", "url": "sqlite://" + path}], "state": {"url": STATE_URL}, "auth": {"allow_anonymous_writes": True},
           # the index scans and probes of this large table get room under the (slow) sanitizer builds
           "log": QUIET, "values": {"max_rows_scanned": 1000000, "column_timeout_ms": 60000},
           "evidence": {"probe_timeout_ms": 20000}}
    with fixtures.serving(tap, cfg, "partial_service_exits_0_on_sigterm", timeout=120) as svc:
        if wait_index(svc, "slow", "partial_first_index_ready") is None:
            return
        seen = None
        for k in range(3):
            fixtures.write_sqlite(path, "CREATE TABLE extra_%d (x INTEGER);" % k)
            rr = svc.request("POST", "/databases/slow/refresh", timeout=60)
            if not tap.ok(rr.status == 200 and rr.json.get("changed") is True,
                          "partial_refresh_%d_changes_the_schema" % k, diag=lambda: repr(rr)):
                return
            r = evidence(svc, "slow", "Which town is the youngest Hub CA Central?")
            if r.status != 200 or r.json.get("value_index") != "ready":
                seen = r
                break
            if wait_index(svc, "slow", "partial_index_%d_ready_again" % k) is None:
                return
        if seen is None:
            tap.skip("answer_during_build_is_partial", "every build finished before the next request")
        else:
            tap.ok(seen.status == 200 and seen.json.get("partial") is True and
                   str(seen.json.get("value_index")).startswith("building") and seen.json.get("values") == [],
                   "answer_during_build_is_200_partial_without_values", diag=lambda: repr(seen))
            tap.ok(any("youngest" in e["text"] for e in items(seen, "synonym")),
                   "answer_during_build_still_has_synonyms", diag=lambda: repr(seen))
        r = wait_index(svc, "slow", "partial_index_after_refresh_becomes_ready")
        if r is not None:
            r = evidence(svc, "slow", "Which town is Hub CA Central?")
            tap.ok(("town", "name", "Hub CA Central") in vals(r) and r.json.get("partial") is False,
                   "index_after_refresh_finds_values", diag=lambda: repr(vals(r)))


# --------------------------------------------------------------------------- examples

EXAMPLES = [
    ("How many singers are from France?", "SELECT count(*) FROM singer WHERE Country = 'France'"),
    ("What is the average price of flights to Paris?",
     "SELECT avg(price) FROM flight WHERE destination = 'Paris'"),
    ("List the names of singers ordered by age", "SELECT Name FROM singer ORDER BY Age"),
    ("Which flights leave from Glasgow?", "SELECT flight_no FROM flight WHERE origin = 'Glasgow'"),
]


def check_examples(svc, db):
    base = "/databases/%s/examples" % db
    r = svc.request("POST", base, json={"question": "Drop it", "sql": "DELETE FROM singer"})
    tap.ok(r.status == 403 and fixtures.problem_type(r) in ("sql-rejected", "forbidden"),
           "examples_post_rejects_a_write_with_403", diag=lambda: repr(r))
    r = svc.request("POST", base, json={"question": "Broken", "sql": "SELEC nothing FROM"})
    fixtures.check_problem(tap, r, 400, "sql-invalid", "examples_post_rejects_invalid_sql_with_400")
    r = svc.request("POST", base, json={"question": "Unknown table", "sql": "SELECT * FROM no_such_table"})
    tap.ok(r.status in (400, 422) and fixtures.problem_type(r) in ("sql-invalid", "sql-failed"),
           "examples_post_rejects_sql_naming_an_unknown_table", diag=lambda: repr(r))
    r = svc.request("POST", base, json={"question": "x", "sql": "SELECT 1; SELECT 2"})
    tap.ok(r.status in (400, 403), "examples_post_rejects_two_statements", diag=lambda: repr(r))
    r = svc.request("POST", base, json={"question": "x"})
    fixtures.check_problem(tap, r, 400, "invalid-request", "examples_post_missing_sql_is_400")
    r = svc.request("POST", base, json={"sql": "SELECT 1"})
    fixtures.check_problem(tap, r, 400, "invalid-request", "examples_post_missing_question_is_400")
    r = svc.request("POST", base, json={"question": "x", "sql": "SELECT 1", "extra": 1})
    fixtures.check_problem(tap, r, 400, "invalid-request", "examples_post_unknown_field_is_400")
    r = svc.request("POST", base, json={"question": 5, "sql": "SELECT 1"})
    fixtures.check_problem(tap, r, 400, "invalid-request", "examples_post_non_string_question_is_400")
    listing = svc.request("GET", base)
    tap.ok(listing.status == 200 and listing.json.get("total") == 0 and listing.json.get("examples") == [],
           "rejected_examples_are_not_stored", diag=lambda: repr(listing))

    ids = []
    for q, sql in EXAMPLES:
        r = svc.request("POST", base, json={"question": q, "sql": sql})
        if r.status == 201 and isinstance(r.json.get("id"), int):
            ids.append(r.json["id"])
        ok = (r.status == 201 and r.json.get("question") == q and r.json.get("sql") == sql and
              isinstance(r.json.get("created_at"), str))
        if not ok:
            tap.ok(False, "examples_post_stores_valid_example", diag=lambda: repr(r))
            return None
    tap.ok(len(set(ids)) == len(EXAMPLES) and ids == sorted(ids), "examples_post_returns_201_with_increasing_ids",
           diag=lambda: repr(ids))
    r = svc.request("GET", base)
    got = [(e["question"], e["sql"]) for e in (r.json or {}).get("examples", [])]
    tap.ok(r.status == 200 and got == EXAMPLES and r.json.get("total") == len(EXAMPLES),
           "examples_get_lists_them_in_order_with_total", diag=lambda: repr(r))
    r = svc.request("GET", base + "?limit=2&offset=1")
    tap.ok(r.status == 200 and [e["id"] for e in r.json.get("examples", [])] == ids[1:3] and
           r.json.get("total") == len(EXAMPLES), "examples_get_pages_with_limit_and_offset", diag=lambda: repr(r))
    r = svc.request("GET", base + "?limit=0")
    fixtures.check_problem(tap, r, 400, "invalid-request", "examples_get_limit_0_is_400")

    r = evidence(svc, db, "How many singers are from Ireland?")
    ex = (r.json or {}).get("examples", []) if r.status == 200 else []
    scores = [e.get("score") for e in ex]
    tap.ok(ex and ex[0].get("id") == ids[0] and ex[0].get("sql") == EXAMPLES[0][1] and
           ex[0].get("question") == EXAMPLES[0][0], "evidence_returns_the_most_similar_example_first",
           diag=lambda: repr(ex))
    tap.ok(1 <= len(ex) <= 2 and all(isinstance(s, (int, float)) and 0 < s <= 1.0001 for s in scores) and
           scores == sorted(scores, reverse=True), "evidence_examples_have_scores_best_first_at_most_max_examples",
           diag=lambda: repr(ex))
    r = evidence(svc, db, "What is the average price of flights to Denver?")
    ex = (r.json or {}).get("examples", []) if r.status == 200 else []
    tap.ok(ex and ex[0].get("id") == ids[1], "evidence_example_ranking_follows_the_question",
           diag=lambda: repr(ex))

    r = svc.request("DELETE", "%s/%d" % (base, ids[3]))
    tap.ok(r.status == 200 and r.json.get("deleted") is True and r.json.get("id") == ids[3],
           "examples_delete_answers_200", diag=lambda: repr(r))
    r = svc.request("DELETE", "%s/%d" % (base, ids[3]))
    fixtures.check_problem(tap, r, 404, "not-found", "examples_delete_again_is_404")
    r = svc.request("DELETE", "%s/abc" % base)
    fixtures.check_problem(tap, r, 404, "not-found", "examples_delete_non_numeric_id_is_404")
    r = evidence(svc, db, "Which flights leave from Glasgow?")
    tap.ok(r.status == 200 and ids[3] not in [e.get("id") for e in r.json.get("examples", [])],
           "deleted_example_is_no_longer_returned", diag=lambda: repr(r.json.get("examples")))
    return ids[:3]


def check_examples_after_restart(svc, db, ids):
    r = svc.request("GET", "/databases/%s/examples" % db)
    got = [(e["id"], e["question"], e["sql"]) for e in (r.json or {}).get("examples", [])]
    want = [(i, q, s) for i, (q, s) in zip(ids, EXAMPLES)]
    tap.ok(r.status == 200 and got == want, "examples_survive_a_restart", diag=lambda: repr(r))
    r = evidence(svc, db, "How many singers are from Ireland?")
    ex = (r.json or {}).get("examples", []) if r.status == 200 else []
    tap.ok(ex and ex[0].get("id") == ids[0], "evidence_uses_examples_stored_before_the_restart",
           diag=lambda: repr(ex))


# --------------------------------------------------------------------------- descriptions

def check_describe_metadata(svc, db):
    m = svc.request("GET", "/databases/%s" % db).json
    r = describe(svc, db)
    names = [t.get("name") for t in (r.json or {}).get("tables", [])]
    tap.ok(r.status == 200 and sorted(names) == sorted(t["name"] for t in m["tables"]),
           "describe_all_tables_lists_every_table", diag=lambda: repr(r))
    faults = []
    for t in m["tables"]:
        dt = desc_table(r, t["name"]) or {}
        if dt.get("source") != "metadata" or not dt.get("description"):
            faults.append("table %s: %r" % (t["name"], dt.get("source")))
        cols = [c.get("name") for c in dt.get("columns", [])]
        if cols != [c["name"] for c in t["columns"]]:
            faults.append("table %s columns %r" % (t["name"], cols))
        for c in dt.get("columns", []):
            if c.get("source") != "metadata" or not isinstance(c.get("description"), str) or not c["description"]:
                faults.append("%s.%s: %r" % (t["name"], c.get("name"), c))
    tap.ok(not faults, "describe_without_model_gives_metadata_text_for_every_table_and_column",
           diag=lambda: "\n".join(faults))
    c = desc_column(r, "singer", "Country") or {}
    tap.ok("France" in c.get("description", ""), "metadata_description_shows_sample_values", diag=lambda: repr(c))
    c = desc_column(r, "singer", "Singer_ID") or {}
    tap.ok("primary key" in c.get("description", "").lower(), "metadata_description_names_the_key_role",
           diag=lambda: repr(c))
    tap.ok(r.status == 200 and r.json.get("model_calls") == 0 and r.json.get("errors") == [],
           "describe_without_model_makes_no_model_call", diag=lambda: repr(r))
    r = describe(svc, db, ["flight"])
    tap.ok(r.status == 200 and [t["name"] for t in r.json.get("tables", [])] == ["flight"],
           "describe_subset_lists_only_the_tables_asked", diag=lambda: repr(r))
    r = describe(svc, db, ["no_such_table"])
    fixtures.check_problem(tap, r, 404, "not-found", "describe_unknown_table_is_404")
    for bad, name in (([], "empty"), ("singer", "string"), ([5], "number")):
        r = describe(svc, db, bad)
        fixtures.check_problem(tap, r, 400, "invalid-request", "describe_tables_%s_is_400" % name)


OV_TABLE = "People who perform songs at concerts."
OV_COUNTRY = "The country the singer comes from."


def check_overrides_put(svc, db):
    base = "/databases/%s/descriptions" % db
    r = svc.request("GET", base)
    tap.ok(r.status == 200 and r.json.get("overrides") == [], "descriptions_get_starts_empty", diag=lambda: repr(r))
    r = svc.request("PUT", base, json={"descriptions": [
        {"table": "singer", "text": OV_TABLE},
        {"table": "singer", "column": "Country", "text": OV_COUNTRY},
        {"table": "flight", "column": "price", "text": "Ticket price in euros."}]})
    ov = {(o.get("table"), o.get("column")): o.get("text") for o in (r.json or {}).get("overrides", [])}
    tap.ok(r.status == 200 and ov == {("singer", None): OV_TABLE, ("singer", "Country"): OV_COUNTRY,
                                      ("flight", "price"): "Ticket price in euros."},
           "descriptions_put_stores_overrides_and_lists_them", diag=lambda: repr(r))
    for body, name in (({"descriptions": [{"table": "nope", "text": "x"}]}, "unknown_table"),
                       ({"descriptions": [{"table": "singer", "column": "nope", "text": "x"}]}, "unknown_column"),
                       ({"descriptions": [{"table": "singer", "text": "x", "extra": 1}]}, "unknown_entry_field"),
                       ({"descriptions": [{"table": "singer"}]}, "missing_text"),
                       ({"descriptions": [{"text": "x"}]}, "missing_table"),
                       ({"descriptions": []}, "empty_list"),
                       ({}, "missing_descriptions"),
                       ({"descriptions": [{"table": "singer", "text": "x"}], "more": 1}, "unknown_field")):
        r = svc.request("PUT", base, json=body)
        fixtures.check_problem(tap, r, 400, "invalid-request", "descriptions_put_%s_is_400" % name)
    r = svc.request("GET", base)
    got = {(o.get("table"), o.get("column")): o.get("text") for o in (r.json or {}).get("overrides", [])}
    tap.ok(r.status == 200 and got == ov, "descriptions_get_lists_the_overrides", diag=lambda: repr(r))
    # A rejected PUT changes nothing, not even its entries before the bad one.
    r = svc.request("PUT", base, json={"descriptions": [{"table": "flight", "text": "changed"},
                                                        {"table": "nope", "text": "x"}]})
    r2 = svc.request("GET", base)
    got = {(o.get("table"), o.get("column")): o.get("text") for o in (r2.json or {}).get("overrides", [])}
    tap.ok(r.status == 400 and got == ov, "descriptions_put_rejected_with_400_stores_none_of_its_entries",
           diag=lambda: "PUT %r; overrides now %r" % (r, got))
    if got != ov:  # undo, so that the checks after this one see the intended overrides
        svc.request("PUT", base, json={"descriptions": [{"table": "flight", "text": None}]})


def check_overrides_apply(svc, db, when):
    r = describe(svc, db)
    t = desc_table(r, "singer") or {}
    c = desc_column(r, "singer", "Country") or {}
    n = desc_column(r, "singer", "Name") or {}
    tap.ok(t.get("description") == OV_TABLE and t.get("source") == "override" and
           c.get("description") == OV_COUNTRY and c.get("source") == "override" and n.get("source") == "metadata",
           "overrides_win_%s" % when, diag=lambda: repr(desc_table(r, "singer")))


def check_override_removal(svc, db):
    base = "/databases/%s/descriptions" % db
    r = svc.request("PUT", base, json={"descriptions": [{"table": "singer", "column": "Country", "text": None}]})
    keys = [(o.get("table"), o.get("column")) for o in (r.json or {}).get("overrides", [])]
    tap.ok(r.status == 200 and ("singer", "Country") not in keys and ("singer", None) in keys,
           "descriptions_put_text_null_removes_the_override", diag=lambda: repr(r))
    r = describe(svc, db, ["singer"])
    c = desc_column(r, "singer", "Country") or {}
    tap.ok(c.get("source") == "metadata" and c.get("description") != OV_COUNTRY,
           "removed_override_falls_back_to_metadata", diag=lambda: repr(c))
    r = svc.request("PUT", base, json={"descriptions": [{"table": "singer", "column": "Country", "text": None}]})
    tap.eq(r.status, 200, "removing_an_absent_override_is_200")


# --------------------------------------------------------------------------- errors

def check_errors(svc, db):
    for path, body, name in (
            ("/evidence", {"database": db}, "evidence_missing_question"),
            ("/evidence", {"question": "x"}, "evidence_missing_database"),
            ("/evidence", {"database": db, "question": "x", "top_k": 3}, "evidence_unknown_field"),
            ("/evidence", {"database": db, "question": 7}, "evidence_non_string_question"),
            ("/evidence", {"database": db, "question": "x" * 5000}, "evidence_question_too_long"),
            ("/describe", {}, "describe_missing_database"),
            ("/describe", {"database": db, "mode": "x"}, "describe_unknown_field")):
        r = svc.request("POST", path, json=body)
        fixtures.check_problem(tap, r, 400, "invalid-request", "%s_is_400" % name)
    r = svc.request("POST", "/evidence", body="{not json", headers={"Content-Type": "application/json"})
    fixtures.check_problem(tap, r, 400, "invalid-request", "evidence_malformed_json_is_400")
    r = svc.request("POST", "/evidence", json=["database", db])
    fixtures.check_problem(tap, r, 400, "invalid-request", "evidence_array_body_is_400")
    r = svc.request("GET", "/evidence")
    tap.ok(r.status == 405 and "POST" in (r.headers.get("Allow") or ""), "evidence_get_is_405_with_allow",
           diag=lambda: repr(r))
    for method, path, body, name in (
            ("POST", "/evidence", {"database": "no_such_db", "question": "x"}, "evidence"),
            ("POST", "/describe", {"database": "no_such_db"}, "describe"),
            ("GET", "/databases/no_such_db/examples", None, "examples_get"),
            ("POST", "/databases/no_such_db/examples", {"question": "q", "sql": "SELECT 1"}, "examples_post"),
            ("DELETE", "/databases/no_such_db/examples/1", None, "examples_delete"),
            ("GET", "/databases/no_such_db/descriptions", None, "descriptions_get"),
            ("PUT", "/databases/no_such_db/descriptions", {"descriptions": [{"table": "t", "text": "x"}]},
             "descriptions_put")):
        r = svc.request(method, path, json=body)
        fixtures.check_problem(tap, r, 404, "not-found", "%s_unknown_database_is_404" % name)


# --------------------------------------------------------------------------- models

EV_MODEL = "ev-evidence-%d" % PID
DESC_MODEL = "ev-describe-%d" % PID
KNOWLEDGE = "A singer's Country is the country the singer comes from."


def check_evidence_model(svc, stub, db):
    q = "How many singers come from the land of the Eiffel Tower?"
    stub_rules(stub, [{"match": {"model": EV_MODEL}, "respond": {"content": json.dumps(
        {"schema-value-pair": [{"schema": "singer.Country", "value": "FRANCE"},
                               {"schema": "singer.Country", "value": "Atlantis"},
                               {"schema": "no_table.no_column", "value": "x"}],
         "knowledge": [KNOWLEDGE]})}}])
    before = len(stub_requests(stub))
    r = evidence(svc, db, q)
    v = find_value(r, "singer", "Country", "France")
    tap.ok(v is not None and v.get("source") == "model" and "France" in v["probe"]["rows"],
           "model_pair_is_probed_and_returned_with_stored_case_and_source_model", diag=lambda: repr(r))
    tap.ok(not any(val == "Atlantis" or t == "no_table" for t, _, val in vals(r)),
           "model_pairs_not_in_the_database_or_schema_are_dropped", diag=lambda: repr(vals(r)))
    tap.ok([e["text"] for e in items(r, "domain", "model")] == [KNOWLEDGE],
           "model_knowledge_becomes_a_domain_item", diag=lambda: repr(items(r)))
    tap.ok(r.status == 200 and r.json.get("model_calls") == 1, "evidence_with_model_counts_one_model_call",
           diag=lambda: repr(r))
    reqs = [x for x in stub_requests(stub)[before:] if x.get("path") == "/v1/chat/completions"]
    tap.ok(len(reqs) == 1 and q in chat_text(reqs[0]) and "schema-value-pair" in chat_text(reqs[0]),
           "evidence_model_prompt_holds_the_question_and_asks_for_pairs", diag=lambda: repr(reqs))

    malformed = [("not_json", {"content": "I think the answer is France."}),
                 ("wrong_types", {"content": '{"schema-value-pair": 5, "knowledge": "x"}'}),
                 ("bad_pairs", {"content": '{"schema-value-pair": [{"schema": 7}, "x", {"value": "France"}], '
                                           '"knowledge": [1, null]}'}),
                 ("duplicate_keys", {"content": '{"schema-value-pair": [], "schema-value-pair": []}'}),
                 ("truncated", {"content": '{"schema-value-pair": [{"schema": "singer.Country", "val'}),
                 ("http_500", {"status": 500, "content": "boom"}),
                 ("garbage_body", {"raw_body": "<html>oops</html>"})]
    for name, respond in malformed:
        stub_rules(stub, [{"match": {"model": EV_MODEL}, "respond": respond}])
        r = evidence(svc, db, q)
        tap.ok(r.status == 200 and r.json.get("model_calls") == 1 and
               not any(v.get("source") == "model" for v in r.json.get("values", [])) and not items(r, "domain"),
               "malformed_model_answer_%s_leaves_evidence_200_with_the_call_counted" % name, diag=lambda: repr(r))
    r = evidence(svc, db, "How many singers from france are there?")
    tap.ok(("singer", "Country", "France") in vals(r), "malformed_model_answer_keeps_index_values",
           diag=lambda: repr(r))
    sent = [x for x in stub_requests(stub) if x.get("path") == "/v1/chat/completions" and
            isinstance(x.get("body"), dict) and x["body"].get("model") == EV_MODEL]
    calls = metric_sum(svc, "text2sqld_model_calls_total", 'stage="evidence"')
    tap.ok(len(sent) >= 9 and calls == len(sent), "evidence_model_calls_are_counted_in_metrics",
           diag=lambda: "metric %r, stub saw %d" % (calls, len(sent)))


DESC_SINGER = {"table": "Each row is one singer.",
               "columns": {"Name": "The singer's stage name.", "Country": "Where the singer comes from.",
                           "No_Such_Column": "dropped"}}


def describe_rules(flight_answer="this is not JSON"):
    return [{"match": {"model": DESC_MODEL, "regex": r"\nTable: singer[ \n]"},
             "respond": {"content": "```json\n" + json.dumps(DESC_SINGER) + "\n```"}},
            {"match": {"model": DESC_MODEL, "regex": r"\nTable: flight[ \n]"},
             "respond": {"content": flight_answer}},
            {"match": {"model": DESC_MODEL}, "respond": {"content": "[\"product\"]"}}]


def check_describe_model(svc, stub, db):
    stub_rules(stub, describe_rules())
    before = len(stub_requests(stub))
    r = describe(svc, db)
    t = desc_table(r, "singer") or {}
    tap.ok(t.get("source") == "model" and t.get("description") == DESC_SINGER["table"],
           "describe_model_table_sentence_has_source_model", diag=lambda: repr(r))
    cols = {c["name"]: c for c in t.get("columns", [])}
    tap.ok(cols.get("Name", {}).get("source") == "model" and
           cols.get("Name", {}).get("description") == DESC_SINGER["columns"]["Name"] and
           cols.get("Age", {}).get("source") == "metadata" and "No_Such_Column" not in cols,
           "describe_model_columns_model_text_left_out_ones_metadata_unknown_dropped", diag=lambda: repr(t))
    f = desc_table(r, "flight") or {}
    tap.ok(f.get("source") == "metadata" and all(c.get("source") == "metadata" for c in f.get("columns", [])),
           "describe_malformed_answer_falls_back_to_metadata", diag=lambda: repr(f))
    errs = (r.json or {}).get("errors", [])
    tap.ok(r.status == 200 and any("flight" in e for e in errs) and any("product" in e for e in errs) and
           not any(e.startswith("singer") for e in errs) and r.json.get("model_errors") == 2,
           "describe_lists_the_malformed_answers_as_errors", diag=lambda: repr(r.json))
    reqs = [x for x in stub_requests(stub)[before:] if x.get("path") == "/v1/chat/completions"]
    tap.ok(r.status == 200 and r.json.get("model_calls") == 3 and len(reqs) == 3,
           "describe_model_one_call_per_table", diag=lambda: "%r; %d requests" % (r.json, len(reqs)))
    # An override still wins over the model's text.
    svc.request("PUT", "/databases/%s/descriptions" % db,
                json={"descriptions": [{"table": "singer", "column": "Country", "text": OV_COUNTRY}]})
    r = describe(svc, db, ["singer"])
    c = desc_column(r, "singer", "Country") or {}
    n = desc_column(r, "singer", "Name") or {}
    tap.ok(c.get("source") == "override" and c.get("description") == OV_COUNTRY and n.get("source") == "model",
           "override_wins_over_model_text", diag=lambda: repr(desc_table(r, "singer")))
    return r


def check_describe_model_cached(svc, stub, db, name):
    """Model text for singer comes back with no model call for it, whatever
    the model would answer now."""
    stub_rules(stub, [{"match": {"model": DESC_MODEL}, "respond": {"content": "garbage"}}])
    before = len(stub_requests(stub))
    r = describe(svc, db, ["singer"])
    t = desc_table(r, "singer") or {}
    reqs = [x for x in stub_requests(stub)[before:] if x.get("path") == "/v1/chat/completions"]
    tap.ok(t.get("source") == "model" and t.get("description") == DESC_SINGER["table"] and
           r.json.get("model_calls") == 0 and not reqs, name,
           diag=lambda: "%r; %d model requests" % (r.json, len(reqs)))


# --------------------------------------------------------------------------- sections

def sqlite_section():
    db = "fx"
    path = make_sqlite_fixture("fixture")
    entry = {"name": db, "url": "sqlite://" + path}
    dbs = [entry]
    cs = t2s.spider_db_path("concert_singer")
    world = t2s.spider_db_path("world_1")
    if cs:
        dbs.append({"name": "concert_singer", "url": "sqlite://" + cs})
    if world:
        dbs.append({"name": "world_1", "url": "sqlite://" + world})
    spider_before = {p: t2s.sqlite_checksum(p) for p in (cs, world) if p}
    cfg = {"databases": dbs, "state": {"url": STATE_URL}, "log": QUIET, "evidence": {"max_examples": 2}, "auth": {"allow_anonymous_writes": True}}
    ids = None
    with fixtures.serving(tap, cfg, "sqlite_service_exits_0_on_sigterm", timeout=120) as svc:
        skipped = check_fixture_evidence(svc, db, "sqlite", "?1", lambda: t2s.sqlite_checksum(path))
        check_spider_evidence(svc, "sqlite_spider", "concert_singer" if cs else None,
                              "world_1" if world else None, "?1")
        for step in ("lookup", "probe", "total"):
            n = metric_sum(svc, "text2sqld_stage_step_duration_seconds_count", 'stage="evidence"', 'step="%s"' % step)
            tap.ok(n >= 10, "metrics_count_evidence_step_%s" % step, diag=lambda: repr(n))
        check_errors(svc, db)
        ids = check_examples(svc, db)
        check_describe_metadata(svc, db)
        n = metric_sum(svc, "text2sqld_stage_step_duration_seconds_count", 'stage="describe"', 'step="total"')
        tap.ok(n >= 2, "metrics_count_describe_runs", diag=lambda: repr(n))
        check_overrides_put(svc, db)
        check_overrides_apply(svc, db, "over_metadata")
        # A schema change and a refresh keep the overrides.
        fixtures.write_sqlite(path, "CREATE TABLE venue (venue_name TEXT); ALTER TABLE singer ADD COLUMN Label TEXT;")
        rr = svc.request("POST", "/databases/%s/refresh" % db, timeout=60)
        tap.ok(rr.status == 200 and rr.json.get("changed") is True, "refresh_after_schema_change_reports_changed",
               diag=lambda: repr(rr))
        check_overrides_apply(svc, db, "after_refresh")
        r = describe(svc, db, ["venue"])
        tap.ok(desc_table(r, "venue") is not None, "describe_sees_the_table_added_before_refresh",
               diag=lambda: repr(r))
        tap.ok(all(t2s.sqlite_checksum(p) == h for p, h in spider_before.items()),
               "spider_databases_unchanged", diag=lambda: "spider checksum changed")
    # A restart with the same state store keeps examples and overrides.
    with fixtures.serving(tap, cfg, "sqlite_restarted_service_exits_0_on_sigterm", timeout=120) as svc:
        if ids:
            check_examples_after_restart(svc, db, ids)
        else:
            tap.skip("examples_survive_a_restart", "examples could not be stored")
        check_overrides_apply(svc, db, "after_restart")
        check_override_removal(svc, db)
    if skipped:
        check_skip_rules_off("sqlite", {"name": db, "url": "sqlite://" + make_sqlite_fixture("fixture_noskip")},
                             skipped)


def stored_description_hashes(state_path, db):
    """The schema hashes under which the state store keeps model descriptions of db."""
    con = t2s.sqlite_ro(state_path)
    try:
        return sorted(h for (h,) in con.execute("SELECT DISTINCT schema_hash FROM description_cache WHERE db_name = ?",
                                                 (db,)))
    finally:
        con.close()


def check_prune_after_refresh(stub):
    """A refresh that changes the schema drops the model descriptions stored for the older schema."""
    path = make_sqlite_fixture("prune_fixture")
    db = "fxp_%d" % PID
    state_path = os.path.join(TMP, "prune-state.sqlite")
    cfg = {"databases": [{"name": db, "url": "sqlite://" + path}], "state": {"url": "sqlite://" + state_path},
           "log": QUIET, "auth": {"allow_anonymous_writes": True}, "models": {"describe": model_cfg(stub, DESC_MODEL)}}
    with fixtures.serving(tap, cfg, "prune_service_exits_0_on_sigterm", timeout=120) as svc:
        stub_rules(stub, describe_rules())
        r = describe(svc, db, ["singer"])
        before = stored_description_hashes(state_path, db)
        tap.ok(r.status == 200 and len(before) == 1 and before[0] == r.json.get("schema_hash"),
               "describe_model_text_is_stored_under_the_schema_hash", diag=lambda: "%r %r" % (before, r.json))
        same = svc.request("POST", "/databases/%s/refresh" % db, timeout=60)
        tap.eq(stored_description_hashes(state_path, db), before, "refresh_without_change_keeps_stored_descriptions")
        fixtures.write_sqlite(path, "CREATE TABLE venue (venue_name TEXT);")
        rr = svc.request("POST", "/databases/%s/refresh" % db, timeout=60)
        after = stored_description_hashes(state_path, db)
        tap.ok(same.status == 200 and rr.status == 200 and rr.json.get("changed") is True and after == [],
               "refresh_of_a_changed_schema_prunes_older_descriptions", diag=lambda: "%r %r" % (rr.json, after))


def model_section():
    path = make_sqlite_fixture("model_fixture")
    db = "fxm_%d" % PID
    stub = fixtures.ModelStub()
    state = "sqlite://" + os.path.join(TMP, "model-state.sqlite")
    try:
        cfg = {"databases": [{"name": db, "url": "sqlite://" + path}], "state": {"url": state}, "log": QUIET, "auth": {"allow_anonymous_writes": True},
               "models": {"evidence": model_cfg(stub, EV_MODEL), "describe": model_cfg(stub, DESC_MODEL)}}
        with fixtures.serving(tap, cfg, "model_service_exits_0_on_sigterm", timeout=120) as svc:
            if wait_index(svc, db, "model_service_value_index_ready"):
                check_evidence_model(svc, stub, db)
            check_describe_model(svc, stub, db)
        check_prune_after_refresh(stub)
        # Restarted without Redis: the model text is kept in the state store.
        with fixtures.serving(tap, cfg, "model_restarted_service_exits_0_on_sigterm", timeout=120) as svc:
            check_describe_model_cached(svc, stub, db,
                                        "describe_model_text_survives_a_restart_in_the_state_store_without_model_calls")
        redis = os.environ.get("T2S_TEST_REDIS_URL")
        if not redis:
            tap.skip("describe_model_text_cached_in_redis", "T2S_TEST_REDIS_URL unset")
            return
        cfg["redis"] = {"url": redis}
        cfg["state"] = {"url": "sqlite://" + os.path.join(TMP, "model-state-redis.sqlite")}
        with fixtures.serving(tap, cfg, "model_redis_service_exits_0_on_sigterm", timeout=120) as svc:
            stub_rules(stub, describe_rules())
            r = describe(svc, db, ["singer"])
            tap.ok(r.status == 200 and (desc_table(r, "singer") or {}).get("source") == "model",
                   "describe_model_with_redis_first_call_uses_the_model", diag=lambda: repr(r))
            check_describe_model_cached(svc, stub, db, "describe_model_text_second_call_is_a_cache_hit")
        # A fresh process with a fresh state store but the same Redis starts warm.
        cfg["state"] = {"url": "sqlite://" + os.path.join(TMP, "model-state-redis2.sqlite")}
        with fixtures.serving(tap, cfg, "model_redis_restarted_service_exits_0_on_sigterm", timeout=120) as svc:
            check_describe_model_cached(svc, stub, db, "describe_model_text_cached_in_redis_across_processes")
            r = describe(svc, db, ["singer"])
            tap.ok(r.status == 200 and r.json.get("cache_hits", 0) >= 1, "describe_reports_cache_hits",
                   diag=lambda: repr(r.json))
    finally:
        stub.close()


def pg_section():
    if not fixtures.have_pg():
        tap.skip("pg_evidence", "no PostgreSQL (T2S_TEST_PG_PORT unset)")
        return
    pg = fixtures.PgDatabases(tap)
    try:
        pg.create(PGDB, PG_DDL + pg_inserts() + """
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT USAGE ON SCHEMA public TO t2s_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO t2s_reader;
""")
        spider = [d for d in os.environ.get("T2S_TEST_PG_SPIDER_DBS", "").split()
                  if d in ("concert_singer", "world_1")]
        entry = {"name": "pgfx", "url": t2s.pg_url(PGDB)}
        dbs = [entry] + [{"name": "pg_" + d, "url": t2s.pg_url(d)} for d in spider]
        cfg = {"databases": dbs, "state": {"url": STATE_URL}, "log": QUIET, "auth": {"allow_anonymous_writes": True}}
        spider_before = {d: t2s.pg_checksum(d) for d in spider}
        with fixtures.serving(tap, cfg, "pg_service_exits_0_on_sigterm", timeout=120) as svc:
            skipped = check_fixture_evidence(svc, "pgfx", "pg", "$1", lambda: t2s.pg_checksum(PGDB))
            check_spider_evidence(svc, "pg_spider", "pg_concert_singer" if "concert_singer" in spider else None,
                                  "pg_world_1" if "world_1" in spider else None, "$1")
            r = svc.request("POST", "/databases/pgfx/examples", json={"question": "x", "sql": "DELETE FROM singer"})
            tap.ok(r.status == 403, "pg_examples_post_rejects_a_write_with_403", diag=lambda: repr(r))
            r = svc.request("POST", "/databases/pgfx/examples",
                            json={"question": "French singers", "sql": "SELECT \"Name\" FROM singer WHERE "
                                                                      "\"Country\" = 'France'"})
            tap.eq(r.status, 201, "pg_examples_post_stores_a_valid_select")
            r = svc.request("DELETE", "/databases/pgfx/examples/%s" % (r.json or {}).get("id"))
            tap.eq(r.status, 200, "pg_examples_delete_answers_200")
            r = describe(svc, "pgfx", ["singer"])
            c = desc_column(r, "singer", "Country") or {}
            tap.ok(c.get("source") == "metadata" and "France" in c.get("description", ""),
                   "pg_describe_metadata_shows_samples", diag=lambda: repr(r))
            tap.ok(all(t2s.pg_checksum(d) == h for d, h in spider_before.items()), "pg_spider_databases_unchanged")
        if skipped:
            check_skip_rules_off("pg", entry, skipped)
    finally:
        pg.drop_all()


MY_DB = "t2s_evidence_my_%d" % PID
MY_READER = "t2s_evid_my_%d" % PID
MY_PASSWORD = "evidence-%d" % PID
# PG_DDL in MariaDB's spelling (text as VARCHAR where it is a key, long text as TEXT).
MY_DDL = """
CREATE TABLE singer (Singer_ID INT PRIMARY KEY, Name VARCHAR(100), Country VARCHAR(100), Age INT, Birth_Date DATE,
                     Debut_Year VARCHAR(10), Email VARCHAR(200), Homepage VARCHAR(300), Bio TEXT, Ticket VARCHAR(64),
                     Ref_Id VARCHAR(64));
CREATE TABLE flight (flight_no INT PRIMARY KEY, origin VARCHAR(100), destination VARCHAR(100), price DOUBLE,
                     departure DATE);
CREATE TABLE product (Sku VARCHAR(64) PRIMARY KEY, title VARCHAR(200));
"""


def maria_section():
    if not fixtures.have_mariadb():
        tap.skip("mariadb_evidence", "no MariaDB (T2S_TEST_MARIADB_SOCKET unset)")
        return
    try:
        fixtures.mariadb("DROP DATABASE IF EXISTS `{db}`; CREATE DATABASE `{db}`; USE `{db}`;\n{ddl}{rows}\n"
                         "DROP USER IF EXISTS '{r}'@'%'; CREATE USER '{r}'@'%' IDENTIFIED BY '{pw}';"
                         "GRANT SELECT ON `{db}`.* TO '{r}'@'%';".format(db=MY_DB, ddl=MY_DDL, rows=pg_inserts(),
                                                                           r=MY_READER, pw=MY_PASSWORD))
        spider = [d for d in os.environ.get("T2S_TEST_MARIADB_SPIDER_DBS", "").split() if d in ("concert_singer", "world_1")]
        pw = os.environ.get("T2S_TEST_MARIADB_READER_PW", "")
        entry = {"name": "myfx", "url": fixtures.mariadb_url(MY_DB, MY_READER, MY_PASSWORD)}
        dbs = [entry] + [{"name": "my_" + d, "url": fixtures.mariadb_url(d, "t2s_reader", pw)} for d in spider]
        cfg = {"databases": dbs, "state": {"url": STATE_URL}, "log": QUIET, "auth": {"allow_anonymous_writes": True}}
        with fixtures.serving(tap, cfg, "mariadb_service_exits_0_on_sigterm", timeout=120) as svc:
            skipped = check_fixture_evidence(svc, "myfx", "mariadb", "?", lambda: fixtures.mariadb_checksum(MY_DB))
            check_spider_evidence(svc, "mariadb_spider", "my_concert_singer" if "concert_singer" in spider else None,
                                  "my_world_1" if "world_1" in spider else None, "?")
            r = svc.request("POST", "/databases/myfx/examples", json={"question": "x", "sql": "DELETE FROM singer"})
            tap.ok(r.status == 403, "mariadb_examples_post_rejects_a_write_with_403", diag=lambda: repr(r))
            r = svc.request("POST", "/databases/myfx/examples",
                            json={"question": "French singers", "sql": "SELECT `Name` FROM singer WHERE Country = 'France'"})
            tap.eq(r.status, 201, "mariadb_examples_post_stores_a_valid_select")
            r = describe(svc, "myfx", ["singer"])
            c = desc_column(r, "singer", "Country") or {}
            tap.ok(c.get("source") == "metadata" and "France" in c.get("description", ""),
                   "mariadb_describe_metadata_shows_samples", diag=lambda: repr(r))
        if skipped:
            check_skip_rules_off("mariadb", entry, skipped)
    finally:
        fixtures.mariadb("DROP DATABASE IF EXISTS `%s`; DROP USER IF EXISTS '%s'@'%%';" % (MY_DB, MY_READER))


def main():
    if not t2s.server_binary():
        tap.skip("evidence", "T2S_BIN is not set")
        return tap.done()
    for section in (sqlite_section, check_bounds, check_partial, model_section, pg_section, maria_section):
        try:
            section()
        except Exception:  # noqa: BLE001 - report, then go on with the next section
            fixtures.report_exception(tap)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
