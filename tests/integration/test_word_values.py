#!/usr/bin/env python3
"""test_word_values.py - values a question names through an adjective, on the
real binary and a SQLite fixture written here (TAP).

  - "French" finds the stored 'France' (WordNet: French pertains to France)
    and "female" the code 'F' of a column named sex whose stored values are
    all single letters, in /evidence (values with their probes) and in /link
    (the columns holding them are linked by value);
  - a column of single letters its name does not tie to the adjective
    (grade: 'A'..'F') gives nothing;
  - the per-schema work is redone on refresh: once the sex column is renamed
    (grade_code) and the database refreshed, "female" no longer finds 'F'
    there, and once it is renamed back it does again.
Every service is stopped with SIGTERM and must exit 0.  Needs WordNet (as the
service does); skipped without T2S_BIN.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-word-values-")
INDEX_WAIT_S = 180

DDL = """
CREATE TABLE person (person_id INTEGER PRIMARY KEY, name TEXT, nationality TEXT, sex TEXT, grade TEXT);
CREATE TABLE city (city_id INTEGER PRIMARY KEY, city_name TEXT);
"""
PEOPLE = [(1, "Ann Lee", "France", "F", "A"), (2, "Bo Chen", "Italy", "M", "F"), (3, "Cy Diaz", "Italy", "F", "B"),
          (4, "Di Ek", "France", "M", "C"), (5, "Ed Fox", "Spain", "M", "D")]
CITIES = [(1, "Lyon"), (2, "Rome")]


def evidence(svc, question):
    return svc.request("POST", "/evidence", json={"database": "people", "question": question}, timeout=60)


def link(svc, question):
    return svc.request("POST", "/link", json={"database": "people", "question": question}, timeout=60)


def wait_ready(svc, name):
    deadline = time.monotonic() + INDEX_WAIT_S
    r = None
    while time.monotonic() < deadline:
        r = evidence(svc, "readiness probe")
        if r.status == 200 and r.json.get("value_index") == "ready":
            break
        time.sleep(0.05)
    return tap.ok(r is not None and r.status == 200 and r.json.get("value_index") == "ready", name,
                  diag=lambda: repr(r))


def values(r):
    if r.status != 200 or not isinstance(r.json, dict):
        return []
    return [(v.get("table"), v.get("column"), v.get("value")) for v in r.json.get("values", [])]


def linked_columns(r):
    if r.status != 200 or not isinstance(r.json, dict):
        return []
    return [(c.get("table"), c.get("column")) for c in r.json.get("columns", [])]


def value_hits(r):
    """Columns /link found by a value the question names (relevance.values)."""
    return (r.json.get("relevance") or {}).get("values", 0) if r.status == 200 and isinstance(r.json, dict) else 0


def refresh(svc, name):
    rr = svc.request("POST", "/databases/people/refresh", timeout=60)
    return tap.ok(rr.status == 200 and rr.json.get("changed") is True, name, diag=lambda: repr(rr))


def main():
    if not t2s.server_binary():
        tap.skip("word_values", "T2S_BIN is not set")
        return tap.done()
    path = fixtures.write_sqlite(os.path.join(TMP, "people.sqlite"), DDL, {"person": PEOPLE, "city": CITIES})
    cfg = {"databases": [{"name": "people", "url": "sqlite://" + path}],
           "state": {"url": "sqlite://" + os.path.join(TMP, "state.sqlite")},
           "auth": {"allow_anonymous_writes": True}, "log": {"level": "warn", "access": False}}
    try:
        with fixtures.serving(tap, cfg, "word_values_service_exits_0_on_sigterm", timeout=60) as svc:
            if not wait_ready(svc, "value_index_ready"):
                return tap.done()
            r = evidence(svc, "How many female French people are there?")
            got = values(r)
            tap.ok(("person", "nationality", "France") in got, "evidence_french_finds_france", diag=lambda: repr(r))
            tap.ok(("person", "sex", "F") in got, "evidence_female_finds_the_code_f_of_sex", diag=lambda: repr(r))
            tap.ok(("person", "grade", "F") not in got, "evidence_female_finds_nothing_in_grade",
                   diag=lambda: repr(got))
            probes = [v for v in r.json.get("values", []) if v.get("column") in ("sex", "nationality")]
            tap.ok(probes and all(v.get("probe") for v in probes), "evidence_word_values_are_probed",
                   diag=lambda: repr(probes))
            r = evidence(svc, "How many people are there?")
            tap.ok(not any(v[1] in ("sex", "nationality") for v in values(r)), "evidence_no_word_values_unasked",
                   diag=lambda: repr(values(r)))
            r = link(svc, "List the names of female people")
            tap.ok(("person", "sex") in linked_columns(r) and value_hits(r) >= 1, "link_female_is_a_value_hit_in_sex",
                   diag=lambda: repr(r))
            r = link(svc, "List the names of Italian people")
            tap.ok(("person", "nationality") in linked_columns(r) and value_hits(r) >= 1,
                   "link_italian_is_a_value_hit_in_nationality", diag=lambda: repr(r))

            fixtures.write_sqlite(path, "ALTER TABLE person RENAME COLUMN sex TO grade_code;")
            if refresh(svc, "refresh_after_rename_changes_the_schema") and wait_ready(svc, "index_ready_after_rename"):
                r = evidence(svc, "How many female French people are there?")
                got = values(r)
                tap.ok(not any(v[2] == "F" for v in got) and ("person", "nationality", "France") in got,
                       "after_refresh_female_finds_no_code_in_a_column_not_named_for_sex", diag=lambda: repr(got))
            fixtures.write_sqlite(path, "ALTER TABLE person RENAME COLUMN grade_code TO gender;")
            if refresh(svc, "refresh_after_second_rename_changes_the_schema") and \
                    wait_ready(svc, "index_ready_after_second_rename"):
                r = evidence(svc, "How many female French people are there?")
                tap.ok(("person", "gender", "F") in values(r), "after_refresh_female_finds_f_in_gender",
                       diag=lambda: repr(values(r)))
    except Exception:  # noqa: BLE001 - report, then end
        fixtures.report_exception(tap)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
