#!/usr/bin/env python3
"""test_openapi.py - openapi/openapi.json is the contract the service keeps.

Checks, in order:
  1. the document itself: OpenAPI 3.1.0 with the 2020-12 dialect, every local
     $ref resolves, every operation documents X-Request-Id on every response,
     every 4xx/5xx response is application/problem+json built on the shared
     Problem schema;
  2. GET /openapi.json serves exactly the file's bytes (and JSON);
  3. the (method, path) pairs of the route table in server/routes.c (parsed
     as text) equal the operations of the document, the routes marked
     public are exactly the operations with `security: []`, and every other
     operation's `x-required-scope` is the scope routes.c requires;
  4. live responses of every endpoint, success and error (400, 401, 403,
     404, 405, 413, 415, 422, 502, 503, 504), from a service on a SQLite
     fixture written here, from one with API keys, from one with no
     reachable database, from one whose state store cannot be opened, from
     one whose link model, one whose describe and evidence models, and one
     whose generate, fallback and debug models are tests/stub/model_stub.py
     (POST /generate and /query: answers, generation-failed, model errors,
     timeouts, open circuit breakers, /readyz's checks.generation), and
     (when T2S_TEST_PG_* is set) from one on a PostgreSQL database created
     here plus the Spider databases of T2S_TEST_PG_SPIDER_DBS: each status
     must be documented for its operation (exactly, not through 4XX or
     default) and the body must validate against the documented schema for
     that status and Content-Type;
  5. every operation declares the statuses the connection layer may answer
     on any path (408 head/body deadline, 414, 431, 429 too-many-connections
     and, where a key is needed, rate-limited and
     too-many-concurrent-requests, 501 transfer coding, 503
     overloaded with Retry-After, 505), and live 414, 431, 501, 505 and 429
     (a key over its rate) answers validate against them.
Every response must carry X-Request-Id (the client's when acceptable).

/evidence answers `value_index: building` until the database's value index,
built in the background after startup, is ready: the checks poll it (bounded
by EVIDENCE_READY_S) before asserting values, and validate the interim
answers too.
"""

import hashlib
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_ROOT, "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
DOC_PATH = os.path.join(SOURCE_ROOT, "openapi", "openapi.json")
ROUTES_PATH = os.path.join(SOURCE_ROOT, "server", "routes.c")
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
REQUEST_ID_RX = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
TMP = fixtures.scratch_dir("t2s-openapi-test-")
MAX_BODY = 2048
TIMEOUT_MS = 400
EVIDENCE_READY_S = 120  # generous: sanitizer builds on a busy machine
SLOW_SQLITE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
# Keep the test's own environment from overriding the configs written here.
CLEAN_ENV = {"TEXT2SQLD_LISTEN_HOST": None, "TEXT2SQLD_LISTEN_PORT": None, "TEXT2SQLD_REDIS_URL": None}

with open(DOC_PATH, "rb") as _f:
    DOC_BYTES = _f.read()
DOC = json.loads(DOC_BYTES.decode("utf-8"))

# Error statuses whose body is not a problem: /readyz answers 503 with the
# same readiness report as 200.
NOT_PROBLEMS = {("GET", "/readyz", "503")}
# (operation key "METHOD /template") -> set of statuses seen live
SEEN = {}


# --------------------------------------------------------------------------- the document

def walk(node, path="#"):
    """Yields (json pointer, dict) for every object in node."""
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from walk(v, path + "/" + str(k).replace("~", "~0").replace("/", "~1"))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, "%s/%d" % (path, i))


def deref(node):
    while isinstance(node, dict) and "$ref" in node:
        node = t2s.resolve_ref(node["$ref"], DOC)
    return node


def operations():
    """{(METHOD, template): operation} of the document."""
    ops = {}
    for template, item in DOC.get("paths", {}).items():
        item = deref(item)
        for m in METHODS:
            if m in item:
                ops[(m.upper(), template)] = item[m]
    return ops


def test_document():
    tap.eq(DOC.get("openapi"), "3.1.0", "document_declares_openapi_3_1_0")
    tap.eq(DOC.get("jsonSchemaDialect"), "https://json-schema.org/draft/2020-12/schema",
           "document_declares_json_schema_2020_12_dialect")
    bad_refs = []
    for ptr, node in walk(DOC):
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                t2s.resolve_ref(ref, DOC)
            except (KeyError, IndexError, ValueError):
                bad_refs.append("%s -> %s" % (ptr, ref))
    tap.ok(not bad_refs, "every_ref_in_document_resolves", diag="\n".join(bad_refs))

    problem = DOC.get("components", {}).get("schemas", {}).get("Problem", {})
    tap.eq(sorted(problem.get("required", [])), ["detail", "status", "title", "type"],
           "problem_schema_requires_type_title_status_detail")
    tap.ok({"instance", "request_id"} <= set(problem.get("properties", {})),
           "problem_schema_documents_instance_and_request_id")

    missing_rid, not_problem = [], []
    for (method, template), op in operations().items():
        params = [deref(p) for p in op.get("parameters", []) + deref(DOC["paths"][template]).get("parameters", [])]
        if not any(p.get("in") == "header" and p.get("name", "").lower() == "x-request-id" for p in params):
            missing_rid.append("%s %s: no X-Request-Id parameter" % (method, template))
        for status, resp in op.get("responses", {}).items():
            resp = deref(resp)
            if not any(k.lower() == "x-request-id" for k in resp.get("headers", {})):
                missing_rid.append("%s %s %s: no X-Request-Id header" % (method, template, status))
            if status[0] in "45" and (method, template, status) not in NOT_PROBLEMS:
                content = resp.get("content", {})
                schema = content.get("application/problem+json", {}).get("schema", {})
                uses_problem = schema.get("$ref") == "#/components/schemas/Problem" or any(
                    s.get("$ref") == "#/components/schemas/Problem" for s in schema.get("allOf", []))
                if list(content) != ["application/problem+json"] or not uses_problem:
                    not_problem.append("%s %s %s" % (method, template, status))
    tap.ok(not missing_rid, "every_operation_documents_x_request_id_in_and_out", diag="\n".join(missing_rid))
    tap.ok(not not_problem, "every_error_response_is_problem_json_on_shared_schema", diag="\n".join(not_problem))
    schemes = DOC.get("components", {}).get("securitySchemes", {})
    bearer = [n for n, s in schemes.items() if s.get("type") == "http" and s.get("scheme") == "bearer"]
    tap.ok(len(bearer) == 1 and DOC.get("security") == [{bearer[0]: []}],
           "bearer_scheme_is_the_default_security", diag=lambda: repr((schemes, DOC.get("security"))))
    req = DOC["paths"].get("/v1/execute", {}).get("post", {}).get("requestBody", {})
    body_schema = deref(req.get("content", {}).get("application/json", {}).get("schema", {}))
    tap.ok(body_schema.get("additionalProperties") is False and
           sorted(body_schema.get("required", [])) == ["database", "sql"],
           "execute_request_schema_is_closed_and_requires_database_and_sql", diag=repr(body_schema))
    open_bodies = []
    for (method, template), op in operations().items():
        content = deref(op.get("requestBody", {})).get("content", {})
        for media in content.values():
            schema = deref(media.get("schema", {}))
            if schema.get("type") != "object" or schema.get("additionalProperties") is not False:
                open_bodies.append("%s %s" % (method, template))
    tap.ok(not open_bodies, "every_request_body_schema_is_a_closed_object", diag="\n".join(open_bodies))
    # The document promises that response objects may gain fields: no response schema forbids them
    # (the live checks make sure every field the service sends is documented, t2s.undocumented_fields).
    closed = []
    for (method, template), op in operations().items():
        for status, resp in op.get("responses", {}).items():
            for media in deref(resp).get("content", {}).values():
                seen = set()
                stack = [media.get("schema", {})]
                while stack:
                    node = stack.pop()
                    if isinstance(node, dict):
                        ref = node.get("$ref")
                        if isinstance(ref, str) and ref not in seen:
                            seen.add(ref)
                            stack.append(t2s.resolve_ref(ref, DOC))
                        if node.get("additionalProperties") is False:
                            closed.append("%s %s %s" % (method, template, status))
                        stack.extend(v for k, v in node.items() if k != "$ref")
                    elif isinstance(node, list):
                        stack.extend(node)
    tap.ok(not closed, "no_response_schema_forbids_new_fields", diag="\n".join(sorted(set(closed))))
    info = DOC.get("info", {}).get("description", "")
    tap.ok("may gain new fields" in info, "document_says_responses_may_gain_fields")
    test_connection_statuses_declared()


def problem_types(resp):
    """The problem type URNs a (dereferenced) response's schema allows."""
    schema = resp.get("content", {}).get("application/problem+json", {}).get("schema", {})
    out = set()
    for part in schema.get("allOf", []):
        out.update(part.get("properties", {}).get("type", {}).get("enum", []))
    return out


def test_connection_statuses_declared():
    """The connection layer (server/http_listener.c, http_head.c, the request
    deadlines) answers on any path: every operation declares those statuses."""
    urn = "urn:text2sqld:problem:"
    missing = []
    for (method, template), op in operations().items():
        rs = {k: deref(v) for k, v in op.get("responses", {}).items()}
        want = {"408": {"request-timeout"}, "414": {"uri-too-long"}, "431": {"headers-too-large"},
                "501": {"not-implemented"}, "505": {"http-version-not-supported"}, "503": {"overloaded"},
                "429": {"too-many-connections"} | (set() if op.get("security") == [] else {"rate-limited", "too-many-concurrent-requests"})}
        for status, slugs in sorted(want.items()):
            if status not in rs:
                missing.append("%s %s: no %s" % (method, template, status))
            elif not {urn + x for x in slugs} <= problem_types(rs[status]):
                missing.append("%s %s %s: types %s lack %s" % (method, template, status,
                                                               sorted(problem_types(rs[status])), sorted(slugs)))
            elif status in ("429", "503") and "Retry-After" not in rs[status].get("headers", {}):
                missing.append("%s %s %s: no Retry-After header" % (method, template, status))
    tap.ok(not missing, "every_operation_declares_connection_layer_statuses", diag="\n".join(missing))


def raw_call(svc, data, method, path, name, want, slug):
    """Sends raw bytes (a request the HTTP client would not write), then
    checks the status, that it is documented for (method, path), and that
    the problem body validates against the documented schema."""
    import socket
    with socket.create_connection((svc.host, svc.port), timeout=10) as sock:
        sock.sendall(data)
        got = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if len(lines[0].split()) > 1 else 0
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    tap.eq(status, want, "%s_answers_%d" % (name, want))
    template = template_for(method, path)
    tap.ok(str(status) in documented_statuses(method, template), "%s_status_%d_is_documented" % (name, status))
    SEEN.setdefault("%s %s" % (method, template), set()).add(str(status))
    try:
        doc = json.loads(body)
        schema = t2s.openapi_response_schema(DOC, path, method.lower(), status, headers.get("content-type", ""))
        errs = t2s.validate(doc, schema, DOC)
    except (ValueError, LookupError) as e:
        doc, errs = None, [str(e)]
    tap.ok(not errs, name + "_matches_documented_schema", diag="\n".join(errs) + "\n" + got[:300].decode("latin-1"))
    tap.eq((doc or {}).get("type"), "urn:text2sqld:problem:" + slug, name + "_problem_type_is_" + slug)
    tap.ok(REQUEST_ID_RX.match(headers.get("x-request-id", "")), name + "_carries_x_request_id")


def connection_layer_checks(svc):
    """Live answers of the connection layer, validated against the operation they were meant for."""
    call(svc, "GET", "/databases?pad=" + "x" * (9 << 10), "uri_over_limit", 414, problem_type="uri-too-long")
    call(svc, "GET", "/databases", "head_over_limit", 431, problem_type="headers-too-large",
         headers={"X-Pad-%d" % i: "y" * 4000 for i in range(10)})
    raw_call(svc, b"POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Transfer-Encoding: gzip\r\n\r\n", "POST", "/execute", "unknown_transfer_coding", 501,
             "not-implemented")
    raw_call(svc, b"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", "GET", "/healthz", "http_version_2_0", 505,
             "http-version-not-supported")


# --------------------------------------------------------------------------- routes.c

ROUTE_RX = re.compile(r'\{\s*"([A-Z]+)"\s*,\s*"([^"]+)"\s*,\s*(\w+)\s*,\s*(ROUTE_PUBLIC|API_SCOPE_QUERY|API_SCOPE_ADMIN)\s*\}')
SCOPES = {"ROUTE_PUBLIC": None, "API_SCOPE_QUERY": "query", "API_SCOPE_ADMIN": "admin"}


def parse_routes():
    """{(method, path): scope} of the route table; scope None for a public route."""
    with open(ROUTES_PATH, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    table = text[text.index("routes[]"):]
    # An API route (one that takes a key) is documented under /v1 (server/router.h).
    return {(m, p if scope == "ROUTE_PUBLIC" else "/v1" + p): SCOPES[scope]
            for m, p, _h, scope in ROUTE_RX.findall(table)}


def test_routes_match_document():
    routes = parse_routes()
    tap.ok(len(routes) >= 8, "routes_c_table_parses", diag=repr(routes))
    ops = operations()
    tap.eq(sorted(routes), sorted(ops), "routes_c_and_document_have_the_same_operations")
    wrong, scopes = [], []
    for key, scope in routes.items():
        op = ops.get(key)
        if op is None:
            continue
        doc_public = op.get("security", None) == []
        if doc_public != (scope is None):
            wrong.append("%s %s: routes.c scope=%s, document security=%r" % (key[0], key[1], scope,
                                                                              op.get("security")))
        if op.get("x-required-scope") != scope:
            scopes.append("%s %s: routes.c scope=%s, document x-required-scope=%r" % (key[0], key[1], scope,
                                                                                      op.get("x-required-scope")))
    tap.ok(not wrong, "public_routes_are_exactly_the_operations_without_security", diag="\n".join(wrong))
    tap.ok(not scopes, "each_operation_documents_the_scope_routes_c_requires", diag="\n".join(scopes))


# --------------------------------------------------------------------------- live checks

def template_for(method, path):
    """The document's path template matching a concrete path (literal first; an unversioned API
    path is looked up under /v1)."""
    path = t2s.openapi_path(DOC, path.split("?", 1)[0])
    paths = DOC["paths"]
    if path in paths:
        return path
    for t in paths:
        if "{" in t and t2s._match_path(t, path):
            return t
    return None


def documented_statuses(method, template):
    op = deref(DOC["paths"][template]).get(method.lower(), {})
    return set(op.get("responses", {}))


def check_request_id(r, sent, name):
    got = r.headers.get("X-Request-Id")
    if sent is not None and REQUEST_ID_RX.match(sent):
        return tap.eq(got, sent, name + "_echoes_x_request_id")
    return tap.ok(got is not None and re.match(r"^[0-9a-f]{32}$", got),
                  name + "_carries_generated_x_request_id", diag=repr(got))


def call(svc, method, path, name, want, json_body=None, body=None, headers=None, problem_type=None,
         timeout=30):
    """Sends a request and checks: status == want, the status is documented
    for this operation (exactly), the body matches the documented schema,
    the response carries X-Request-Id; problem_type (a slug) when given.
    Returns the Response."""
    hdrs = dict(headers or {})
    r = svc.request(method, path, json=json_body, body=body, headers=hdrs, timeout=timeout)
    tap.eq(r.status, want, "%s_answers_%d" % (name, want))
    template = template_for(method, path)
    if template is None or method.lower() not in deref(DOC["paths"][template]):
        tap.ok(False, name + "_operation_is_documented", diag="%s %s" % (method, path))
        return r
    SEEN.setdefault("%s %s" % (method, template), set()).add(str(r.status))
    tap.ok(str(r.status) in documented_statuses(method, template), "%s_status_%d_is_documented" %
           (name, r.status), diag=lambda: "documented: %s" % sorted(documented_statuses(method, template)))
    ctype = (r.headers.get("Content-Type") or "").split(";")[0].strip()
    if r.status == 200 and not (ctype == "application/json" or ctype.endswith("+json")):
        # Text bodies (the metrics exposition, the playground's files): the media type is documented
        # for this status, and the body is what that media type says.
        schema_ok = True
        try:
            t2s.openapi_response_schema(DOC, path, method, r.status, ctype)
        except LookupError as e:
            schema_ok = False
            tap.ok(False, name + "_matches_documented_schema", diag=str(e))
        if schema_ok:
            # The body is what its media type says: the metrics exposition, an HTML page, a style sheet...
            if template == "/metrics":
                mark = "# TYPE text2sqld_http_requests_total counter"
            else:
                mark = {"text/html": "<!doctype html", "text/css": "{"}.get(ctype)
            tap.ok(mark.lower() in r.text.lower() if mark else len(r.body) > 0, name + "_matches_documented_schema",
                   diag=r.text[:500])
    else:
        t2s.check_response(tap, DOC, r, method, path, name + "_matches_documented_schema")
    if problem_type is not None:
        got = r.json.get("type") if isinstance(r.json, dict) else None
        tap.eq(got, "urn:text2sqld:problem:" + problem_type, name + "_problem_type_is_" + problem_type)
    check_request_id(r, {k.lower(): v for k, v in hdrs.items()}.get("x-request-id"), name)
    return r


def call_undocumented(svc, method, path, name, want, slug, headers=None, body=None):
    """A request no operation describes (unknown path, wrong method): checks
    the status, the Problem shape and, for 405, that every operation of the
    path documents 405 and that Allow lists exactly the documented methods."""
    r = svc.request(method, path, headers=headers, body=body)
    tap.eq(r.status, want, "%s_answers_%d" % (name, want))
    if want == 405:
        template = template_for(method, path)
        item = deref(DOC["paths"][template])
        ops = [m for m in METHODS if m in item]
        tap.ok(ops and all("405" in item[m].get("responses", {}) for m in ops),
               name + "_405_documented_on_every_operation_of_the_path", diag=repr(ops))
        schema = t2s.openapi_response_schema(DOC, path, ops[0], 405, r.headers.get("Content-Type", ""))
        errs = t2s.validate(r.json, schema, DOC)
        tap.ok(not errs, name + "_matches_documented_405_schema", diag="\n".join(errs))
        allow = sorted(a.strip() for a in (r.headers.get("Allow") or "").split(","))
        want_allow = sorted([m.upper() for m in ops] + (["HEAD"] if "get" in ops else []))
        tap.eq(allow, want_allow, name + "_allow_header_lists_documented_methods")
    else:
        ctype = (r.headers.get("Content-Type") or "").split(";")[0].strip()
        errs = t2s.validate(r.json, {"$ref": "#/components/schemas/Problem"}, DOC)
        tap.ok(ctype == "application/problem+json" and not errs, name + "_is_a_documented_problem",
               diag="content type %s; %s" % (ctype, "\n".join(errs)))
    got = r.json.get("type") if isinstance(r.json, dict) else None
    tap.eq(got, "urn:text2sqld:problem:" + slug, name + "_problem_type_is_" + slug)
    check_request_id(r, None, name)
    return r


def poll_evidence(svc, database, question, headers=None):
    """POSTs /evidence until value_index is no longer "building" (at most
    EVIDENCE_READY_S seconds). Returns (last response, earlier responses
    that said "building")."""
    deadline = time.monotonic() + EVIDENCE_READY_S
    building = []
    while True:
        r = svc.request("POST", "/evidence", json={"database": database, "question": question},
                        headers=headers, timeout=60)
        if r.status != 200 or (r.json or {}).get("value_index") != "building" or time.monotonic() > deadline:
            return r, building
        building.append(r)
        time.sleep(0.1)


def evidence_ready(svc, database, question, name, headers=None):
    """Waits for the value index of database (poll_evidence), then checks
    that it became ready and that the answers given while it was building
    match the documented schema and are marked partial. Returns the
    checked final Response of call()."""
    r, building = poll_evidence(svc, database, question, headers)
    tap.eq((r.json or {}).get("value_index") if r.status == 200 else r.status, "ready",
           name + "_value_index_becomes_ready")
    if building:
        errs = []
        for b in building:
            errs += t2s.validate(b.json, t2s.openapi_response_schema(DOC, "/evidence", "POST", 200), DOC)
            if (b.json or {}).get("partial") is not True or "value_index_stats" in (b.json or {}):
                errs.append("building answer not partial or with index stats: %r" % b.json)
        tap.ok(not errs, name + "_answers_while_building_match_documented_schema", diag="\n".join(errs[:20]))
    else:
        tap.skip(name + "_answers_while_building_match_documented_schema", "value index was ready at once")
    return call(svc, "POST", "/evidence", name, 200, headers=headers,
                json_body={"database": database, "question": question})


def docs_checks(svc):
    """GET /docs: an HTML page whose every script, stylesheet and the spec it
    loads are served by the service itself (relative URLs), with a
    Content-Security-Policy that forbids loading anything from elsewhere."""
    r = call(svc, "GET", "/docs", "get_docs", 200)
    tap.eq((r.headers.get("Content-Type") or "").split(";")[0], "text/html", "get_docs_is_html")
    csp = r.headers.get("Content-Security-Policy") or ""
    tap.ok("default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp and
           "http" not in csp, "get_docs_csp_allows_only_this_service", diag=csp)
    urls = re.findall(r'(?:src|href)="([^"]*)"', r.text)
    tap.ok(urls and all(u.startswith("docs/") or u in ("openapi.json", "data:,") for u in urls),
           "get_docs_references_only_relative_urls", diag=repr(urls))
    for u in urls:
        if u.startswith("docs/"):
            a = call(svc, "GET", "/" + u, "get_docs_asset_" + re.sub(r"\W", "_", u[5:]), 200)
            tap.ok(len(a.body) > 100, "get_docs_asset_%s_has_content" % re.sub(r"\W", "_", u[5:]))
    js = svc.request("GET", "/docs/init.js")
    tap.ok("openapi.json" in js.text and "validatorUrl: null" in js.text and "spec.servers" in js.text,
           "docs_init_loads_this_services_document_without_the_online_validator", diag=js.text[:400])
    bundle = svc.request("GET", "/docs/swagger-ui-bundle.js")
    tap.ok(b"SwaggerUIBundle" in bundle.body and len(bundle.body) > 500000, "docs_serves_swagger_ui_bundle",
           diag="%d bytes" % len(bundle.body))
    call(svc, "GET", "/docs/LICENSE", "get_docs_swagger_ui_license", 200)
    call(svc, "GET", "/docs/nothing.js", "get_docs_unknown_file", 404, problem_type="not-found")
    call(svc, "GET", "/docs/index.html", "get_docs_index_by_file_name", 404, problem_type="not-found")


def stop_ok(svc, name):
    fixtures.stop_ok(tap, svc, name + "_exits_0_on_sigterm")
    svc.close()


# --------------------------------------------------------------------------- fixtures

FIXTURE = fixtures.write_sqlite(os.path.join(TMP, "fixture.sqlite"), """
    CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT, age INTEGER, active TEXT);
    CREATE TABLE concert (id INTEGER PRIMARY KEY, singer_id INTEGER REFERENCES singer(id),
                          year INTEGER, fee REAL, poster BLOB, untyped);
    CREATE VIEW french_singer AS SELECT name FROM singer WHERE country = 'France';
    INSERT INTO singer VALUES (1, 'Ann', 'France', 30, 'T'), (2, 'Bob', NULL, 41, 'F');
    INSERT INTO concert VALUES (1, 1, 2014, 10.5, x'00ff', 'x'), (2, 2, 2015, NULL, NULL, 3);
""")
MISSING = os.path.join(TMP, "missing", "nowhere.sqlite")


def base_config(databases, **execution):
    ex = {"timeout_ms": TIMEOUT_MS, "max_result_bytes": 4096}
    ex.update(execution)
    # The services of this file administer without keys (descriptions, examples, refresh): opted in.
    return {"limits": {"max_body_bytes": MAX_BODY}, "execution": ex, "databases": databases,
            "auth": {"allow_anonymous_writes": True}}


def test_sqlite_service():
    cfg = base_config([{"name": "fx", "url": "sqlite://" + FIXTURE},
                       {"name": "gone", "url": "sqlite://" + MISSING}])
    redis = os.environ.get("T2S_TEST_REDIS_URL")
    if redis:
        cfg["redis"] = {"url": redis}
    svc = t2s.Service(cfg, env=CLEAN_ENV).start()
    try:
        r = svc.request("GET", "/openapi.json")
        tap.ok(r.body == DOC_BYTES, "get_openapi_json_serves_the_file_byte_for_byte",
               diag=lambda: "served %d bytes, file %d bytes (rebuild after editing openapi/openapi.json?)"
               % (len(r.body), len(DOC_BYTES)))
        tap.ok(r.json == DOC, "get_openapi_json_serves_the_files_json",
               diag="the served document differs from openapi/openapi.json")
        call(svc, "GET", "/openapi.json", "get_openapi_json", 200)
        docs_checks(svc)
        connection_layer_checks(svc)

        call(svc, "GET", "/healthz", "healthz", 200, headers={"X-Request-Id": "oa-test.1:2_x"})
        for path, name in (("/", "playground_page"), ("/playground/app.js", "playground_script"),
                           ("/playground/style.css", "playground_stylesheet")):
            r = call(svc, "GET", path, name, 200)
            csp = r.headers.get("Content-Security-Policy") or ""
            tap.ok("default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp and
                   "frame-ancestors 'none'" in csp and "http" not in csp and
                   r.headers.get("X-Content-Type-Options") == "nosniff",
                   name + "_csp_allows_only_this_service_and_no_framing", diag=csp)
        call(svc, "GET", "/playground/secrets.txt", "playground_unknown_file", 404, problem_type="not-found")
        r0 = r = call(svc, "GET", "/readyz", "readyz_with_one_db_down", 200)
        tap.eq((r.json or {}).get("status"), "degraded", "readyz_with_one_db_down_says_degraded")
        if redis:
            tap.eq(((r.json or {}).get("checks") or {}).get("redis"), {"status": "up"},
                   "readyz_reports_redis_up")
        else:
            tap.skip("readyz_reports_redis_up", "T2S_TEST_REDIS_URL not set")
        r = call(svc, "GET", "/readyz?strict=1", "readyz_strict_with_one_db_down", 503)
        tap.eq((r.json or {}).get("status"), "degraded", "readyz_strict_with_one_db_down_says_degraded")
        call(svc, "GET", "/metrics", "metrics", 200)

        r = call(svc, "GET", "/databases", "list_databases", 200, headers={"X-Request-Id": "bad id!"})
        by_name = {d.get("name"): d for d in (r.json or {}).get("databases", [])}
        tap.ok(by_name.get("fx", {}).get("status") == "up" and by_name.get("gone", {}).get("status") == "down"
               and "error" in by_name.get("gone", {}), "list_databases_reports_fixture_up_and_missing_down",
               diag=repr(r.json))
        r = call(svc, "GET", "/databases/fx", "get_sqlite_database", 200)
        tables = {t.get("name"): t for t in (r.json or {}).get("tables", [])}
        tap.ok(tables.get("french_singer", {}).get("kind") == "view" and
               tables.get("concert", {}).get("foreign_keys"), "get_sqlite_database_shows_view_and_foreign_key",
               diag=repr(sorted(tables)))
        call(svc, "GET", "/databases/nope", "get_unknown_database", 404, problem_type="not-found")
        call(svc, "GET", "/databases/gone", "get_unreachable_database", 503, problem_type="unavailable")
        call(svc, "POST", "/databases/fx/refresh", "refresh_sqlite_database", 200)
        call(svc, "POST", "/databases/nope/refresh", "refresh_unknown_database", 404, problem_type="not-found")
        call(svc, "POST", "/databases/gone/refresh", "refresh_unreachable_database", 503,
             problem_type="unavailable")
        call(svc, "POST", "/databases/fx/refresh", "refresh_with_text_body", 415, body="x",
             headers={"Content-Type": "text/plain"}, problem_type="unsupported-media-type")

        before = t2s.sqlite_checksum(FIXTURE)
        ex = "/execute"
        r = call(svc, "POST", ex, "execute_select_all_types", 200,
                 json_body={"database": "fx", "sql": "SELECT * FROM concert ORDER BY id"})
        tap.eq((r.json or {}).get("rows"), [[1, 1, 2014, 10.5, "\\x00ff", "x"], [2, 2, 2015, None, None, 3]],
               "execute_select_all_types_returns_the_rows")
        r = call(svc, "POST", ex, "execute_truncated_by_max_rows", 200,
                 json_body={"database": "fx", "sql": "SELECT id FROM singer", "max_rows": 1})
        tap.eq((r.json or {}).get("truncated_by"), "max_rows", "execute_truncated_by_max_rows_says_so")
        r = call(svc, "POST", ex, "execute_truncated_by_result_bytes", 200,
                 json_body={"database": "fx", "sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
                            "FROM c WHERE x < 200) SELECT x, printf('%.100c', 'a') FROM c"})
        tap.eq((r.json or {}).get("truncated_by"), "max_result_bytes",
               "execute_truncated_by_result_bytes_says_so")
        call(svc, "POST", ex, "execute_null_max_rows", 200,
             json_body={"database": "fx", "sql": "SELECT 1", "max_rows": None})
        call(svc, "POST", ex, "execute_unknown_field", 400, problem_type="invalid-request",
             json_body={"database": "fx", "sql": "SELECT 1", "limit": 3})
        call(svc, "POST", ex, "execute_malformed_json", 400, body='{"database": "fx",',
             headers={"Content-Type": "application/json"}, problem_type="invalid-request")
        call(svc, "POST", ex, "execute_array_body", 400, json_body=[1], problem_type="invalid-request")
        call(svc, "POST", ex, "execute_missing_sql", 400, json_body={"database": "fx"},
             problem_type="invalid-request")
        call(svc, "POST", ex, "execute_string_max_rows", 400, problem_type="invalid-request",
             json_body={"database": "fx", "sql": "SELECT 1", "max_rows": "5"})
        call(svc, "POST", ex, "execute_sqlite_unknown_table", 400, problem_type="sql-invalid",
             json_body={"database": "fx", "sql": "SELECT * FROM nosuch"})
        call(svc, "POST", ex, "execute_sqlite_delete", 403, problem_type="sql-rejected",
             json_body={"database": "fx", "sql": "DELETE FROM singer"})
        call(svc, "POST", ex, "execute_sqlite_two_statements", 403, problem_type="sql-rejected",
             json_body={"database": "fx", "sql": "SELECT 1; SELECT 2"})
        tap.eq(t2s.sqlite_checksum(FIXTURE), before, "execute_rejections_leave_sqlite_data_unchanged")
        call(svc, "POST", ex, "execute_unknown_database", 404, problem_type="not-found",
             json_body={"database": "nope", "sql": "SELECT 1"})
        call(svc, "POST", ex, "execute_oversized_body", 413, problem_type="payload-too-large",
             json_body={"database": "fx", "sql": "SELECT '%s'" % ("x" * MAX_BODY)})
        call(svc, "POST", ex, "execute_text_plain_body", 415, body="SELECT 1",
             headers={"Content-Type": "text/plain"}, problem_type="unsupported-media-type")
        call(svc, "POST", ex, "execute_sqlite_integer_overflow", 422, problem_type="sql-failed",
             json_body={"database": "fx", "sql": "SELECT abs(-9223372036854775808)"})
        call(svc, "POST", ex, "execute_on_unreachable_database", 503, problem_type="unavailable",
             json_body={"database": "gone", "sql": "SELECT 1"})
        call(svc, "POST", ex, "execute_sqlite_endless_query", 504, problem_type="timeout",
             json_body={"database": "fx", "sql": SLOW_SQLITE})

        r = call(svc, "POST", "/link", "link_vector", 200,
                 json_body={"database": "fx", "question": "Which singers from France gave concerts?"})
        tap.ok({"singer", "concert"} <= {t.get("name") for t in (r.json or {}).get("tables", [])} and
               (r.json or {}).get("joins"), "link_vector_links_singer_and_concert_with_a_join", diag=repr(r.json))
        r = call(svc, "POST", "/link", "link_llm_without_link_model", 200,
                 json_body={"database": "fx", "question": "concert fees", "mode": "llm", "top_k": 2})
        tap.ok((r.json or {}).get("mode") == "vector" and "fallback" in (r.json or {}),
               "link_llm_without_link_model_falls_back_to_vector", diag=repr(r.json))
        call(svc, "POST", "/link", "link_unknown_mode", 400, problem_type="invalid-request",
             json_body={"database": "fx", "question": "x", "mode": "magic"})
        call(svc, "POST", "/link", "link_unknown_field", 400, problem_type="invalid-request",
             json_body={"database": "fx", "question": "x", "sql": "SELECT 1"})
        call(svc, "POST", "/link", "link_unknown_database", 404, problem_type="not-found",
             json_body={"database": "nope", "question": "x"})
        call(svc, "POST", "/link", "link_unreachable_database", 503, problem_type="unavailable",
             json_body={"database": "gone", "question": "x"})
        call(svc, "POST", "/link", "link_oversized_body", 413, problem_type="payload-too-large",
             json_body={"database": "fx", "question": "x" * MAX_BODY})
        call(svc, "POST", "/link", "link_text_plain_body", 415, body="singers?",
             headers={"Content-Type": "text/plain"}, problem_type="unsupported-media-type")

        tap.eq(((r0.json or {}).get("checks") or {}).get("state"), {"status": "up"},
               "readyz_reports_state_store_up")
        generation = ((r0.json or {}).get("checks") or {}).get("generation") or {}
        tap.ok(generation.get("status") == "builtin_only" and "models.generate" in generation.get("reason", "")
               and "breakers" not in generation, "readyz_without_generate_model_reports_builtin_only",
               diag=repr(generation))
        for path in ("/generate", "/query"):
            op = path.strip("/")
            call(svc, "POST", path, op + "_without_generate_model", 422, problem_type="generation-unavailable",
                 json_body={"database": "fx", "question": "How many singers are there?",
                            "options": {"generator": "model"}})
            r = call(svc, "POST", path, op + "_builtin_without_generate_model", 200,
                     json_body={"database": "fx", "question": "How many singers are there?"})
            tap.ok(((r.json or {}).get("generator"), (r.json or {}).get("sql")) == ("builtin", "SELECT count(*) FROM singer"),
                   op + "_without_generate_model_answered_by_builtin", diag=r.text[:300])
            call(svc, "POST", path, op + "_builtin_refuses_without_generate_model", 422,
                 problem_type="builtin-refused",
                 json_body={"database": "fx", "question": "Which singers sang the saddest songs?"})
            call(svc, "POST", path, op + "_bad_generator_option", 400, problem_type="invalid-request",
                 json_body={"database": "fx", "question": "x", "options": {"generator": "oracle"}})
            call(svc, "POST", path, op + "_unknown_option_without_generate_model", 400,
                 problem_type="invalid-request",
                 json_body={"database": "fx", "question": "x", "options": {"temperature": 1}})
            call(svc, "POST", path, op + "_unknown_database_without_generate_model", 404, problem_type="not-found",
                 json_body={"database": "nope", "question": "x"})
        state_checks(svc)

        call_undocumented(svc, "GET", "/describe", "get_describe", 405, "method-not-allowed")
        call_undocumented(svc, "GET", "/evidence", "get_evidence", 405, "method-not-allowed")
        call_undocumented(svc, "POST", "/databases/fx/descriptions", "post_descriptions", 405, "method-not-allowed")
        call_undocumented(svc, "PATCH", "/databases/fx/examples", "patch_examples", 405, "method-not-allowed")
        call_undocumented(svc, "PUT", "/databases/fx/examples/1", "put_example", 405, "method-not-allowed")
        call_undocumented(svc, "DELETE", "/execute", "delete_execute", 405, "method-not-allowed")
        call_undocumented(svc, "GET", "/link", "get_link", 405, "method-not-allowed")
        call_undocumented(svc, "GET", "/generate", "get_generate", 405, "method-not-allowed")
        call_undocumented(svc, "PUT", "/query", "put_query", 405, "method-not-allowed")
        call_undocumented(svc, "GET", "/execute", "get_execute", 405, "method-not-allowed")
        call_undocumented(svc, "PUT", "/databases/fx", "put_database", 405, "method-not-allowed")
        call_undocumented(svc, "GET", "/databases/fx/refresh", "get_refresh", 405, "method-not-allowed")
        call_undocumented(svc, "POST", "/healthz", "post_healthz", 405, "method-not-allowed")
        call_undocumented(svc, "GET", "/no/such/endpoint", "unknown_path", 404, "not-found")
        call_undocumented(svc, "GET", "/databases/fx/tables", "unknown_subpath", 404, "not-found")
    finally:
        stop_ok(svc, "sqlite_service")


def state_checks(svc):
    """Descriptions, /describe, examples and /evidence on the service of
    test_sqlite_service (databases fx and gone, a fresh state store)."""
    d = "/databases/fx/descriptions"
    r = call(svc, "GET", d, "descriptions_get_empty", 200)
    tap.eq((r.json or {}).get("overrides"), [], "descriptions_get_empty_lists_no_overrides")
    r = call(svc, "PUT", d, "descriptions_put", 200, json_body={"descriptions": [
        {"table": "singer", "text": "People who sing"},
        {"table": "singer", "column": "age", "text": "Age in years"},
        {"table": "concert", "column": None, "text": "One show"}]})
    got = sorted(((o.get("table"), o.get("column"), o.get("text")) for o in (r.json or {}).get("overrides", [])),
                 key=repr)
    tap.eq(got, [("concert", None, "One show"), ("singer", "age", "Age in years"), ("singer", None, "People who sing")],
           "descriptions_put_answers_every_override")
    r = call(svc, "PUT", d, "descriptions_put_null_text", 200,
             json_body={"descriptions": [{"table": "concert", "text": None}]})
    tap.eq(sorted(((o.get("table"), o.get("column")) for o in (r.json or {}).get("overrides", [])), key=repr),
           [("singer", "age"), ("singer", None)], "descriptions_put_null_text_removes_the_override")
    call(svc, "PUT", d, "descriptions_put_unknown_column", 400, problem_type="invalid-request",
         json_body={"descriptions": [{"table": "singer", "column": "height", "text": "x"}]})
    call(svc, "PUT", d, "descriptions_put_unknown_table", 400, problem_type="invalid-request",
         json_body={"descriptions": [{"table": "band", "text": "x"}]})
    call(svc, "PUT", d, "descriptions_put_unknown_entry_field", 400, problem_type="invalid-request",
         json_body={"descriptions": [{"table": "singer", "text": "x", "lang": "en"}]})
    call(svc, "PUT", d, "descriptions_put_empty_list", 400, problem_type="invalid-request",
         json_body={"descriptions": []})
    call(svc, "PUT", d, "descriptions_put_numeric_text", 400, problem_type="invalid-request",
         json_body={"descriptions": [{"table": "singer", "text": 3}]})
    r = call(svc, "GET", d, "descriptions_get", 200)
    tap.eq(len((r.json or {}).get("overrides", [])), 2, "descriptions_rejected_puts_change_nothing")
    call(svc, "GET", "/databases/nope/descriptions", "descriptions_get_unknown_database", 404,
         problem_type="not-found")
    call(svc, "PUT", "/databases/nope/descriptions", "descriptions_put_unknown_database", 404,
         problem_type="not-found", json_body={"descriptions": [{"table": "singer", "text": "x"}]})
    call(svc, "PUT", "/databases/gone/descriptions", "descriptions_put_unreachable_database", 503,
         problem_type="unavailable", json_body={"descriptions": [{"table": "singer", "text": "x"}]})
    call(svc, "PUT", d, "descriptions_put_oversized_body", 413, problem_type="payload-too-large",
         json_body={"descriptions": [{"table": "singer", "text": "x" * MAX_BODY}]})
    call(svc, "PUT", d, "descriptions_put_text_plain_body", 415, body="x", headers={"Content-Type": "text/plain"},
         problem_type="unsupported-media-type")

    r = call(svc, "POST", "/describe", "describe_all_tables", 200, json_body={"database": "fx"})
    tables = {t.get("name"): t for t in (r.json or {}).get("tables", [])}
    tap.eq(sorted(tables), ["concert", "french_singer", "singer"], "describe_all_tables_describes_every_table")
    singer = tables.get("singer", {})
    cols = {c.get("name"): c for c in singer.get("columns", [])}
    tap.ok(singer.get("source") == "override" and singer.get("description") == "People who sing" and
           cols.get("age", {}).get("source") == "override" and cols.get("name", {}).get("source") == "metadata" and
           tables.get("concert", {}).get("source") == "metadata",
           "describe_applies_overrides_and_metadata_elsewhere", diag=repr(tables))
    tap.ok((r.json or {}).get("model_calls") == 0 and "warning" not in (r.json or {}),
           "describe_without_model_makes_no_model_call", diag=repr(r.json))
    r = call(svc, "POST", "/describe", "describe_one_table", 200,
             json_body={"database": "fx", "tables": ["concert", "concert"]})
    tap.eq([t.get("name") for t in (r.json or {}).get("tables", [])], ["concert"],
           "describe_one_table_describes_only_it_once")
    call(svc, "POST", "/describe", "describe_unknown_table", 404, problem_type="not-found",
         json_body={"database": "fx", "tables": ["band"]})
    call(svc, "POST", "/describe", "describe_empty_tables", 400, problem_type="invalid-request",
         json_body={"database": "fx", "tables": []})
    call(svc, "POST", "/describe", "describe_numeric_table_name", 400, problem_type="invalid-request",
         json_body={"database": "fx", "tables": [1]})
    call(svc, "POST", "/describe", "describe_unknown_field", 400, problem_type="invalid-request",
         json_body={"database": "fx", "mode": "llm"})
    call(svc, "POST", "/describe", "describe_unknown_database", 404, problem_type="not-found",
         json_body={"database": "nope"})
    call(svc, "POST", "/describe", "describe_unreachable_database", 503, problem_type="unavailable",
         json_body={"database": "gone"})
    call(svc, "POST", "/describe", "describe_text_plain_body", 415, body="fx",
         headers={"Content-Type": "text/plain"}, problem_type="unsupported-media-type")

    e = "/databases/fx/examples"
    r = call(svc, "GET", e, "examples_list_empty", 200)
    tap.eq(((r.json or {}).get("total"), (r.json or {}).get("examples"), (r.json or {}).get("limit")), (0, [], 100),
           "examples_list_empty_has_no_examples_and_default_limit")
    r = call(svc, "POST", e, "examples_add", 201,
             json_body={"question": "Which singers are from France?",
                        "sql": "SELECT name FROM singer WHERE country = 'France'"})
    france_id = (r.json or {}).get("id")
    tap.eq(r.headers.get("Location"), "%s/%s" % (e, france_id), "examples_add_location_names_the_example")
    g = call(svc, "GET", "%s/%s" % (e, france_id), "example_get", 200)
    tap.eq(g.json, r.json, "example_get_answers_the_stored_example")
    call(svc, "GET", "%s/999999" % e, "example_get_unknown_id", 404, problem_type="not-found")
    r = call(svc, "POST", e, "examples_add_second", 201,
             json_body={"question": "How many concerts are there?", "sql": "SELECT count(*) FROM concert"})
    count_id = (r.json or {}).get("id")
    tap.ok(isinstance(france_id, int) and isinstance(count_id, int) and count_id > france_id,
           "examples_add_gives_increasing_ids", diag=repr((france_id, count_id)))
    before = t2s.sqlite_checksum(FIXTURE)
    call(svc, "POST", e, "examples_add_unknown_table", 400, problem_type="sql-invalid",
         json_body={"question": "bands?", "sql": "SELECT * FROM band"})
    call(svc, "POST", e, "examples_add_delete_statement", 403, problem_type="sql-rejected",
         json_body={"question": "forget singers", "sql": "DELETE FROM singer"})
    tap.eq(t2s.sqlite_checksum(FIXTURE), before, "examples_add_rejections_leave_sqlite_data_unchanged")
    call(svc, "POST", e, "examples_add_missing_sql", 400, problem_type="invalid-request",
         json_body={"question": "singers?"})
    call(svc, "POST", e, "examples_add_unknown_field", 400, problem_type="invalid-request",
         json_body={"question": "singers?", "sql": "SELECT 1", "tags": []})
    call(svc, "POST", "/databases/nope/examples", "examples_add_unknown_database", 404, problem_type="not-found",
         json_body={"question": "singers?", "sql": "SELECT 1"})
    call(svc, "POST", "/databases/gone/examples", "examples_add_unreachable_database", 503,
         problem_type="unavailable", json_body={"question": "singers?", "sql": "SELECT 1"})
    call(svc, "POST", e, "examples_add_oversized_body", 413, problem_type="payload-too-large",
         json_body={"question": "q", "sql": "SELECT '%s'" % ("x" * MAX_BODY)})
    r = call(svc, "GET", e + "?limit=1&offset=1", "examples_list_page", 200)
    tap.ok((r.json or {}).get("total") == 2 and [x.get("id") for x in (r.json or {}).get("examples", [])] == [count_id]
           and ((r.json or {}).get("limit"), (r.json or {}).get("offset")) == (1, 1),
           "examples_list_page_pages_by_ascending_id_and_rejections_stored_nothing", diag=repr(r.json))
    call(svc, "GET", e + "?limit=0", "examples_list_zero_limit", 400, problem_type="invalid-request")
    call(svc, "GET", e + "?limit=1001", "examples_list_limit_over_1000", 400, problem_type="invalid-request")
    call(svc, "GET", e + "?offset=-1", "examples_list_negative_offset", 400, problem_type="invalid-request")
    call(svc, "GET", "/databases/nope/examples", "examples_list_unknown_database", 404, problem_type="not-found")

    r = evidence_ready(svc, "fx", "Which singers from france gave concerts in 2014?", "evidence")
    body = r.json or {}
    france = [v for v in body.get("values", []) if (v.get("table"), v.get("column")) == ("singer", "country")]
    tap.ok(france and france[0].get("value") == "France" and "France" in france[0].get("probe", {}).get("rows", [])
           and france[0].get("matched", "").lower() == "france",
           "evidence_finds_france_spelled_as_stored_with_its_probe", diag=repr(body.get("values")))
    tap.ok(body.get("partial") is False and "value_index_stats" in body and
           {"kind": "value", "text": "singer.country = 'France'", "source": "value_index"} in body.get("evidence", []),
           "evidence_is_complete_with_a_value_sentence", diag=repr(body))
    tap.eq([x.get("id") for x in body.get("examples", [])][:1], [france_id],
           "evidence_puts_the_most_similar_stored_example_first")
    r = call(svc, "POST", "/evidence", "evidence_flag_column", 200,
             json_body={"database": "fx", "question": "How many singers are active?"})
    tap.eq(sorted(v.get("value") for v in (r.json or {}).get("values", [])
                  if (v.get("column"), v.get("source")) == ("active", "flag")), ["F", "T"],
           "evidence_flag_column_offers_both_stored_flag_values")
    call(svc, "POST", "/evidence", "evidence_missing_question", 400, problem_type="invalid-request",
         json_body={"database": "fx"})
    call(svc, "POST", "/evidence", "evidence_unknown_field", 400, problem_type="invalid-request",
         json_body={"database": "fx", "question": "x", "top_k": 3})
    call(svc, "POST", "/evidence", "evidence_numeric_question", 400, problem_type="invalid-request",
         json_body={"database": "fx", "question": 42})
    call(svc, "POST", "/evidence", "evidence_unknown_database", 404, problem_type="not-found",
         json_body={"database": "nope", "question": "x"})
    call(svc, "POST", "/evidence", "evidence_unreachable_database", 503, problem_type="unavailable",
         json_body={"database": "gone", "question": "x"})
    call(svc, "POST", "/evidence", "evidence_oversized_body", 413, problem_type="payload-too-large",
         json_body={"database": "fx", "question": "x" * MAX_BODY})
    call(svc, "POST", "/evidence", "evidence_text_plain_body", 415, body="x",
         headers={"Content-Type": "text/plain"}, problem_type="unsupported-media-type")

    r = call(svc, "DELETE", "%s/%d" % (e, count_id or 0), "examples_delete", 200)
    tap.eq(r.json, {"database": "fx", "id": count_id, "deleted": True}, "examples_delete_confirms_the_id")
    call(svc, "DELETE", "%s/%d" % (e, count_id or 0), "examples_delete_again", 404, problem_type="not-found")
    call(svc, "DELETE", e + "/abc", "examples_delete_non_numeric_id", 404, problem_type="not-found")
    call(svc, "DELETE", "/databases/nope/examples/1", "examples_delete_unknown_database", 404,
         problem_type="not-found")
    r = call(svc, "POST", "/feedback", "feedback_correct", 201,
             json_body={"database": "fx", "question": "Which singers are older than 35?",
                        "sql": "SELECT name FROM singer WHERE age > 35", "correct": True})
    tap.eq(r.headers.get("Location"), "/feedback/%s" % (r.json or {}).get("id"), "feedback_location_names_it")
    call(svc, "POST", "/feedback", "feedback_wrong", 201,
         json_body={"database": "fx", "question": "q", "sql": "SELEC", "correct": False, "note": "typo"})
    call(svc, "POST", "/feedback", "feedback_correct_invalid_sql", 400, problem_type="sql-invalid",
         json_body={"database": "fx", "question": "q", "sql": "SELECT * FROM nosuch", "correct": True})
    call(svc, "POST", "/feedback", "feedback_correct_write", 403, problem_type="sql-rejected",
         json_body={"database": "fx", "question": "q", "sql": "DELETE FROM singer", "correct": True})
    call(svc, "POST", "/feedback", "feedback_missing_correct", 400, problem_type="invalid-request",
         json_body={"database": "fx", "question": "q", "sql": "SELECT 1"})
    call(svc, "POST", "/feedback", "feedback_unknown_database", 404, problem_type="not-found",
         json_body={"database": "nope", "question": "q", "sql": "SELECT 1", "correct": False})
    call(svc, "GET", "/feedback?correct=false", "feedback_list_wrong", 200)
    call(svc, "GET", "/feedback?limit=0", "feedback_list_bad_limit", 400, problem_type="invalid-request")
    call(svc, "GET", "/feedback/%s" % (r.json or {}).get("id"), "feedback_get", 200)
    call(svc, "GET", "/feedback/999999", "feedback_get_unknown", 404, problem_type="not-found")
    r = call(svc, "GET", e, "examples_list_after_delete", 200)
    tap.eq([x.get("question") for x in (r.json or {}).get("examples", [])],
           ["Which singers are from France?", "Which singers are older than 35?"],
           "examples_delete_removes_only_that_example_and_feedback_added_one")


def test_auth_service():
    key = "openapi-test-key-%d" % os.getpid()
    cfg = base_config([{"name": "fx", "url": "sqlite://" + FIXTURE},
                       {"name": "fx_private", "url": "sqlite://" + FIXTURE}])
    slow_key = "openapi-slow-key-%d" % os.getpid()
    reader_key = "openapi-reader-key-%d" % os.getpid()
    cfg["auth"] = {"api_keys": [{"name": "app1", "key_sha256": hashlib.sha256(key.encode()).hexdigest(),
                                 "databases": ["fx"], "scopes": ["query", "admin"]},
                                {"name": "reader", "key_sha256": hashlib.sha256(reader_key.encode()).hexdigest(),
                                 "databases": ["fx"]},
                                {"name": "slow", "key_sha256": hashlib.sha256(slow_key.encode()).hexdigest(),
                                 "databases": ["fx"], "rate_per_s": 0.01, "burst": 1}],
                   "public_metrics": "none"}
    good = {"Authorization": "Bearer " + key}
    svc = t2s.Service(cfg, env=CLEAN_ENV).start()
    try:
        for path in ("/healthz", "/readyz", "/", "/playground/app.js"):
            call(svc, "GET", path, "public_%s_without_key" % path.strip("/").replace(".", "_"), 200)
        # auth.public_metrics "none": metrics need a key (by default a scrape without one is aggregated).
        call(svc, "GET", "/metrics", "metrics_without_key_when_not_public", 401, problem_type="unauthorized")
        call(svc, "GET", "/metrics", "metrics_with_key_when_not_public", 200, headers=good)
        # The API's description is public, like health and metrics: the document and its docs page.
        call(svc, "GET", "/openapi.json", "openapi_json_without_key", 200)
        call(svc, "GET", "/openapi.json", "openapi_json_with_wrong_key", 200,
             headers={"Authorization": "Bearer not-the-key"})
        call(svc, "GET", "/docs", "docs_without_key", 200)
        call(svc, "GET", "/docs/init.js", "docs_script_without_key", 200)
        r = call(svc, "GET", "/databases", "list_databases_without_key", 401, problem_type="unauthorized")
        tap.ok((r.headers.get("WWW-Authenticate") or "").startswith("Bearer"),
               "unauthorized_carries_www_authenticate_bearer", diag=repr(r.headers))
        call(svc, "GET", "/databases", "list_databases_with_wrong_key", 401, problem_type="unauthorized",
             headers={"Authorization": "Bearer not-the-key"})
        call(svc, "GET", "/databases/fx", "get_database_without_key", 401, problem_type="unauthorized")
        call(svc, "POST", "/databases/fx/refresh", "refresh_without_key", 401, problem_type="unauthorized")
        call(svc, "POST", "/execute", "execute_without_key", 401, problem_type="unauthorized",
             json_body={"database": "fx", "sql": "SELECT 1"})
        slow = {"Authorization": "Bearer " + slow_key}
        call(svc, "GET", "/databases", "rate_limited_key_first_request", 200, headers=slow)
        r = call(svc, "GET", "/databases", "rate_limited_key_over_its_rate", 429, headers=slow,
                 problem_type="rate-limited")
        tap.ok(re.match(r"^[0-9]+$", r.headers.get("Retry-After") or "") is not None,
               "rate_limited_answer_carries_integer_retry_after", diag=repr(r.headers))
        r = call(svc, "GET", "/databases", "list_databases_with_key", 200, headers=good)
        tap.eq([d.get("name") for d in (r.json or {}).get("databases", [])], ["fx"],
               "list_databases_with_key_shows_only_its_databases")
        call(svc, "GET", "/databases/fx", "get_database_with_key", 200, headers=good)
        call(svc, "GET", "/databases/fx_private", "get_other_database_with_key", 404, headers=good,
             problem_type="not-found")
        call(svc, "POST", "/databases/fx/refresh", "refresh_with_key", 200, headers=good)
        call(svc, "POST", "/databases/fx_private/refresh", "refresh_other_database_with_key", 404,
             headers=good, problem_type="not-found")
        call(svc, "POST", "/execute", "execute_with_key", 200, headers=good,
             json_body={"database": "fx", "sql": "SELECT name FROM singer"})
        call(svc, "POST", "/execute", "execute_other_database_with_key", 404, headers=good,
             problem_type="not-found", json_body={"database": "fx_private", "sql": "SELECT 1"})
        call(svc, "POST", "/link", "link_without_key", 401, problem_type="unauthorized",
             json_body={"database": "fx", "question": "singers"})
        call(svc, "POST", "/link", "link_other_database_with_key", 404, headers=good,
             problem_type="not-found", json_body={"database": "fx_private", "question": "singers"})
        for op_name, method, path, body in (
                ("describe", "POST", "/describe", {"database": "%s"}),
                ("evidence", "POST", "/evidence", {"database": "%s", "question": "singers"}),
                ("descriptions_get", "GET", "/databases/%s/descriptions", None),
                ("descriptions_put", "PUT", "/databases/%s/descriptions",
                 {"descriptions": [{"table": "singer", "text": "People who sing"}]}),
                ("examples_list", "GET", "/databases/%s/examples", None),
                ("examples_add", "POST", "/databases/%s/examples", {"question": "n?", "sql": "SELECT 1"}),
                ("examples_delete", "DELETE", "/databases/%s/examples/1", None),
                ("generate", "POST", "/generate", {"database": "%s", "question": "singers"}),
                ("query", "POST", "/query", {"database": "%s", "question": "singers"})):
            # "%s" in the path or body stands for the database.
            fill = [(path.replace("%s", db), None if body is None else json.loads(json.dumps(body).replace("%s", db)))
                    for db in ("fx", "fx_private")]
            call(svc, method, fill[0][0], op_name + "_without_key", 401, json_body=fill[0][1],
                 problem_type="unauthorized")
            call(svc, method, fill[1][0], op_name + "_other_database_with_key", 404, json_body=fill[1][1],
                 headers=good, problem_type="not-found")
        r = call(svc, "POST", "/databases/fx/examples", "examples_add_with_key", 201, headers=good,
                 json_body={"question": "How many singers?", "sql": "SELECT count(*) FROM singer"})
        call(svc, "DELETE", "/databases/fx/examples/%s" % (r.json or {}).get("id"), "examples_delete_with_key", 200,
             headers=good)
        call(svc, "PUT", "/databases/fx/descriptions", "descriptions_put_with_key", 200, headers=good,
             json_body={"descriptions": [{"table": "singer", "text": "People who sing"}]})
        call(svc, "POST", "/describe", "describe_with_key", 200, headers=good, json_body={"database": "fx"})
        # A key without the scope admin: 403 forbidden naming it, the same for its database and another's.
        reader = {"Authorization": "Bearer " + reader_key}
        for op_name, method, path, body in (
                ("refresh", "POST", "/databases/%s/refresh", None),
                ("descriptions_put", "PUT", "/databases/%s/descriptions",
                 {"descriptions": [{"table": "singer", "text": "People who sing"}]}),
                ("examples_add", "POST", "/databases/%s/examples", {"question": "n?", "sql": "SELECT 1"}),
                ("examples_delete", "DELETE", "/databases/%s/examples/1", None),
                ("feedback_list", "GET", "/feedback?database=%s", None),
                ("feedback_add_correct", "POST", "/feedback",
                 {"database": "%s", "question": "n?", "sql": "SELECT 1", "correct": True})):
            for db in ("fx", "fx_private"):
                fill = json.loads(json.dumps([path, body]).replace("%s", db))
                want = 404 if op_name == "feedback_add_correct" and db == "fx_private" else 403
                r = call(svc, method, fill[0], "%s_%s_with_query_key" % (op_name, db), want, json_body=fill[1],
                         headers=reader, problem_type="forbidden" if want == 403 else "not-found")
                if want == 403:
                    tap.eq((r.json or {}).get("required_scope"), "admin",
                           "%s_%s_with_query_key_names_the_scope" % (op_name, db))
        call(svc, "GET", "/databases/fx/examples", "examples_list_with_query_key", 200, headers=reader)
    finally:
        stop_ok(svc, "auth_service")


def test_not_ready_service():
    cfg = base_config([{"name": "gone", "url": "sqlite://" + MISSING}])
    del cfg["auth"]  # without keys and without the opt-in, administering is refused
    svc = t2s.Service(cfg, env=CLEAN_ENV).start()
    try:
        r = call(svc, "PUT", "/databases/gone/descriptions", "descriptions_put_anonymous_without_opt_in", 403,
                 json_body={"descriptions": [{"table": "t", "text": "x"}]}, problem_type="forbidden")
        tap.eq((r.json or {}).get("required_scope"), "admin", "anonymous_write_refusal_names_the_scope")
        r = call(svc, "GET", "/readyz", "readyz_without_reachable_database", 503)
        tap.eq((r.json or {}).get("status"), "not_ready", "readyz_without_reachable_database_says_not_ready")
        r = call(svc, "GET", "/databases", "list_databases_all_down", 200)
    finally:
        stop_ok(svc, "not_ready_service")


def test_no_state_service():
    """A state store that cannot be opened: its endpoints answer 503, the
    rest work, /readyz reports it down (degraded, not not_ready)."""
    cfg = base_config([{"name": "fx", "url": "sqlite://" + FIXTURE}])
    cfg["state"] = {"url": "sqlite://" + os.path.join(TMP, "missing", "state.sqlite")}
    svc = t2s.Service(cfg, env=CLEAN_ENV).start()
    try:
        r = call(svc, "GET", "/readyz", "readyz_without_state_store", 200)
        tap.ok((r.json or {}).get("status") == "degraded" and
               ((r.json or {}).get("checks") or {}).get("state", {}).get("status") == "down",
               "readyz_without_state_store_is_degraded_with_state_down", diag=repr(r.json))
        put = {"descriptions": [{"table": "singer", "text": "People who sing"}]}
        call(svc, "GET", "/databases/fx/descriptions", "descriptions_get_without_state_store", 503,
             problem_type="unavailable")
        call(svc, "PUT", "/databases/fx/descriptions", "descriptions_put_without_state_store", 503,
             problem_type="unavailable", json_body=put)
        call(svc, "GET", "/databases/fx/examples", "examples_list_without_state_store", 503,
             problem_type="unavailable")
        call(svc, "POST", "/databases/fx/examples", "examples_add_without_state_store", 503,
             problem_type="unavailable", json_body={"question": "n?", "sql": "SELECT count(*) FROM singer"})
        call(svc, "DELETE", "/databases/fx/examples/1", "examples_delete_without_state_store", 503,
             problem_type="unavailable")
        r = call(svc, "POST", "/describe", "describe_without_state_store", 200, json_body={"database": "fx"})
        tap.ok("warning" in (r.json or {}) and
               all(t.get("source") == "metadata" for t in (r.json or {}).get("tables", [])),
               "describe_without_state_store_warns_and_uses_metadata", diag=repr(r.json))
        r = evidence_ready(svc, "fx", "Which singers are from France?", "evidence_without_state_store")
        tap.ok((r.json or {}).get("examples") == [] and (r.json or {}).get("values"),
               "evidence_without_state_store_has_values_but_no_examples", diag=repr(r.json))
    finally:
        stop_ok(svc, "no_state_service")


def link_stub(rules):
    """The model stub answering the link stage with these fixture rules."""
    path = os.path.join(TMP, "stub-fixture.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"rules": rules}, f)
    return fixtures.ModelStub("--fixture", path, "--model", "stub-link")


def test_link_model_service():
    chat = "/v1/chat/completions"
    stub = link_stub([
        {"match": {"path": chat, "contains": "FAILME"}, "respond": {"status": 500, "content": "model broke"}},
        {"match": {"path": chat, "contains": "HANGME"}, "respond": {"hang": True}},
        {"match": {"path": chat}, "respond": {"content": "singer, concert, no_such_table"}},
    ])
    svc = None
    try:
        cfg = base_config([{"name": "fx", "url": "sqlite://" + FIXTURE}])
        cfg["models"] = {"link": {"base_url": stub.base_url, "model": "stub-link",
                                  "timeout_ms": 600, "retries": 0}}
        cfg["link"] = {"shuffles": 2}
        svc = t2s.Service(cfg, env=CLEAN_ENV).start()
        r = call(svc, "GET", "/readyz", "readyz_with_link_model", 200)
        tap.eq(((r.json or {}).get("checks") or {}).get("models"), {"link": {"status": "up"}},
               "readyz_with_link_model_reports_it_up")
        r = call(svc, "POST", "/link", "link_llm_with_model", 200,
                 json_body={"database": "fx", "question": "Which singers gave concerts?", "mode": "llm"})
        body = r.json or {}
        tap.ok(body.get("unknown_tables") == ["no_such_table"] and body.get("model_calls") == 2 and
               all(t.get("votes") == 2 for t in body.get("tables", [])),
               "link_llm_with_model_reports_votes_and_unknown_tables", diag=repr(body))
        r = call(svc, "POST", "/link", "link_llm_model_error", 200,
                 json_body={"database": "fx", "question": "FAILME singers", "mode": "llm"})
        tap.ok((r.json or {}).get("mode") == "vector" and
               [(f.get("stage"), f.get("reason")) for f in (r.json or {}).get("fallbacks", [])] ==
               [("link_llm", "http_error")], "link_llm_model_error_falls_back_to_vector", diag=repr(r.json))
        r = call(svc, "POST", "/link", "link_hybrid_model_error", 200,
                 json_body={"database": "fx", "question": "FAILME singers", "mode": "hybrid"})
        tap.ok("fallback" in (r.json or {}), "link_hybrid_model_error_falls_back_to_retrieval", diag=repr(r.json))
        r = call(svc, "POST", "/link", "link_llm_model_hangs", 200,
                 json_body={"database": "fx", "question": "HANGME singers", "mode": "llm"})
        tap.ok([(f.get("stage"), f.get("reason")) for f in (r.json or {}).get("fallbacks", [])] ==
               [("link_llm", "timeout")], "link_llm_model_hangs_falls_back_to_vector", diag=repr(r.json))
    finally:
        if svc is not None:
            stop_ok(svc, "link_model_service")
        stub.close()


def test_stage_models_service():
    """Describe and evidence models (tests/stub/model_stub.py): model
    descriptions with a per-table fallback, cache hits, model evidence."""
    chat = "/v1/chat/completions"
    describe_model = "stub-describe-%d" % os.getpid()
    evidence_model = "stub-evidence-%d" % os.getpid()
    stub = link_stub([
        {"match": {"path": chat, "model": describe_model, "contains": "Table: singer"},
         "respond": {"content": json.dumps({"table": "A person who sings.",
                                            "columns": {"name": "The singer's stage name.", "height": "x"}})}},
        {"match": {"path": chat, "model": describe_model}, "respond": {"content": "no JSON here"}},
        {"match": {"path": chat, "model": evidence_model},
         "respond": {"content": json.dumps({"schema-value-pair": [{"schema": "singer.name", "value": "bob"}],
                                            "knowledge": ["A concert fee is in euros."]})}},
    ])
    svc = None
    try:
        cfg = base_config([{"name": "fx", "url": "sqlite://" + FIXTURE}])
        cfg["models"] = {stage: {"base_url": stub.base_url, "model": model, "timeout_ms": 5000, "retries": 0}
                         for stage, model in (("describe", describe_model), ("evidence", evidence_model))}
        svc = t2s.Service(cfg, env=CLEAN_ENV).start()
        r = call(svc, "GET", "/readyz", "readyz_with_stage_models", 200)
        tap.eq(((r.json or {}).get("checks") or {}).get("models"),
               {"describe": {"status": "up"}, "evidence": {"status": "up"}}, "readyz_with_stage_models_reports_them_up")
        r = call(svc, "POST", "/describe", "describe_with_model", 200,
                 json_body={"database": "fx", "tables": ["singer", "concert"]})
        body = r.json or {}
        tables = {t.get("name"): t for t in body.get("tables", [])}
        cols = {c.get("name"): c.get("source") for c in tables.get("singer", {}).get("columns", [])}
        tap.ok(tables.get("singer", {}).get("source") == "model" and cols.get("name") == "model" and
               cols.get("age") == "metadata" and tables.get("concert", {}).get("source") == "metadata",
               "describe_with_model_uses_model_text_and_metadata_for_the_rest", diag=repr(body))
        tap.ok(body.get("model_calls") == 2 and body.get("model_errors") == 1 and
               [e.split(":")[0] for e in body.get("errors", [])] == ["concert"] and
               body.get("tokens", {}).get("prompt", 0) > 0,
               "describe_with_model_reports_calls_tokens_and_the_failed_table", diag=repr(body))
        r = call(svc, "POST", "/describe", "describe_with_model_again", 200,
                 json_body={"database": "fx", "tables": ["singer"]})
        tap.ok((r.json or {}).get("cache_hits") == 1 and (r.json or {}).get("model_calls") == 0,
               "describe_with_model_again_is_served_from_the_cache", diag=repr(r.json))
        r = evidence_ready(svc, "fx", "How old is the singer bob?", "evidence_with_model")
        body = r.json or {}
        tap.ok({"kind": "domain", "text": "A concert fee is in euros.", "source": "model"} in body.get("evidence", [])
               and body.get("model_calls") == 1 and
               any(v.get("value") == "Bob" for v in body.get("values", [])),
               "evidence_with_model_adds_domain_knowledge_and_stored_spelling", diag=repr(body))
    finally:
        if svc is not None:
            stop_ok(svc, "stage_models_service")
        stub.close()


GEN_MODEL_TIMEOUT_MS = 1500


def stream_checks(svc, name, body, last):
    """POST /v1/query/stream: the 200 response's media type is documented (the only one of that
    operation's 200, as /v1/query's is JSON alone), every event's data is JSON, the stream ends with
    `last`, and its data validates against the documented schema (QueryResult for `result`, Problem
    for `error`)."""
    r = svc.request("POST", "/v1/query/stream", json=body, timeout=60)
    tap.eq(r.status, 200, name + "_answers_200")
    ctype = (r.headers.get("Content-Type") or "").split(";")[0].strip()
    ok_content = DOC["paths"]["/v1/query/stream"]["post"]["responses"]["200"]["content"]
    tap.eq(sorted(ok_content), ["text/event-stream"], name + "_operation_documents_one_200_media_type")
    try:
        t2s.openapi_response_schema(DOC, "/v1/query/stream", "POST", 200, ctype)
        tap.ok(True, name + "_media_type_is_documented")
    except LookupError as e:
        tap.ok(False, name + "_media_type_is_documented", diag=str(e))
    events = []
    for block in r.text.split("\n\n"):
        fields = [line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":")]
        if fields:
            events.append((dict(fields).get("event"), dict(fields).get("data")))
    try:
        parsed = [(n, json.loads(d)) for n, d in events]
    except (TypeError, ValueError) as e:
        tap.ok(False, name + "_every_event_is_one_json_data_line", diag="%s: %r" % (e, events[:3]))
        return
    tap.ok(parsed, name + "_every_event_is_one_json_data_line")
    tap.eq(parsed[-1][0] if parsed else None, last, name + "_ends_with_" + last)
    if parsed and parsed[-1][0] == "result":
        schema = t2s.openapi_response_schema(DOC, "/query", "POST", 200, "application/json")
    elif parsed:
        schema = DOC["components"]["schemas"]["Problem"]
    errs = t2s.validate(parsed[-1][1], schema, DOC) if parsed else ["no event"]
    tap.ok(not errs, name + "_last_event_matches_documented_schema", diag="\n".join(errs[:20]))


def test_generate_service():
    """POST /generate and /query with the model stub as the generate model,
    its fallback (another model name on the same stub) and the debug model:
    every status the stub can provoke, each body checked against the
    document; /readyz's checks.generation while the breakers are closed and
    once both generate endpoints' breakers are open."""
    chat = "/v1/chat/completions"
    stub = fixtures.ModelStub()
    svc = None

    def answer(sql):
        return {"match": {"path": chat}, "respond": {"content": "```sql\n%s\n```" % sql}}

    def ask(path, name, want, problem_type=None, **body):
        body.setdefault("database", "fx")
        return call(svc, "POST", path, name, want, json_body=body, problem_type=problem_type, timeout=60)

    try:
        cfg = base_config([{"name": "fx", "url": "sqlite://" + FIXTURE},
                           {"name": "gone", "url": "sqlite://" + MISSING}])
        ep = {"base_url": stub.base_url, "timeout_ms": GEN_MODEL_TIMEOUT_MS, "retries": 0}
        breaker = {"failures": 2, "cooldown_ms": 600000}
        cfg["models"] = {
            "generate": dict(ep, model="gen", breaker=breaker, fallback=dict(ep, model="gen-small", breaker=breaker)),
            "debug": dict(ep, model="dbg"),
        }
        cfg["generate"] = {"cache_ttl_s": 60, "adaptive_sampling": False}  # candidates drawn: their schema checked
        svc = t2s.Service(cfg, env=CLEAN_ENV).start()
        before = t2s.sqlite_checksum(FIXTURE)

        r = call(svc, "GET", "/readyz", "readyz_with_generate_model", 200)
        tap.eq(((r.json or {}).get("checks") or {}).get("generation"),
               {"status": "up", "breakers": {"generate": {"primary": "closed", "fallback": "closed"},
                                             "debug": {"primary": "closed"}}, "generators": ["model", "builtin"]},
               "readyz_with_generate_model_reports_closed_breakers")

        stub.rules([answer("SELECT name FROM singer WHERE country = 'France'")])
        r = ask("/generate", "generate_valid_sql", 200, question="Which singers are from France?")
        tap.ok((r.json or {}).get("sql") == "SELECT name FROM singer WHERE country = 'France'" and
               (r.json or {}).get("ok") is True and "rows" not in (r.json or {}),
               "generate_valid_sql_answers_the_statement_without_rows", diag=r.text[:600])
        r = ask("/query", "query_valid_sql", 200, question="Which singers are from France?")
        tap.eq(((r.json or {}).get("columns"), (r.json or {}).get("rows"), (r.json or {}).get("cached")),
               (["name"], [["Ann"]], False), "query_valid_sql_answers_the_rows")
        r = ask("/query", "query_cached", 200, question="Which singers are from France?")
        tap.eq((r.json or {}).get("cached"), True, "query_cached_says_cached")
        r = ask("/query", "query_history_evidence_options", 200, question="and their ages?",
                evidence="age is in years",
                history=[{"question": "Which singers are from France?",
                          "sql": "SELECT name FROM singer WHERE country = 'France'"}],
                options={"max_rounds": 1, "candidates": 2, "max_rows": 1, "timeout_ms": 10000})
        tap.ok(len((r.json or {}).get("candidates", [])) == 2 and (r.json or {}).get("row_count") == 1,
               "query_history_evidence_options_reports_candidates", diag=r.text[:600])

        stream_checks(svc, "query_stream_valid_sql", {"database": "fx", "question": "Which singers are in France?"},
                      "result")

        # A write never passes: the debug model is asked once, then 422 with what was tried.
        stub.rules([answer("DROP TABLE singer")])
        r = ask("/query", "query_model_answers_drop", 422, problem_type="generation-failed",
                question="Remove the singers", options={"max_rounds": 1})
        body = r.json or {}
        tap.ok(body.get("sql") == "DROP TABLE singer" and
               [c.get("stage") for c in body.get("model_calls", [])] == ["generate", "debug"] and
               [c.get("round") for c in body.get("corrections", [])] == [1],
               "query_model_answers_drop_reports_sql_calls_and_corrections", diag=r.text[:800])
        stub.rules([{"match": {"path": chat}, "respond": {"content": "I cannot help with that."}}])
        r = ask("/generate", "generate_model_answers_no_sql", 422, problem_type="generation-failed",
                question="Remove the singers", options={"max_rounds": 1})
        tap.ok("sql" in (r.json or {}) and (r.json or {}).get("sql") is None and
               [c.get("sql") for c in (r.json or {}).get("corrections", [])] == [None],
               "generate_model_answers_no_sql_reports_null_sql", diag=r.text[:800])
        stream_checks(svc, "query_stream_no_sql", {"database": "fx", "question": "Remove the singers",
                                                   "options": {"max_rounds": 1}}, "error")
        stub.rules([{"match": {"path": chat}, "respond": {"content": "UNANSWERABLE: no jokes are stored."}}])
        ask("/query", "query_model_answers_unanswerable", 422, problem_type="unanswerable",
            question="Tell me a joke about singers")
        ask("/generate", "generate_model_answers_unanswerable", 422, problem_type="unanswerable",
            question="Tell me a joke about singers")
        tap.eq(t2s.sqlite_checksum(FIXTURE), before, "generation_failures_leave_sqlite_data_unchanged")

        # The primary fails, the fallback answers.
        stub.rules([{"match": {"path": chat, "model": "gen"}, "respond": {"status": 503}},
                    answer("SELECT count(*) FROM concert")])
        r = ask("/query", "query_fallback_answers", 200, question="How many concerts are there?")
        tap.eq([(c.get("endpoint"), c.get("outcome")) for c in
                ((r.json or {}).get("trace") or {}).get("model_calls", [])],
               [("primary", "upstream-error"), ("fallback", "ok")], "query_fallback_answers_shows_both_calls")
        stub.rules([answer("SELECT count(*) FROM singer")])
        ask("/query", "query_after_fallback", 200, question="How many singers are there?")

        for path in ("/generate", "/query"):
            op = path.strip("/")
            ask(path, op + "_unknown_option", 400, problem_type="invalid-request", question="x",
                options={"temperature": 1})
            ask(path, op + "_unknown_history_field", 400, problem_type="invalid-request", question="x",
                history=[{"question": "q", "sql": "SELECT 1", "answer": 1}])
            ask(path, op + "_missing_question", 400, problem_type="invalid-request")
            ask(path, op + "_max_rows_zero", 400, problem_type="invalid-request", question="x",
                options={"max_rows": 0})
            ask(path, op + "_unknown_database", 404, problem_type="not-found", database="nope", question="x")
            ask(path, op + "_unreachable_database", 503, problem_type="unavailable", database="gone",
                question="x")
            call(svc, "POST", path, op + "_oversized_body", 413, problem_type="payload-too-large",
                 json_body={"database": "fx", "question": "x" * MAX_BODY})
            call(svc, "POST", path, op + "_text_plain_body", 415, body="singers?",
                 headers={"Content-Type": "text/plain"}, problem_type="unsupported-media-type")

        # Both generate endpoints hang, then fail: two failures in a row open both breakers (each endpoint
        # has its own breaker settings; the successes above reset the counts).
        stub.rules([{"match": {"path": chat}, "respond": {"hang": True}}])
        model_only = {"generator": "model"}
        ask("/query", "query_model_hangs", 504, problem_type="upstream-timeout", question="How many singers?",
            options=model_only)
        stub.rules([{"match": {"path": chat}, "respond": {"status": 500, "content": "model broke"}}])
        ask("/generate", "generate_model_error", 502, problem_type="upstream-error", question="How many singers?",
            options=model_only)
        n_calls = len(stub.requests())
        r = ask("/query", "query_breakers_open", 503, problem_type="unavailable", question="How many singers?",
                options=model_only)
        tap.ok("breaker" in (r.json or {}).get("detail", "") and len(stub.requests()) == n_calls,
               "query_breakers_open_names_the_breaker_and_calls_no_model", diag=r.text[:400])
        r = call(svc, "GET", "/readyz", "readyz_with_generate_breakers_open", 200)
        tap.eq(((r.json or {}).get("status"), ((r.json or {}).get("checks") or {}).get("generation")),
               ("degraded", {"status": "down", "breakers": {"generate": {"primary": "open", "fallback": "open"},
                                                            "debug": {"primary": "closed"}},
                             "generators": ["model", "builtin"]}),
               "readyz_with_generate_breakers_open_is_degraded_with_generation_down")
        tap.eq(t2s.sqlite_checksum(FIXTURE), before, "generation_leaves_sqlite_data_unchanged")
    finally:
        if svc is not None:
            stop_ok(svc, "generate_service")
        stub.close()


# --------------------------------------------------------------------------- PostgreSQL

PG_FIXTURE_SQL = """
CREATE SCHEMA shop;
CREATE TABLE shop.customer (id integer PRIMARY KEY, name text NOT NULL, vip boolean, joined date);
COMMENT ON TABLE shop.customer IS 'People who buy';
COMMENT ON COLUMN shop.customer.name IS 'Full name';
CREATE TABLE public.orders (id integer PRIMARY KEY, customer_id integer REFERENCES shop.customer (id),
                            amount numeric(10, 2), tags text[]);
INSERT INTO shop.customer VALUES (1, 'Ann', true, '2020-01-02'), (2, 'Bob', NULL, NULL);
INSERT INTO public.orders VALUES (10, 1, 12.50, '{a,b}'), (11, 2, NULL, NULL);
CREATE VIEW public.big_orders AS SELECT * FROM public.orders WHERE amount > 10;
CREATE MATERIALIZED VIEW public.order_count AS SELECT count(*) AS n FROM public.orders;
REVOKE TEMPORARY ON DATABASE {DB} FROM PUBLIC;
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT USAGE ON SCHEMA shop TO t2s_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public, shop TO t2s_reader;
"""


def test_postgres_service():
    if not fixtures.have_pg():
        tap.skip("pg_responses_match_documented_schemas", "T2S_TEST_PG_PORT not set")
        return
    db = "t2s_openapi_%d" % os.getpid()
    svc = None
    pg = fixtures.PgDatabases(tap)
    try:
        pg.create(db, PG_FIXTURE_SQL)
        spider = (os.environ.get("T2S_TEST_PG_SPIDER_DBS") or "").split()
        dbs = [{"name": "pg", "url": t2s.pg_url(db), "schemas": ["public", "shop"]}]
        if spider:
            dbs.append({"name": "spider", "url": t2s.pg_url(spider[0])})
        svc = t2s.Service(base_config(dbs), env=CLEAN_ENV).start()
        before = t2s.pg_checksum(db)
        r = call(svc, "GET", "/readyz", "pg_readyz", 200)
        tap.eq((r.json or {}).get("status"), "ready", "pg_readyz_says_ready")
        call(svc, "GET", "/databases", "pg_list_databases", 200)
        r = call(svc, "GET", "/databases/pg", "pg_get_database", 200)
        tables = {t.get("qualified_name"): t for t in (r.json or {}).get("tables", [])}
        tap.eq(sorted((k, t.get("kind")) for k, t in tables.items()),
               [("big_orders", "view"), ("order_count", "materialized_view"), ("orders", "table"),
                ("shop.customer", "table")], "pg_get_database_lists_tables_views_and_schemas")
        tap.eq(tables.get("shop.customer", {}).get("comment"), "People who buy", "pg_get_database_shows_comment")
        fks = tables.get("orders", {}).get("foreign_keys") or [{}]
        tap.eq(fks[0].get("references"), {"schema": "shop", "table": "customer", "columns": ["id"]},
               "pg_get_database_shows_cross_schema_foreign_key")
        call(svc, "POST", "/databases/pg/refresh", "pg_refresh", 200)
        r = call(svc, "POST", "/execute", "pg_execute_mixed_types", 200, json_body={
            "database": "pg", "sql": "SELECT c.id, c.name, c.vip, c.joined, o.amount, o.tags, "
            "'NaN'::float8 AS nan FROM shop.customer c JOIN orders o ON o.customer_id = c.id ORDER BY c.id"})
        tap.eq((r.json or {}).get("rows"), [[1, "Ann", True, "2020-01-02", 12.5, "{a,b}", "NaN"],
                                            [2, "Bob", None, None, None, None, "NaN"]],
               "pg_execute_mixed_types_returns_typed_values")
        call(svc, "POST", "/execute", "pg_execute_syntax_error", 400, problem_type="sql-invalid",
             json_body={"database": "pg", "sql": "SELEC 1"})
        call(svc, "POST", "/execute", "pg_execute_unknown_table", 400, problem_type="sql-invalid",
             json_body={"database": "pg", "sql": "SELECT * FROM nosuch"})
        call(svc, "POST", "/execute", "pg_execute_delete", 403, problem_type="sql-rejected",
             json_body={"database": "pg", "sql": "DELETE FROM orders"})
        call(svc, "POST", "/execute", "pg_execute_update_in_cte", 403, problem_type="sql-rejected",
             json_body={"database": "pg", "sql": "WITH x AS (UPDATE orders SET amount = 0 RETURNING id) "
                        "SELECT * FROM x"})
        call(svc, "POST", "/execute", "pg_execute_division_by_zero", 422, problem_type="sql-failed",
             json_body={"database": "pg", "sql": "SELECT 1 / 0"})
        call(svc, "POST", "/execute", "pg_execute_slow_query_past_timeout", 504, problem_type="timeout",
             json_body={"database": "pg", "sql": "SELECT count(*) FROM generate_series(1, 1000000000) g"})
        tap.eq(t2s.pg_checksum(db), before, "pg_execute_rejections_leave_data_unchanged")
        pg_state_checks(svc, db)
        if spider:
            call(svc, "GET", "/databases/spider", "pg_get_spider_database", 200)
            call(svc, "POST", "/databases/spider/refresh", "pg_refresh_spider_database", 200)
        else:
            tap.skip("pg_get_spider_database", "T2S_TEST_PG_SPIDER_DBS not set")
    finally:
        if svc is not None:
            stop_ok(svc, "pg_service")
        pg.drop_all()


def pg_state_checks(svc, db):
    """Descriptions, /describe, examples and /evidence on the PostgreSQL
    fixture of test_postgres_service (tables in schemas public and shop)."""
    before = t2s.pg_checksum(db)
    r = call(svc, "PUT", "/databases/pg/descriptions", "pg_descriptions_put", 200, json_body={"descriptions": [
        {"table": "shop.customer", "column": "vip", "text": "Pays for priority shipping"}]})
    tap.eq([(o.get("column"), o.get("text")) for o in (r.json or {}).get("overrides", [])],
           [("vip", "Pays for priority shipping")], "pg_descriptions_put_stores_the_override")
    call(svc, "GET", "/databases/pg/descriptions", "pg_descriptions_get", 200)
    r = call(svc, "POST", "/describe", "pg_describe", 200,
             json_body={"database": "pg", "tables": ["shop.customer", "orders"]})
    tables = {t.get("name"): t for t in (r.json or {}).get("tables", [])}
    cust = {c.get("name"): c for c in tables.get("shop.customer", {}).get("columns", [])}
    tap.ok(sorted(tables) == ["orders", "shop.customer"] and
           cust.get("vip", {}).get("description") == "Pays for priority shipping" and
           "People who buy" in tables.get("shop.customer", {}).get("description", ""),
           "pg_describe_uses_qualified_names_comments_and_overrides", diag=repr(r.json))
    call(svc, "POST", "/describe", "pg_describe_unknown_table", 404, problem_type="not-found",
         json_body={"database": "pg", "tables": ["public.customer"]})
    e = "/databases/pg/examples"
    call(svc, "POST", e, "pg_examples_add", 201, json_body={
        "question": "Which orders did each customer place?",
        "sql": "SELECT c.name, sum(o.amount) FROM shop.customer c JOIN orders o ON o.customer_id = c.id GROUP BY 1"})
    call(svc, "POST", e, "pg_examples_add_syntax_error", 400, problem_type="sql-invalid",
         json_body={"question": "q", "sql": "SELEC 1"})
    call(svc, "POST", e, "pg_examples_add_update_in_cte", 403, problem_type="sql-rejected",
         json_body={"question": "q", "sql": "WITH x AS (UPDATE orders SET amount = 0 RETURNING id) SELECT * FROM x"})
    call(svc, "POST", e, "pg_examples_add_select_for_update", 403, problem_type="sql-rejected",
         json_body={"question": "q", "sql": "SELECT * FROM orders FOR UPDATE"})
    r = call(svc, "GET", e, "pg_examples_list", 200)
    tap.eq((r.json or {}).get("total"), 1, "pg_examples_rejections_store_nothing")
    r = evidence_ready(svc, "pg", "Which orders did ann place?", "pg_evidence")
    ann = [v for v in (r.json or {}).get("values", [])
           if (v.get("table"), v.get("column")) == ("shop.customer", "name")]
    tap.ok(ann and ann[0].get("value") == "Ann" and "$1" in ann[0].get("probe", {}).get("sql", ""),
           "pg_evidence_finds_ann_in_shop_customer_with_a_bound_probe", diag=repr((r.json or {}).get("values")))
    tap.eq([x.get("question") for x in (r.json or {}).get("examples", [])], ["Which orders did each customer place?"],
           "pg_evidence_shows_the_stored_example")
    tap.eq(t2s.pg_checksum(db), before, "pg_probes_and_example_validation_leave_data_unchanged")


def report_coverage():
    """Diagnostics only: documented statuses no live request produced."""
    for (method, template), op in sorted(operations().items()):
        key = "%s %s" % (method, template)
        missing = sorted(set(op.get("responses", {})) - SEEN.get(key, set()) - {"405"})
        if missing:
            tap.diag("%s: documented but not exercised: %s" % (key, ", ".join(missing)))


def main():
    test_document()
    test_routes_match_document()
    return fixtures.run_with_binary(tap, "live_service_checks", test_sqlite_service, test_auth_service,
                                    test_not_ready_service, test_no_state_service, test_link_model_service,
                                    test_stage_models_service, test_generate_service, test_postgres_service,
                                    report_coverage, reason="T2S_BIN not set")


if __name__ == "__main__":
    sys.exit(main())
