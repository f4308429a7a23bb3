#!/usr/bin/env python3
"""test_js_client.py - the TypeScript client (clients/js) built from the
OpenAPI document and run against the real service (TAP).

Build, in a scratch copy of clients/js (nothing is written into the
repository): openapi-typescript generates src/api.ts from openapi/openapi.json,
`tsc --strict` compiles the client and examples/ask.ts (a caller reading the
answer's sql, ok and rows: it fails to compile when /query's 200 response
documents more than one body type, the issue-20 bug).  Run: node drives the
compiled client (tests/integration/js_client.mjs) against text2sqld with
auth on, SQLite and the model stub: /v1/databases, /v1/query, /v1/link,
/v1/query/stream's events, /v1/execute and /v1/query as CSV (executeCsv,
queryCsv: the rows and the cap that cut them), an unknown database and a refused statement
thrown as a typed ProblemError, and a client without a key as a 401 problem.

Also the /v1 routing itself: every API path answers under /v1 and without it
(one route label in /metrics for both), while /healthz, /metrics and the
playground have no /v1 spelling.

Skips (does not fail) when node or clients/js/node_modules (typescript,
openapi-typescript: scripts/install-deps.sh runs npm ci there) is missing.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-js-client-")
CLIENT_DIR = os.path.join(t2s.SOURCE_ROOT, "clients", "js")
KEY = "js-client-test-key-0123456789"


def missing_tools():
    if not shutil.which("node"):
        return "node is not installed"
    for pkg in ("typescript", "openapi-typescript"):
        if not os.path.isdir(os.path.join(CLIENT_DIR, "node_modules", pkg)):
            return "%s is not installed in clients/js (scripts/install-deps.sh runs npm ci there)" % pkg
    return None


def run_tool(work, name, args):
    """Runs a clients/js/node_modules tool in work; True when it exits 0 (else its output as diagnostics)."""
    tool = os.path.join(CLIENT_DIR, "node_modules", ".bin", name)
    r = subprocess.run([tool] + args, cwd=work, capture_output=True, text=True, timeout=300)
    return r.returncode == 0, (r.stdout + r.stderr)[-3000:]


def build_client():
    """The compiled client's index.js in a scratch copy, or None (the failure reported)."""
    work = os.path.join(TMP, "js")
    shutil.copytree(CLIENT_DIR, work, ignore=shutil.ignore_patterns("node_modules", "dist", "dist-examples", "api.ts"))
    os.symlink(os.path.join(CLIENT_DIR, "node_modules"), os.path.join(work, "node_modules"))
    ok, out = run_tool(work, "openapi-typescript", [os.path.join(t2s.SOURCE_ROOT, "openapi", "openapi.json"),
                                                    "-o", os.path.join("src", "api.ts")])
    tap.ok(ok, "openapi_typescript_generates_types_from_the_document", diag=out)
    if not ok:
        return None
    ok, out = run_tool(work, "tsc", ["-p", "tsconfig.json", "--strict"])
    tap.ok(ok, "client_compiles_under_tsc_strict", diag=out)
    ok2, out2 = run_tool(work, "tsc", ["-p", os.path.join("examples", "tsconfig.json"), "--strict", "--noEmit"])
    tap.ok(ok2, "caller_reading_the_query_answer_compiles_under_tsc_strict", diag=out2)
    with open(os.path.join(work, "dist", "index.d.ts"), encoding="utf-8") as f:
        tap.ok("class ProblemError" in f.read(), "client_declarations_are_emitted")
    return os.path.join(work, "dist", "index.js") if ok else None


def route_series(svc, route):
    m = svc.request("GET", "/metrics", headers={"Authorization": "Bearer " + KEY}).text
    return sum(float(v) for v in re.findall(r'^text2sqld_http_requests_total\{route="%s",[^}]*\} (\S+)' %
                                            re.escape(route), m, re.M))


def test_v1_routing(svc):
    bearer = {"Authorization": "Bearer " + KEY}
    before = route_series(svc, "/databases")
    a = svc.request("GET", "/v1/databases", headers=bearer)
    b = svc.request("GET", "/databases", headers=bearer)
    tap.ok(a.status == 200 and b.status == 200 and a.json == b.json, "v1_path_and_its_alias_answer_alike",
           diag="%d %d" % (a.status, b.status))
    # A request is counted when the server finishes with it, a moment after its client has the answer
    # (under TSan, the moment is long enough for the next /metrics to come first): wait for the count.
    fixtures.wait_until(lambda: route_series(svc, "/databases") - before >= 2.0, timeout=10)
    tap.eq(route_series(svc, "/databases") - before, 2.0, "v1_path_and_alias_count_in_one_route_series")
    r = svc.request("GET", "/v1/databases/concert/examples/999999", headers=bearer)
    tap.ok(r.status in (404, 503) and fixtures.problem_type(r) is not None, "v1_templated_path_reaches_its_handler",
           diag="%d %s" % (r.status, r.text[:200]))
    for path in ("/v1/healthz", "/v1/metrics", "/v1/", "/v1/playground/app.js", "/v1/v1/databases"):
        r = svc.request("GET", path, headers=bearer)
        tap.eq(r.status, 404, "no_v1_spelling_of_%s" % path.strip("/").replace("/", "_"))
    r = svc.request("GET", "/v1/query", headers=bearer)
    tap.ok(r.status == 405 and "POST" in (r.headers.get("Allow") or ""), "v1_wrong_method_is_405_with_allow",
           diag="%d %r" % (r.status, r.headers.get("Allow")))


def run():
    db_path = fixtures.write_sqlite(os.path.join(TMP, "concert.sqlite"), fixtures.SMALL_CONCERT_SCHEMA,
                                    fixtures.SMALL_CONCERT_ROWS)
    stub = fixtures.ModelStub()
    try:
        stub.rules([{"match": {"contains": "from France"},
                     "respond": {"content": "```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```"}}],
                   default_content="```sql\nSELECT count(*) FROM singer\n```")
        cfg = {"databases": [{"name": "concert", "url": "sqlite://" + db_path}],
               "auth": {"api_keys": [{"name": "js", "key_sha256": hashlib.sha256(KEY.encode()).hexdigest(),
                                      "databases": ["*"]}]},
               "generate": {"cache_ttl_s": 0},
               "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 20000, "retries": 0}},
               "log": {"level": "warn", "access": False}}
        with fixtures.serving(tap, cfg, "js_client_service_exits_0") as svc:
            test_v1_routing(svc)
            why = missing_tools()
            if why:
                tap.skip("js_client_against_the_service", why)
                return
            index = build_client()
            if not index:
                return
            env = dict(os.environ, T2S_CLIENT="file://" + index, T2S_URL=svc.base_url, T2S_KEY=KEY, T2S_DB="concert")
            proc = subprocess.run(["node", os.path.join(HERE, "js_client.mjs")], env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=240)
            results = fixtures.node_results(tap, proc, "js_client.mjs")
            tap.ok(proc.returncode == 0 and len(results) >= 7, "js_client_script_ran",
                   diag="exit %s, %d checks\n%s" % (proc.returncode, len(results), proc.stderr[-3000:]))
            for r in results:
                tap.ok(r.get("ok"), r.get("check", "?"), diag=r.get("diag"))
    finally:
        stub.close()


if __name__ == "__main__":
    sys.exit(fixtures.run_guarded(tap, "js_client_test", run))
