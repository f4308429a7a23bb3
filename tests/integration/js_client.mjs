// js_client.mjs - the TypeScript client (clients/js, compiled) against a running text2sqld.
//
// Run by tests/integration/test_js_client.py, which builds the client, starts the service (auth
// on, the model stub as the generate model) and reads this script's output: one JSON object per
// line, {"check": name, "ok": bool, "diag": text}.  Environment: T2S_CLIENT (the compiled
// index.js), T2S_URL, T2S_KEY (an API key the service accepts), T2S_DB (a database it serves).
const { Text2SqlClient, ProblemError } = await import(process.env.T2S_CLIENT);

const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const check = (name, ok, diag) => out({ check: name, ok: !!ok, diag: ok ? undefined : String(diag ?? "") });
const db = process.env.T2S_DB;
const client = new Text2SqlClient({ baseUrl: process.env.T2S_URL, apiKey: process.env.T2S_KEY });

async function thrown(fn) {
  try {
    await fn();
    return null;
  } catch (e) {
    return e;
  }
}

try {
  const list = await client.listDatabases();
  check("client_lists_databases", list.databases.some((d) => d.name === db), JSON.stringify(list));

  const answer = await client.query({ database: db, question: "How many singers are there?" });
  check("client_query_answers_sql_and_rows",
    /count\(\*\)/i.test(answer.sql) && answer.ok === true && Array.isArray(answer.rows) && answer.rows.length === 1,
    JSON.stringify(answer).slice(0, 800));

  const linked = await client.link({ database: db, question: "Which singers are from France?" });
  check("client_link_names_the_singer_table", linked.tables.some((t) => t.name === "singer"),
    JSON.stringify(linked).slice(0, 800));

  const events = [];
  for await (const e of client.queryStream({ database: db, question: "How many singers are from France?" })) {
    events.push(e);
  }
  const last = events[events.length - 1];
  check("client_query_stream_ends_with_the_result", last && last.event === "result" && typeof last.data.sql === "string",
    JSON.stringify(events.map((e) => e.event)));
  check("client_query_stream_yields_stage_events_first", events.length > 1 && events[0].event !== "result",
    JSON.stringify(events.map((e) => e.event)));

  const missing = await thrown(() => client.query({ database: "no_such_database", question: "Anything?" }));
  check("client_unknown_database_is_a_typed_problem_error",
    missing instanceof ProblemError && missing.status === 404 && missing.type === "urn:text2sqld:problem:not-found" &&
      typeof missing.problem.detail === "string" && missing.problem.detail.includes("no_such_database"),
    missing && JSON.stringify({ name: missing.name, status: missing.status, problem: missing.problem }));

  const bad = await thrown(() => client.execute({ database: db, sql: "DELETE FROM singer" }));
  check("client_refused_sql_is_a_typed_problem_error", bad instanceof ProblemError && bad.status >= 400 &&
    bad.status < 500 && bad.type.startsWith("urn:text2sqld:problem:"), bad && JSON.stringify(bad.problem ?? String(bad)));

  const csv = await client.executeCsv({ database: db, sql: "SELECT name FROM singer ORDER BY name", max_rows: 2 });
  const records = csv.text.split("\r\n");
  check("client_execute_csv_returns_the_rows_as_csv",
    records[0] === "name" && records.length === 4 && records[3] === "" && csv.truncatedBy === "max_rows",
    JSON.stringify(csv));
  const counted = await client.queryCsv({ database: db, question: "How many singers are there?" });
  check("client_query_csv_returns_the_answers_rows", /^count\(\*\)\r\n\d+\r\n$/.test(counted.text) &&
    counted.truncatedBy === null, JSON.stringify(counted));

  const anonymous = new Text2SqlClient({ baseUrl: process.env.T2S_URL });
  const unauthorized = await thrown(() => anonymous.listDatabases());
  check("client_without_key_gets_401_problem", unauthorized instanceof ProblemError && unauthorized.status === 401,
    unauthorized && JSON.stringify(unauthorized.problem ?? String(unauthorized)));
} catch (e) {
  check("client_steps_ran_without_exception", false, e.stack || String(e));
}
