// mcp_client.mjs - the official MCP TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
// package.json here) against text2sqld's /mcp endpoint.
//
// Run by tests/integration/test_mcp.py, which starts the service (auth on, SQLite, the model stub as
// the generate model) and reads this script's output: one JSON object per line, {"check": name,
// "ok": bool, "diag": text}.  Environment: T2S_URL (the service), T2S_KEY (a key for every
// database), T2S_OTHER_KEY (a key for another database only), T2S_ADMIN_ONLY_KEY (a key without the
// query scope), T2S_DB (the SQLite database the keys test).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const check = (name, ok, diag) => out({ check: name, ok: !!ok, diag: ok ? undefined : String(diag ?? "") });
const base = process.env.T2S_URL;
const db = process.env.T2S_DB;
const endpoint = new URL("/mcp", base);

async function connect(key) {
  const transport = new StreamableHTTPClientTransport(endpoint, {
    requestInit: key ? { headers: { Authorization: `Bearer ${key}` } } : {},
  });
  const client = new Client({ name: "text2sqld-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

async function thrown(fn) {
  try {
    await fn();
    return null;
  } catch (e) {
    return e;
  }
}

const text = (r) => (r.content || []).map((c) => c.text || "").join("");
const rest = async (path, body, key) => {
  const r = await fetch(new URL(path, base), {
    method: "POST", body: JSON.stringify(body),
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
  });
  return r.json();
};

try {
  const { client, transport } = await connect(process.env.T2S_KEY);
  check("sdk_initializes_a_session", typeof transport.sessionId === "string" && transport.sessionId.length >= 16,
    transport.sessionId);
  check("server_negotiates_the_sdks_latest_protocol_version", transport.protocolVersion === LATEST_PROTOCOL_VERSION,
    `${transport.protocolVersion} vs ${LATEST_PROTOCOL_VERSION}`);
  check("server_names_itself_text2sqld", client.getServerVersion()?.name === "text2sqld",
    JSON.stringify(client.getServerVersion()));
  check("server_offers_tools", !!client.getServerCapabilities()?.tools, JSON.stringify(client.getServerCapabilities()));

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check("tools_list_names_the_four_tools",
    JSON.stringify(names) === JSON.stringify(["describe_database", "execute", "list_databases", "query"]),
    JSON.stringify(names));
  check("every_tool_has_input_and_output_schemas",
    tools.every((t) => t.inputSchema?.type === "object" && t.outputSchema?.type === "object" && t.description),
    JSON.stringify(tools.map((t) => [t.name, !!t.inputSchema, !!t.outputSchema])));

  // callTool validates structuredContent against the tool's outputSchema: a mismatch throws.
  const dbs = await client.callTool({ name: "list_databases", arguments: {} });
  check("list_databases_names_the_keys_database",
    !dbs.isError && dbs.structuredContent.databases.some((d) => d.name === db) && text(dbs).includes(db),
    JSON.stringify(dbs).slice(0, 800));

  const desc = await client.callTool({ name: "describe_database", arguments: { database: db } });
  const singer = desc.structuredContent?.tables?.find((t) => t.name === "singer");
  check("describe_database_gives_tables_columns_and_descriptions",
    !desc.isError && singer && singer.description && singer.columns.some((c) => c.name === "country" &&
      c.type && c.description), JSON.stringify(desc).slice(0, 1200));

  const only = await client.callTool({ name: "describe_database", arguments: { database: db, tables: ["concert"] } });
  check("describe_database_with_tables_gives_only_those",
    !only.isError && only.structuredContent.tables.map((t) => t.name).join() === "concert",
    JSON.stringify(only).slice(0, 600));

  const built = await client.callTool({ name: "query", arguments: { database: db,
    question: "How many singers are there?", options: { generator: "builtin" } } });
  const b = built.structuredContent;
  check("query_answered_by_the_builtin_has_sql_rows_and_confidence",
    !built.isError && /count\(\*\)/i.test(b.sql) && JSON.stringify(b.rows) === "[[4]]" &&
      typeof b.confidence === "number" && b.generator === "builtin", JSON.stringify(built).slice(0, 1200));
  check("query_result_text_is_its_json", JSON.parse(text(built)).sql === b.sql, text(built).slice(0, 300));

  const question = "How many singers are from France?";
  const modeled = await client.callTool({ name: "query", arguments: { database: db, question } });
  const m = modeled.structuredContent;
  const viaRest = await rest("/v1/query", { database: db, question }, process.env.T2S_KEY);
  check("query_answered_by_the_model_has_rows",
    !modeled.isError && /France/.test(m.sql) && JSON.stringify(m.rows) === "[[2]]" && m.generator === "model",
    JSON.stringify(modeled).slice(0, 1200));
  check("query_gives_the_same_sql_and_rows_as_v1_query",
    viaRest.sql === m.sql && JSON.stringify(viaRest.rows) === JSON.stringify(m.rows) &&
      viaRest.confidence === m.confidence, JSON.stringify([viaRest.sql, viaRest.rows, m.sql, m.rows]));
  check("query_answer_leaves_out_the_trace_only", !("trace" in m) && "validation" in m && "confidence_band" in m,
    Object.keys(m).join());

  const ex = await client.callTool({ name: "execute",
    arguments: { database: db, sql: "SELECT name FROM singer WHERE age > 40 ORDER BY name" } });
  check("execute_runs_read_only_sql",
    !ex.isError && JSON.stringify(ex.structuredContent.rows) === '[["Joe Sharp"],["Rose White"]]' &&
      ex.structuredContent.columns[0] === "name", JSON.stringify(ex).slice(0, 800));

  const del = await client.callTool({ name: "execute", arguments: { database: db, sql: "DELETE FROM singer" } });
  check("execute_refuses_a_write_as_a_tool_error",
    del.isError === true && JSON.parse(text(del)).type === "urn:text2sqld:problem:sql-rejected",
    JSON.stringify(del));

  const noQuestion = await client.callTool({ name: "query", arguments: { database: db } });
  check("bad_argument_is_a_tool_error_naming_the_field",
    noQuestion.isError === true && /question/.test(text(noQuestion)) &&
      JSON.parse(text(noQuestion)).status === 400, JSON.stringify(noQuestion));
  const extra = await client.callTool({ name: "execute", arguments: { database: db, sql: "SELECT 1", rows: 5 } });
  check("unknown_argument_is_a_tool_error", extra.isError === true && /rows/.test(text(extra)), JSON.stringify(extra));
  const badOption = await client.callTool({ name: "query",
    arguments: { database: db, question, options: { candidates: 0 } } });
  check("option_out_of_range_is_a_tool_error", badOption.isError === true && /options\.candidates/.test(text(badOption)),
    JSON.stringify(badOption));
  const unknownDb = await client.callTool({ name: "query", arguments: { database: "nowhere", question } });
  check("unknown_database_is_a_not_found_tool_error",
    unknownDb.isError === true && JSON.parse(text(unknownDb)).type === "urn:text2sqld:problem:not-found",
    JSON.stringify(unknownDb));
  const noTool = await thrown(() => client.callTool({ name: "drop_table", arguments: {} }));
  check("unknown_tool_is_a_protocol_error", noTool && noTool.code === -32602, String(noTool));

  const pong = await client.ping();
  check("ping_answers", pong && typeof pong === "object", JSON.stringify(pong));

  // A key that may use another database only: this one is invisible to it, as over REST.
  const other = await connect(process.env.T2S_OTHER_KEY);
  const otherDbs = await other.client.callTool({ name: "list_databases", arguments: {} });
  check("other_keys_list_leaves_out_the_database",
    !otherDbs.isError && !otherDbs.structuredContent.databases.some((d) => d.name === db), JSON.stringify(otherDbs));
  const otherQuery = await other.client.callTool({ name: "query", arguments: { database: db, question } });
  check("other_key_cannot_query_the_database",
    otherQuery.isError === true && JSON.parse(text(otherQuery)).status === 404, JSON.stringify(otherQuery));

  // A session belongs to its key: the other key cannot use this one's.
  const stolen = await fetch(endpoint, { method: "POST", headers: {
    Authorization: `Bearer ${process.env.T2S_OTHER_KEY}`, "Content-Type": "application/json",
    Accept: "application/json, text/event-stream", "Mcp-Session-Id": transport.sessionId,
  }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
  check("a_session_is_unknown_to_another_key", stolen.status === 404, stolen.status);
  await other.client.close();

  const refused = await thrown(() => connect("not-a-key-of-this-service"));
  check("refused_key_cannot_initialize", refused && /401/.test(String(refused.code ?? refused.message)),
    String(refused));
  const raw = await fetch(endpoint, { method: "POST", headers: { Authorization: "Bearer not-a-key",
    "Content-Type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) });
  const problem = await raw.json();
  check("refused_key_is_a_401_problem", raw.status === 401 &&
    raw.headers.get("content-type").startsWith("application/problem+json") &&
    problem.type === "urn:text2sqld:problem:unauthorized", JSON.stringify(problem));
  const adminOnly = await thrown(() => connect(process.env.T2S_ADMIN_ONLY_KEY));
  check("key_without_query_scope_cannot_initialize", adminOnly && /403/.test(String(adminOnly.code ?? adminOnly.message)),
    String(adminOnly));

  const sid = transport.sessionId;
  await transport.terminateSession();
  const after = await fetch(endpoint, { method: "POST", headers: {
    Authorization: `Bearer ${process.env.T2S_KEY}`, "Content-Type": "application/json",
    Accept: "application/json, text/event-stream", "Mcp-Session-Id": sid,
  }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
  check("deleted_session_is_404", after.status === 404, after.status);
  await client.close();
} catch (e) {
  check("mcp_client_ran_without_exception", false, e && e.stack ? e.stack : String(e));
}
