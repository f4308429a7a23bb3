// peer.mjs - the peer text2sqld is compared with: LangChain.js
// createSqlQueryChain (question -> SQL through an OpenAI-compatible model) plus
// running that SQL with SqlDatabase.run, served over HTTP so that
// bench/peer_compare.py times both systems the same way.
//
// Usage: node peer.mjs --port P --db-dir DIR --base-url http://127.0.0.1:S/v1
//                      [--model gold-stub] [--databases a,b,...]
//
//   POST /query {"database", "question"} -> {"database", "question", "sql",
//        "result" (SqlDatabase.run's JSON text), "row_count", "elapsed_ms"}
//        or {"error"} with status 400/404/500
//   GET  /healthz -> {"status": "ok", "databases": N}
//
// Every DIR/<name>/<name>.sqlite (or only --databases) is opened read-only
// through TypeORM's better-sqlite3 driver before "LISTENING <port>" is
// printed.  One chain per database, built at start: createSqlQueryChain with
// dialect "sqlite" (LangChain's SQLite prompt: CREATE TABLE text of every
// table and 3 sample rows each, rebuilt on each request by the chain itself).
// ChatOpenAI talks to --base-url with temperature 0 and no retries.
// The chain's token-count check (verifyNumberOfTokens, present on
// SqlDatabaseChain) downloads tokenizer tables, which stalls offline; it is
// replaced with a no-op wherever it exists.

import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { DataSource } from "typeorm";
import { SqlDatabase } from "@langchain/classic/sql_db";
import { createSqlQueryChain } from "@langchain/classic/chains/sql_db";
import { ChatOpenAI } from "@langchain/openai";

function parseArgs(argv) {
  const out = { port: 0, model: "gold-stub", databases: "" };
  for (let i = 2; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, "").replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    out[k] = argv[i + 1];
  }
  if (!out.dbDir || !out.baseUrl) {
    console.error("usage: node peer.mjs --port P --db-dir DIR --base-url URL [--model NAME] [--databases a,b]");
    process.exit(2);
  }
  return out;
}

async function openDatabases(args, llm) {
  const wanted = args.databases ? new Set(args.databases.split(",").filter(Boolean)) : null;
  const chains = new Map();
  for (const name of fs.readdirSync(args.dbDir).sort()) {
    if (wanted && !wanted.has(name)) continue;
    const file = path.join(args.dbDir, name, name + ".sqlite");
    if (!fs.existsSync(file)) continue;
    const ds = new DataSource({ type: "better-sqlite3", database: file, readonly: true });
    const db = await SqlDatabase.fromDataSourceParams({ appDataSource: ds });
    const chain = await createSqlQueryChain({ llm, db, dialect: "sqlite" });
    if (typeof chain.verifyNumberOfTokens === "function") chain.verifyNumberOfTokens = async () => {};
    chains.set(name, { db, chain });
  }
  return chains;
}

function send(res, status, obj) {
  const body = Buffer.from(JSON.stringify(obj));
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": body.length });
  res.end(body);
}

async function main() {
  const args = parseArgs(process.argv);
  const llm = new ChatOpenAI({
    model: args.model,
    apiKey: "not-needed",
    temperature: 0,
    maxRetries: 0,
    configuration: { baseURL: args.baseUrl },
  });
  const chains = await openDatabases(args, llm);
  const server = http.createServer((req, res) => {
    if (req.method === "GET" && req.url === "/healthz") {
      send(res, 200, { status: "ok", databases: chains.size });
      return;
    }
    if (req.method !== "POST" || req.url !== "/query") {
      send(res, 404, { error: "no route " + req.method + " " + req.url });
      return;
    }
    const parts = [];
    req.on("data", (c) => parts.push(c));
    req.on("end", async () => {
      const t0 = process.hrtime.bigint();
      let body;
      try {
        body = JSON.parse(Buffer.concat(parts).toString("utf8"));
      } catch (e) {
        send(res, 400, { error: "body is not JSON" });
        return;
      }
      const entry = chains.get(body.database);
      if (!entry) {
        send(res, 404, { error: "unknown database " + body.database });
        return;
      }
      try {
        const sql = await entry.chain.invoke({ question: body.question });
        const result = await entry.db.run(sql);
        let rowCount = null;
        try {
          rowCount = JSON.parse(result).length;
        } catch (e) {
          rowCount = null;
        }
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        send(res, 200, { database: body.database, question: body.question, sql, result, row_count: rowCount, elapsed_ms: ms });
      } catch (e) {
        send(res, 500, { error: String(e && e.message ? e.message : e) });
      }
    });
  });
  server.keepAliveTimeout = 60000;
  server.on("connection", (sock) => sock.setNoDelay(true));
  server.listen(Number(args.port), "127.0.0.1", () => {
    process.stdout.write("LISTENING " + server.address().port + "\n");
  });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
