/*
 * ask.ts - the client in use (compiled with tsc --strict by
 * tests/integration/test_js_client.py, so the generated types must let a
 * caller read the answer's fields): ask a question, print the SQL and rows,
 * and tell a problem from other failures.
 */
import { ProblemError, Text2SqlClient, type QueryResult } from "../src/index.js";

export async function ask(baseUrl: string, database: string, question: string, apiKey?: string): Promise<QueryResult> {
  const client = new Text2SqlClient(apiKey === undefined ? { baseUrl } : { baseUrl, apiKey });
  try {
    const answer = await client.query({ database, question });
    console.log(answer.sql, answer.ok ? "(valid)" : "(failed a check)");
    for (const row of answer.rows ?? []) console.log(row);
    return answer;
  } catch (e: unknown) {
    if (e instanceof ProblemError) console.error(`${e.status} ${e.type}: ${e.problem.detail}`);
    throw e;
  }
}

