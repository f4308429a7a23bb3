#!/usr/bin/env python3
"""test_python_client.py - the Python client (clients/python, package text2sqld) checked
against the OpenAPI document and run against the real service (TAP).

Against the document (no service): every dataclass of text2sqld.models has
exactly the properties of the schema it names (``__schema__``), each with a
compatible type (str, int, float, bool, list, dict, or the dataclass of the
referenced schema); ProblemError's attributes are Problem's members and
cover its required ones; Options has exactly the request's options; every
/v1 operation has a client method (Client.OPERATIONS) and the methods exist;
decoding keeps unknown members in ``extra`` and leaves missing ones None;
pyproject.toml names the package and no dependency.

Against the service (auth on, SQLite, the model stub as the generate
model): ``Client(url, key).query(db, question)`` returns the same SQL and rows
as POST /v1/query sent by hand; the built-in generator's answer; generate
(no rows); execute, link, describe, evidence, the database list and schema
as typed objects; execute_csv and query_csv the rows as CSV with the cap that
cut them; stream yields the stage events, then ``result`` whose
``answer`` is the Answer; problems raise ProblemError with type, title,
status, detail, instance and request_id (an unknown database 404, a write
403 sql-rejected, no key 401, a missing scope 403 with ``required_scope`` in
extensions); the admin calls (examples, descriptions, feedback, refresh)
round-trip with an admin key.

Answer's ``explanation`` and ``chart`` are the answer contract's (DESIGN:
every answer carries them); while the document of this tree does not list
them yet, that is reported as a skip, not a pass.
"""

import csv
import dataclasses
import hashlib
import io
import json
import os
import sys
import typing

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

sys.path.insert(0, os.path.join(t2s.SOURCE_ROOT, "clients", "python"))
import text2sqld  # noqa: E402
from text2sqld import Client, ProblemError  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-python-client-")
KEY = "python-client-key-0123456789ab"
ADMIN_KEY = "python-client-admin-0123456789"
with open(os.path.join(t2s.SOURCE_ROOT, "openapi", "openapi.json"), encoding="utf-8") as _f:
    DOC = json.load(_f)
SCHEMAS = DOC["components"]["schemas"]
# Fields of the answer contract that the document may not list yet (see the module comment).
CONTRACT_FIELDS = {"Answer": {"explanation", "chart"}}
PY_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


def resolve(node):
    while isinstance(node, dict) and "$ref" in node:
        node = t2s.resolve_ref(node["$ref"], DOC)
    return node


def ref_name(node):
    """The schema name a property refers to (#/components/schemas/X), or None."""
    ref = node.get("$ref", "") if isinstance(node, dict) else ""
    parts = ref.split("/")
    return parts[3] if ref.startswith("#/components/schemas/") and len(parts) == 4 else None


def json_types(node):
    """The JSON types a property schema allows (null left out), following $ref."""
    node = resolve(node)
    t = node.get("type")
    types = set(t if isinstance(t, list) else [t] if t else [])
    names = {bool: "boolean", str: "string", int: "integer", float: "number"}
    if not types and "enum" in node:
        types = {names.get(type(v), "object") for v in node["enum"] if v is not None}
    if not types and "const" in node:
        types = {names.get(type(node["const"]), "object")}
    return types - {"null"}


def annotation_parts(hint):
    """(container, inner) of a type hint with Optional removed: (list, X) for List[X], (X, None) otherwise."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is typing.Union and len(args) == 1:
        hint = args[0]
    origin = typing.get_origin(hint)
    if origin in (list, typing.List):
        return list, typing.get_args(hint)[0]
    if origin in (dict, typing.Dict):
        return dict, None
    return hint, None


def compatible(hint, prop):
    """Whether a dataclass field's type hint fits the property's schema; a reason when not."""
    container, inner = annotation_parts(hint)
    target = ref_name(prop)
    if target and any(getattr(m, "__schema__", None) == target for m in text2sqld.MODELS):
        return container.__name__ == target or "wants the dataclass of %s" % target
    types = json_types(prop)
    if not types or container is typing.Any:
        return True  # any value (a row value, a free-form object)
    if container is list:
        if "array" not in types:
            return "a list, the document says %s" % sorted(types)
        items = resolve(prop).get("items", {})
        item_ref = ref_name(items)
        if item_ref and any(getattr(m, "__schema__", None) == item_ref for m in text2sqld.MODELS):
            return getattr(inner, "__name__", "") == item_ref or "items want the dataclass of %s" % item_ref
        return True
    if dataclasses.is_dataclass(container):
        return "object" in types or "the dataclass %s for %s" % (container.__name__, sorted(types))
    want = {PY_TYPES.get(t) for t in types}
    ok = container in want or (container is float and int in want)
    return ok or "%s, the document says %s" % (getattr(container, "__name__", container), sorted(types))


def check_model(cls):
    names = cls.__schema__ if isinstance(cls.__schema__, tuple) else (cls.__schema__,)
    props = {}
    for n in names:
        props.update(SCHEMAS[n].get("properties", {}))
    fields = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    pending = CONTRACT_FIELDS.get(cls.__name__, set())
    missing = sorted(set(props) - fields)
    invented = sorted(fields - set(props) - pending)
    tap.ok(not missing, "%s_has_every_property_of_%s" % (cls.__name__, "_and_".join(names)), diag=missing)
    tap.ok(not invented, "%s_has_no_field_the_document_lacks" % cls.__name__, diag=invented)
    for p in sorted(pending):
        if p in props:
            tap.ok(True, "%s_%s_is_documented" % (cls.__name__, p))
        else:
            tap.skip("%s_%s_is_documented" % (cls.__name__, p), "the answer contract's field is not in this document yet")
    hints = typing.get_type_hints(cls)
    wrong = []
    for name in sorted(fields & set(props)):
        why = compatible(hints[name], props[name])
        if why is not True:
            wrong.append("%s: %s" % (name, why))
    tap.ok(not wrong, "%s_field_types_match_the_document" % cls.__name__, diag="\n".join(wrong))
    hollow = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING and
              f.default_factory is dataclasses.MISSING]
    tap.ok(not hollow, "%s_tolerates_missing_fields" % cls.__name__, diag=hollow)


def test_against_document():
    for cls in text2sqld.MODELS:
        check_model(cls)
    problem = SCHEMAS["Problem"]
    tap.ok(set(ProblemError.FIELDS) <= set(problem["properties"]) and set(problem["required"]) <= set(ProblemError.FIELDS)
           and "instance" in ProblemError.FIELDS, "problem_error_attributes_are_the_problem_members",
           diag=ProblemError.FIELDS)
    opts = resolve(SCHEMAS["GenerateRequest"]["properties"]["options"])["properties"]
    tap.eq(sorted(f.name for f in dataclasses.fields(text2sqld.Options)), sorted(opts), "options_are_the_requests_options")
    ops = {}
    for path, item in DOC["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "operationId" in op:
                ops[op["operationId"]] = path
    uncovered = sorted(o for o, p in ops.items() if p.startswith("/v1/") and not p.startswith("/v1/mcp")
                       and o not in Client.OPERATIONS)
    tap.ok(not uncovered, "every_v1_operation_has_a_client_method", diag=uncovered)
    bad = sorted(o for o, m in Client.OPERATIONS.items() if o not in ops or not callable(getattr(Client, m, None)))
    tap.ok(not bad, "every_mapped_operation_and_method_exists", diag=bad)
    a = text2sqld.decode(text2sqld.Answer, {"sql": "SELECT 1", "rows": [[1]], "brand_new": {"x": 1},
                                            "validation": [{"level": 1, "check": "c", "ok": True, "later": 2}]})
    tap.ok(a.sql == "SELECT 1" and a.extra == {"brand_new": {"x": 1}} and a.confidence is None and
           isinstance(a.validation[0], text2sqld.ValidationCheck) and a.validation[0].extra == {"later": 2},
           "decoding_keeps_unknown_members_and_leaves_missing_ones_none", diag=repr(a))
    try:
        import tomllib
    except ImportError:
        tap.skip("pyproject_names_the_package_without_dependencies", "tomllib needs Python 3.11")
        return
    with open(os.path.join(t2s.SOURCE_ROOT, "clients", "python", "pyproject.toml"), "rb") as f:
        proj = tomllib.load(f)["project"]
    tap.ok(proj["name"] == "text2sqld" and proj.get("dependencies") == [] and proj["version"] == text2sqld.__version__,
           "pyproject_names_the_package_without_dependencies", diag=repr(proj))


def raises(fn):
    try:
        fn()
    except ProblemError as e:
        return e
    return None


def test_live(svc):
    client = Client(svc.base_url, api_key=KEY, timeout=60)
    dbs = client.databases()
    tap.ok(any(isinstance(d, text2sqld.DatabaseSummary) and d.name == "concert" and d.engine == "sqlite"
               for d in dbs), "databases_are_typed_summaries", diag=repr(dbs))
    schema = client.database("concert")
    singer = next((t for t in schema.tables or [] if t.name == "singer"), None)
    tap.ok(singer and isinstance(singer.columns[0], text2sqld.Column) and singer.primary_key == ["singer_id"],
           "database_schema_is_typed", diag=repr(schema)[:800])

    question = "How many singers are from France?"
    answer = client.query("concert", question)
    raw = svc.request("POST", "/v1/query", json={"database": "concert", "question": question},
                      headers={"Authorization": "Bearer " + KEY}).json
    tap.ok(isinstance(answer, text2sqld.Answer) and answer.sql == raw["sql"] and answer.rows == raw["rows"] and
           answer.rows == [[2]], "query_returns_the_same_sql_and_rows_as_v1_query",
           diag="%r %r / %r %r" % (answer.sql, answer.rows, raw.get("sql"), raw.get("rows")))
    tap.ok(answer.columns == raw["columns"] and isinstance(answer.confidence, float) and
           answer.confidence == raw["confidence"] and answer.confidence_band in ("high", "medium", "low") and
           all(isinstance(v, text2sqld.ValidationCheck) for v in answer.validation),
           "answer_is_typed", diag=repr(answer)[:800])
    tap.ok(answer.explanation == raw.get("explanation"), "answer_explanation_is_the_services",
           diag=repr((answer.explanation, raw.get("explanation"))))
    built = client.query("concert", "How many singers are there?", options=text2sqld.Options(generator="builtin"))
    tap.ok(built.generator == "builtin" and built.rows == [[4]], "query_with_options_object", diag=repr(built)[:600])
    gen = client.generate("concert", question, options={"max_rounds": 0})
    tap.ok(gen.sql == answer.sql and gen.rows is None and gen.trace is not None, "generate_answers_without_rows",
           diag=repr(gen)[:600])
    ex = client.execute("concert", "SELECT name FROM singer WHERE age > 40 ORDER BY name", max_rows=10)
    tap.ok(isinstance(ex, text2sqld.ExecuteResult) and ex.rows == [["Joe Sharp"], ["Rose White"]] and
           ex.truncated is False, "execute_returns_rows", diag=repr(ex))
    got = client.execute_csv("concert", "SELECT name, age FROM singer WHERE age > 40 ORDER BY name")
    tap.ok(isinstance(got, text2sqld.CsvRows) and got.truncated_by is None and
           list(csv.reader(io.StringIO(got.text))) == [["name", "age"], ["Joe Sharp", "52"], ["Rose White", "41"]]
           and got.text.endswith("\r\n"), "execute_csv_returns_the_rows_as_csv", diag=repr(got))
    got = client.execute_csv("concert", "SELECT name FROM singer ORDER BY name", max_rows=1)
    tap.ok(got.truncated_by == "max_rows" and len(list(csv.reader(io.StringIO(got.text)))) == 2,
           "execute_csv_says_which_cap_cut_the_rows", diag=repr(got))
    got = client.query_csv("concert", question)
    tap.eq(list(csv.reader(io.StringIO(got.text)))[1:], [["2"]], "query_csv_returns_the_answers_rows")
    e = raises(lambda: client.execute_csv("concert", "DELETE FROM singer"))
    tap.ok(e is not None and e.status == 403 and e.slug == "sql-rejected", "execute_csv_raises_problems_too",
           diag=e and e.to_dict())
    link = client.link("concert", "Which singers are from France?")
    tap.ok(any(t.get("name") == "singer" for t in link.tables or []), "link_names_the_singer_table",
           diag=repr(link)[:600])
    desc = client.describe("concert", tables=["singer"])
    tap.ok([t.name for t in desc.tables] == ["singer"] and isinstance(desc.tables[0].columns[0], text2sqld.DescribedColumn),
           "describe_is_typed", diag=repr(desc)[:600])
    evid = client.evidence("concert", "Which singers are from France?")
    tap.ok(isinstance(evid, text2sqld.EvidenceResult) and isinstance(evid.values, list), "evidence_is_typed",
           diag=repr(evid)[:600])

    events = list(client.stream("concert", question))
    names = [e.event for e in events]
    last = events[-1] if events else None
    tap.ok(last is not None and last.event == "result" and last.answer.sql == answer.sql and
           last.answer.rows == [[2]], "stream_ends_with_the_result_answer", diag=names)
    tap.ok(len(events) > 1 and all(isinstance(e.data, dict) for e in events) and "result" not in names[:-1],
           "stream_yields_stage_events_first", diag=names)

    e = raises(lambda: client.query("no_such_database", question))
    tap.ok(e is not None and e.status == 404 and e.type == "urn:text2sqld:problem:not-found" and e.slug == "not-found"
           and e.title and "no_such_database" in e.detail and e.instance == "/v1/query" and e.request_id,
           "unknown_database_raises_problem_error_with_its_fields", diag=e and e.to_dict())
    e = raises(lambda: client.execute("concert", "DELETE FROM singer"))
    tap.ok(e is not None and e.status == 403 and e.slug == "sql-rejected", "write_raises_sql_rejected",
           diag=e and e.to_dict())
    e = raises(lambda: Client(svc.base_url).databases())
    tap.ok(e is not None and e.status == 401 and e.slug == "unauthorized", "no_key_raises_401", diag=e and e.to_dict())
    e = raises(lambda: client.add_example("concert", "How many concerts?", "SELECT count(*) FROM concert"))
    tap.ok(e is not None and e.status == 403 and e.extensions.get("required_scope") == "admin",
           "missing_scope_raises_403_with_its_extension", diag=e and e.to_dict())
    e = raises(lambda: client.query("concert", question, options={"candidates": 0}))
    tap.ok(e is not None and e.status == 400 and "options.candidates" in e.detail, "bad_option_raises_400",
           diag=e and e.to_dict())
    tap.ok(client.health().get("status") == "ok", "health_answers")


def test_admin(svc):
    admin = Client(svc.base_url, api_key=ADMIN_KEY)
    ex = admin.add_example("concert", "How many concerts are there?", "SELECT count(*) FROM concert")
    tap.ok(isinstance(ex, text2sqld.Example) and ex.id, "add_example_returns_it", diag=repr(ex))
    page = admin.examples("concert", limit=10)
    tap.ok(any(x.id == ex.id for x in page.examples), "examples_lists_it", diag=repr(page)[:400])
    tap.eq(admin.example("concert", ex.id).sql, "SELECT count(*) FROM concert", "example_gets_it")
    gone = admin.delete_example("concert", ex.id)
    tap.ok(gone.deleted is True and gone.id == ex.id, "delete_example_deletes_it", diag=repr(gone))
    ov = admin.set_descriptions("concert", [{"table": "singer", "column": "age", "text": "Age in years."}])
    tap.ok(any(o.table == "singer" and o.column == "age" for o in ov.overrides) and
           admin.descriptions("concert").overrides[0].text == "Age in years.", "descriptions_round_trip",
           diag=repr(ov))
    fb = admin.feedback("concert", "How many singers?", "SELECT count(*) FROM singer", False, note="checking")
    tap.ok(isinstance(fb, text2sqld.Feedback) and fb.correct is False and fb.note == "checking", "feedback_stored",
           diag=repr(fb))
    tap.ok(admin.feedback_get(fb.id).id == fb.id and any(f.id == fb.id for f in admin.feedback_list(correct=False).feedback),
           "feedback_listed_and_got")
    r = admin.refresh("concert")
    tap.ok(isinstance(r, text2sqld.RefreshResult) and r.changed is False and r.name == "concert", "refresh_is_typed",
           diag=repr(r))


def run():
    test_against_document()
    db_path = fixtures.write_sqlite(os.path.join(TMP, "concert.sqlite"), fixtures.SMALL_CONCERT_SCHEMA,
                                    fixtures.SMALL_CONCERT_ROWS)
    stub = fixtures.ModelStub()
    try:
        stub.rules([{"match": {"contains": "from France"},
                     "respond": {"content": "```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```"}}],
                   default_content="```sql\nSELECT count(*) FROM singer\n```")
        digest = lambda k: hashlib.sha256(k.encode()).hexdigest()  # noqa: E731
        cfg = {"databases": [{"name": "concert", "url": "sqlite://" + db_path}],
               "auth": {"api_keys": [{"name": "py", "key_sha256": digest(KEY), "databases": ["*"]},
                                     {"name": "admin", "key_sha256": digest(ADMIN_KEY), "databases": ["*"],
                                      "scopes": ["query", "admin"]}]},
               "state": {"url": "sqlite://" + os.path.join(TMP, "state.sqlite")},
               "generate": {"cache_ttl_s": 0},
               "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 20000, "retries": 0}},
               "log": {"level": "warn", "access": False}}
        with fixtures.serving(tap, cfg, "python_client_service_exits_0") as svc:
            test_live(svc)
            test_admin(svc)
    finally:
        stub.close()


if __name__ == "__main__":
    sys.exit(fixtures.run_guarded(tap, "python_client_test", run))
