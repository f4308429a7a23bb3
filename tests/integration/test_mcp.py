#!/usr/bin/env python3
"""test_mcp.py - the MCP endpoint (/mcp) against the official MCP TypeScript
SDK client, and its transport rules on the wire (TAP).

The SDK (tests/mcp: @modelcontextprotocol/sdk pinned in package.json and
package-lock.json, installed by scripts/install-deps.sh with npm ci) runs
tests/mcp/mcp_client.mjs against text2sqld with auth on, SQLite and the model
stub as the generate model: initialize (the SDK's latest protocol version),
tools/list (four tools with input and output schemas), every tool called
(callTool checks structuredContent against the tool's outputSchema), query
answered by the built-in and by the model with rows, and the same SQL and rows
as /v1/query; a refused key (401 problem), a key without the query scope
(403), a key limited to another database, a bad argument (a tool error
naming the field), an unknown tool (a JSON-RPC error), DELETE ending the
session.

Then, over plain HTTP: GET is 405; a message without a session is 400 and
with an unknown one 404; an unsupported
MCP-Protocol-Version 400 (problem bodies that are also JSON-RPC errors); a
foreign Origin 403; a notification 202; the
metrics count the route and the tool calls; and sessions are bounded like
connections: a key's oldest session makes room for its new one, another
key's are never ended (503 instead), an idle session ends; a key's rate
limit applies to its MCP messages (429); a key limited to some tables
describes and reads only those through the tools, and every tool call is a
line of the audit log (action mcp:<tool>) without any key.

The SDK part skips (does not fail) when node or tests/mcp/node_modules is
missing; the wire checks always run.
"""

import hashlib
import json
import os
import re
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
TMP = fixtures.scratch_dir("t2s-mcp-")
SDK_DIR = os.path.join(t2s.SOURCE_ROOT, "tests", "mcp")
KEY = "mcp-test-key-0123456789abcdef"
OTHER_KEY = "mcp-other-key-0123456789abcdef"
ADMIN_KEY = "mcp-admin-only-key-0123456789ab"
LIMITED_KEY = "mcp-limited-key-0123456789abcdef"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def digest(key):
    return hashlib.sha256(key.encode()).hexdigest()


def bearer(key, **more):
    h = {"Authorization": "Bearer " + key, "Accept": "application/json, text/event-stream"}
    h.update(more)
    return h


def initialize(svc, key):
    """A new session's id (None when refused) and the response."""
    r = svc.request("POST", "/mcp", json=INIT, headers=bearer(key))
    return r.headers.get("Mcp-Session-Id") if r.status == 200 else None, r


def rpc(svc, key, session, method, params=None, msg_id=2, **headers):
    msg = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        msg["params"] = params
    extra = {"Mcp-Session-Id": session} if session else {}
    extra.update(headers)
    return svc.request("POST", "/mcp", json=msg, headers=bearer(key, **extra))


def run_sdk(svc):
    if not shutil.which("node"):
        tap.skip("mcp_sdk_client_against_the_service", "node is not installed")
        return
    if not os.path.isdir(os.path.join(SDK_DIR, "node_modules", "@modelcontextprotocol", "sdk")):
        tap.skip("mcp_sdk_client_against_the_service",
                 "@modelcontextprotocol/sdk is not installed in tests/mcp (scripts/install-deps.sh runs npm ci there)")
        return
    env = dict(os.environ, T2S_URL=svc.base_url, T2S_KEY=KEY, T2S_OTHER_KEY=OTHER_KEY, T2S_ADMIN_ONLY_KEY=ADMIN_KEY,
               T2S_DB="concert")
    proc = subprocess.run(["node", os.path.join(SDK_DIR, "mcp_client.mjs")], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=240)
    results = fixtures.node_results(tap, proc, "mcp_client.mjs")
    tap.ok(proc.returncode == 0 and len(results) >= 25, "mcp_client_script_ran",
           diag="exit %s, %d checks\n%s" % (proc.returncode, len(results), proc.stderr[-3000:]))
    for r in results:
        tap.ok(r.get("ok"), r.get("check", "?"), diag=r.get("diag"))


with open(os.path.join(t2s.SOURCE_ROOT, "openapi", "openapi.json"), encoding="utf-8") as _f:
    DOC = json.load(_f)
DOCUMENTED = []  # (name, method, response) of the wire checks, validated against the document at the end


def seen(name, method, r):
    DOCUMENTED.append((name, method, r))
    return r


def check_documented():
    """Each wire answer's status is documented for /v1/mcp and its body validates, no member undocumented."""
    for name, method, r in DOCUMENTED:
        if not r.body:
            documented = str(r.status) in DOC["paths"]["/v1/mcp"][method.lower()]["responses"]
            tap.ok(documented, name + "_status_is_documented", diag=r.status)
            continue
        try:
            schema = t2s.openapi_response_schema(DOC, "/mcp", method.lower(), r.status,
                                                 r.headers.get("Content-Type") or "application/json")
            errs = t2s.validate(r.json, schema, DOC)
            errs += ["undocumented member " + m for m in t2s.undocumented_fields(r.json, schema, DOC)]
        except LookupError as e:
            errs = [str(e)]
        tap.ok(not errs, name + "_matches_the_openapi_document", diag="\n".join(errs) + "\n" + r.text[:300])
    del DOCUMENTED[:]


def metric(svc, pattern):
    text = svc.request("GET", "/metrics", headers={"Authorization": "Bearer " + KEY}).text
    return sum(float(v) for v in re.findall(r"^%s (\S+)$" % pattern, text, re.M))


def check_wire(svc):
    r = svc.request("GET", "/mcp", headers=bearer(KEY))
    tap.ok(r.status == 405 and "POST" in (r.headers.get("Allow") or "") and "DELETE" in r.headers.get("Allow"),
           "get_mcp_is_405_with_allow", diag="%d %r" % (r.status, r.headers.get("Allow")))
    r = seen("no_session", "POST", rpc(svc, KEY, None, "tools/list"))
    tap.ok(fixtures.is_problem(r, 400, "invalid-request") and r.json["error"]["code"] == -32000 and
           r.json["id"] is None and r.json["jsonrpc"] == "2.0",
           "message_without_session_is_400_problem_and_jsonrpc_error", diag=r.text)
    r = seen("unknown_session", "POST", rpc(svc, KEY, "0" * 32, "tools/list"))
    tap.ok(fixtures.is_problem(r, 404, "not-found") and r.json["error"]["code"] == -32001, "unknown_session_is_404",
           diag=r.text)
    sid, r = initialize(svc, KEY)
    seen("initialize", "POST", r)
    tap.ok(sid and re.fullmatch(r"[0-9a-f]{32}", sid) and r.json["result"]["protocolVersion"] == "2025-06-18",
           "initialize_answers_the_clients_version_with_a_session_id", diag=r.text)
    r = svc.request("POST", "/mcp", json=dict(INIT, params=dict(INIT["params"], protocolVersion="1999-01-01")),
                    headers=bearer(KEY))
    tap.ok(r.status == 200 and r.json["result"]["protocolVersion"] == "2025-11-25",
           "initialize_with_an_unknown_version_answers_the_latest", diag=r.text)
    r = seen("bad_version", "POST", rpc(svc, KEY, sid, "tools/list", **{"MCP-Protocol-Version": "2020-01-01"}))
    tap.ok(fixtures.is_problem(r, 400, "invalid-request") and r.json["error"]["code"] == -32000,
           "unsupported_protocol_version_header_is_400",
           diag=r.text)
    r = seen("foreign_origin", "POST", rpc(svc, KEY, sid, "tools/list", Origin="http://evil.example"))
    tap.ok(fixtures.is_problem(r, 403, "forbidden"), "foreign_origin_is_403_problem", diag=r.text)
    r = seen("tools_list", "POST", rpc(svc, KEY, sid, "tools/list", Origin="http://127.0.0.1:%d" % svc.port))
    tap.ok(r.status == 200 and len(r.json["result"]["tools"]) == 4, "own_origin_is_served", diag=r.text[:300])
    r = seen("not_acceptable", "POST", rpc(svc, KEY, sid, "tools/list", Accept="text/event-stream"))
    tap.ok(fixtures.is_problem(r, 406, "not-acceptable"), "accept_without_json_is_406", diag=r.text)
    r = seen("notification", "POST", svc.request("POST", "/mcp", json={"jsonrpc": "2.0",
                                                                       "method": "notifications/initialized"},
                                                 headers=bearer(KEY, **{"Mcp-Session-Id": sid})))
    tap.ok(r.status == 202 and not r.body, "notification_is_202_without_body", diag="%d %r" % (r.status, r.text))
    r = svc.request("POST", "/mcp", body="{not json", headers=bearer(KEY, **{"Content-Type": "application/json",
                                                                               "Mcp-Session-Id": sid}))
    tap.ok(fixtures.is_problem(r, 400, "invalid-request") and r.json["error"]["code"] == -32700,
           "malformed_json_is_parse_error",
           diag=r.text)
    r = seen("unknown_method", "POST", rpc(svc, KEY, sid, "resources/list"))
    tap.ok(r.status == 200 and r.json["error"]["code"] == -32601 and r.json["id"] == 2, "unknown_method_is_32601",
           diag=r.text)
    r = seen("tools_call", "POST", rpc(svc, KEY, sid, "tools/call",
                                       {"name": "execute", "arguments": {"database": "concert", "sql": "SELECT 1 AS x"}}))
    tap.ok(r.status == 200 and r.json["result"]["structuredContent"]["rows"] == [[1]], "execute_over_the_wire",
           diag=r.text[:500])
    fixtures.wait_until(lambda: metric(svc, r'text2sqld_mcp_tool_calls_total\{tool="execute",outcome="ok"\}') >= 1,
                        timeout=10)
    tap.ok(metric(svc, r'text2sqld_mcp_tool_calls_total\{tool="execute",outcome="ok"\}') >= 1,
           "metrics_count_tool_calls")
    tap.ok(metric(svc, r'text2sqld_http_requests_total\{route="/mcp",method="POST",code="2xx"\}') >= 1,
           "metrics_count_the_mcp_route")
    tap.ok(metric(svc, r"text2sqld_mcp_sessions") >= 1, "metrics_show_open_sessions")
    r = svc.request("DELETE", "/mcp", headers=bearer(KEY, **{"Mcp-Session-Id": sid}))
    tap.eq(r.status, 204, "delete_ends_the_session")
    r = seen("delete_again", "DELETE", svc.request("DELETE", "/mcp", headers=bearer(KEY, **{"Mcp-Session-Id": sid})))
    tap.eq(r.status, 404, "deleting_again_is_404")
    r = seen("unknown_member", "POST", svc.request("POST", "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping",
                                                                         "extra": 1}, headers=bearer(KEY)))
    tap.ok(fixtures.is_problem(r, 400, "invalid-request") and r.json["error"]["code"] == -32600,
           "unknown_member_is_invalid_request", diag=r.text)
    check_documented()


def check_bounds():
    """limits.mcp_max_sessions 2, limits.mcp_session_idle_s 1."""
    db_path = os.path.join(TMP, "concert.sqlite")
    cfg = {"databases": [{"name": "concert", "url": "sqlite://" + db_path}],
           "auth": {"api_keys": [{"name": "a", "key_sha256": digest(KEY), "databases": ["*"]},
                                 {"name": "b", "key_sha256": digest(OTHER_KEY), "databases": ["*"]},
                                 {"name": "slow", "key_sha256": digest(ADMIN_KEY), "databases": ["*"],
                                  "rate_per_s": 0.01, "burst": 1}]},
           "limits": {"mcp_max_sessions": 2, "mcp_session_idle_s": 1},
           "log": {"level": "warn", "access": False}}
    with fixtures.serving(tap, cfg, "bounded_mcp_service_exits_0") as svc:
        s1, _ = initialize(svc, KEY)
        s2, _ = initialize(svc, KEY)
        s3, _ = initialize(svc, KEY)
        tap.ok(s1 and s2 and s3, "a_key_opens_sessions_past_the_cap_by_ending_its_oldest")
        tap.eq(rpc(svc, KEY, s1, "ping").status, 404, "the_keys_oldest_session_was_ended")
        tap.eq(rpc(svc, KEY, s3, "ping").status, 200, "the_keys_newest_session_serves")
        sb, r = initialize(svc, OTHER_KEY)
        seen("table_full", "POST", r)
        tap.ok(sb is None and fixtures.is_problem(r, 503, "unavailable") and r.headers.get("Retry-After")
               and "mcp_max_sessions" in r.json.get("detail", ""),
               "another_keys_sessions_are_not_ended_the_table_is_full_503", diag=r.text)
        svc.request("DELETE", "/mcp", headers=bearer(KEY, **{"Mcp-Session-Id": s2}))  # room for one more
        sc, r = initialize(svc, ADMIN_KEY)
        r2 = seen("rate_limited", "POST", rpc(svc, ADMIN_KEY, sc, "ping"))
        tap.ok(sc is not None and fixtures.is_problem(r2, 429, "rate-limited") and r2.headers.get("Retry-After"),
               "a_keys_rate_limit_applies_to_mcp", diag="%s %s" % (r.text[:200], r2.text[:300]))
        time.sleep(2.5)
        tap.eq(rpc(svc, KEY, s3, "ping").status, 404, "an_idle_session_ends")
        sb, r = initialize(svc, OTHER_KEY)
        tap.ok(sb is not None, "room_after_idle_sessions_ended", diag=r.text)
    check_documented()


def tool(svc, key, sid, name, arguments):
    """tools/call name(arguments): the call's result object ({} when the message failed)."""
    r = rpc(svc, key, sid, "tools/call", {"name": name, "arguments": arguments})
    return (r.json or {}).get("result") or {} if r.status == 200 else {}


def check_grant_and_audit(svc, audit_path):
    """A table-limited key sees and reads only its tables through the tools (issue 30); every tool call
    is an audit line with its caller, database, question or SQL, status and rows, and no key."""
    sid, _ = initialize(svc, LIMITED_KEY)
    d = tool(svc, LIMITED_KEY, sid, "describe_database", {"database": "concert"})
    names = sorted(t.get("name") for t in ((d.get("structuredContent") or {}).get("tables") or []))
    tap.ok(names == ["singer"], "a_table_limited_key_describes_only_its_tables", diag=json.dumps(d)[:400])
    e = tool(svc, LIMITED_KEY, sid, "execute", {"database": "concert", "sql": "SELECT count(*) FROM concert"})
    text = ((e.get("content") or [{}])[0]).get("text") or ""
    tap.ok(e.get("isError") is True and '"status":4' in text.replace(" ", "") and "concert_id" not in text,
           "a_table_limited_key_cannot_execute_on_another_table", diag=json.dumps(e)[:400])
    ok = tool(svc, LIMITED_KEY, sid, "execute", {"database": "concert", "sql": "SELECT count(*) FROM singer"})
    tap.ok((ok.get("structuredContent") or {}).get("rows") == [[4]], "a_table_limited_key_executes_on_its_table",
           diag=json.dumps(ok)[:400])
    sid, _ = initialize(svc, KEY)
    question = "How many singers are from France, as the audit sees it?"
    q = tool(svc, KEY, sid, "query", {"database": "concert", "question": question})
    sql = (q.get("structuredContent") or {}).get("sql")
    lines = []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with open(audit_path) as f:
            lines = [json.loads(x) for x in f if x.strip()]
        if any(x.get("question") == question for x in lines):
            break
        time.sleep(0.1)
    mine = [x for x in lines if x.get("question") == question]
    tap.ok(len(mine) == 1 and mine[0].get("action") == "mcp:query" and mine[0].get("caller") == "mcp"
           and mine[0].get("database") == "concert" and sql and mine[0].get("sql") == sql
           and mine[0].get("status") == 200 and mine[0].get("rows") == 1,
           "a_query_tool_call_is_an_audit_line", diag=json.dumps(mine)[:600])
    refused = [x for x in lines if x.get("action") == "mcp:execute" and x.get("caller") == "limited"]
    tap.ok(len(refused) == 2 and sorted(x.get("status") for x in refused)[0] == 200
           and sorted(x.get("status") for x in refused)[1] >= 400,
           "tool_calls_refused_or_answered_are_audited_with_their_status", diag=json.dumps(refused)[:600])
    raw = open(audit_path).read()
    tap.ok(all(k not in raw for k in (KEY, LIMITED_KEY, digest(KEY), digest(LIMITED_KEY))),
           "no_key_or_digest_in_the_audit_log")


def run():
    db_path = fixtures.write_sqlite(os.path.join(TMP, "concert.sqlite"), fixtures.SMALL_CONCERT_SCHEMA,
                                    fixtures.SMALL_CONCERT_ROWS)
    other_path = fixtures.write_sqlite(os.path.join(TMP, "other.sqlite"), "CREATE TABLE t (x INTEGER);", {"t": [(1,)]})
    stub = fixtures.ModelStub()
    try:
        stub.rules([{"match": {"contains": "from France"},
                     "respond": {"content": "```sql\nSELECT count(*) FROM singer WHERE country = 'France'\n```"}}],
                   default_content="```sql\nSELECT count(*) FROM singer\n```")
        cfg = {"databases": [{"name": "concert", "url": "sqlite://" + db_path},
                             {"name": "other", "url": "sqlite://" + other_path}],
               "auth": {"api_keys": [{"name": "mcp", "key_sha256": digest(KEY), "databases": ["*"]},
                                     {"name": "other", "key_sha256": digest(OTHER_KEY), "databases": ["other"]},
                                     {"name": "admin", "key_sha256": digest(ADMIN_KEY), "databases": ["*"],
                                      "scopes": ["admin"]},
                                     {"name": "limited", "key_sha256": digest(LIMITED_KEY), "databases": ["concert"],
                                      "tables": {"concert": ["singer"]}}]},
               "generate": {"cache_ttl_s": 0},
               "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 20000, "retries": 0}},
               "log": {"level": "warn", "access": False, "audit_file": os.path.join(TMP, "audit.log")}}
        with fixtures.serving(tap, cfg, "mcp_service_exits_0") as svc:
            check_wire(svc)
            run_sdk(svc)
            check_grant_and_audit(svc, os.path.join(TMP, "audit.log"))
    finally:
        stub.close()
    check_bounds()


if __name__ == "__main__":
    sys.exit(fixtures.run_guarded(tap, "mcp_test", run))
