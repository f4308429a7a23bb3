/*
 * index.ts - a small fetch-based client for the text2sqld HTTP API (/v1).
 *
 * Types come from the OpenAPI document (openapi/openapi.json) through
 * openapi-typescript (`npm run generate` writes src/api.ts).  A method's
 * result type is the JSON body its 200 response documents (the client asks
 * for application/json; /v1/query and /v1/execute also document text/csv,
 * which this client does not ask for), else the union of its media types:
 * /v1/query/stream answers server-sent events (queryStream below).
 *
 * Errors: any non-2xx answer is thrown as a ProblemError carrying the RFC
 * 9457 problem body (`type`, `title`, `status`, `detail`, `request_id`);
 * a network failure is fetch's own TypeError.
 */
import type { components, paths } from "./api.js";

export type Schemas = components["schemas"];
export type Problem = Schemas["Problem"];

type Method = "get" | "post" | "put" | "delete";
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
/** The JSON request body of an operation. */
export type RequestBody<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { requestBody: { content: { "application/json": infer B } } } ? B : never;
/** The body of an operation's 200 response: its JSON body, else every media type it documents. */
export type OkBody<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { responses: { 200: { content: infer C } } }
    ? C extends { "application/json": infer J } ? J : C[keyof C]
    : never;

export type DatabaseList = OkBody<"/v1/databases", "get">;
export type Database = OkBody<"/v1/databases/{name}", "get">;
export type LinkRequest = RequestBody<"/v1/link", "post">;
export type LinkResult = OkBody<"/v1/link", "post">;
export type ExecuteRequest = RequestBody<"/v1/execute", "post">;
export type ExecuteResult = OkBody<"/v1/execute", "post">;
export type GenerateRequest = RequestBody<"/v1/generate", "post">;
export type GenerateResult = OkBody<"/v1/generate", "post">;
export type QueryRequest = RequestBody<"/v1/query", "post">;
export type QueryResult = OkBody<"/v1/query", "post">;

/** A non-2xx answer: the problem the service sent (or one made from the status when it sent none). */
export class ProblemError extends Error {
  readonly status: number;
  readonly problem: Problem;

  constructor(problem: Problem) {
    super(`${problem.status} ${problem.title}: ${problem.detail}`);
    this.name = "ProblemError";
    this.status = problem.status;
    this.problem = problem;
  }

  /** The problem type, e.g. "urn:text2sqld:problem:not-found". */
  get type(): string {
    return this.problem.type;
  }
}

/** One server-sent event of /v1/query/stream: a stage's progress, then `result` or `error`. */
export type QueryEvent =
  | { event: "result"; data: QueryResult }
  | { event: "error"; data: Problem }
  | { event: string; data: unknown };

/** An answer's rows as CSV (executeCsv, queryCsv): RFC 4180 text, the header record first, and the cap that cut the rows. */
export interface CsvRows {
  text: string;
  /** "max_rows" or "max_bytes" when a cap cut the rows, else null. */
  truncatedBy: string | null;
}

export interface ClientOptions {
  /** Where the service answers, e.g. "http://127.0.0.1:8080" or "https://gw.example/t2s" (no trailing /v1). */
  baseUrl: string;
  /** An API key (sent as a bearer token), when the service has auth on. */
  apiKey?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

export class Text2SqlClient {
  readonly #base: string;
  readonly #key: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.#base = options.baseUrl.replace(/\/+$/, "") + "/v1";
    this.#key = options.apiKey;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  listDatabases(): Promise<DatabaseList> {
    return this.#json("GET", "/databases");
  }

  getDatabase(name: string): Promise<Database> {
    return this.#json("GET", `/databases/${encodeURIComponent(name)}`);
  }

  link(body: LinkRequest): Promise<LinkResult> {
    return this.#json("POST", "/link", body);
  }

  execute(body: ExecuteRequest): Promise<ExecuteResult> {
    return this.#json("POST", "/execute", body);
  }

  /** /v1/execute answered as CSV (Accept: text/csv). */
  executeCsv(body: ExecuteRequest): Promise<CsvRows> {
    return this.#csv("/execute", body);
  }

  generate(body: GenerateRequest): Promise<GenerateResult> {
    return this.#json("POST", "/generate", body);
  }

  query(body: QueryRequest): Promise<QueryResult> {
    return this.#json("POST", "/query", body);
  }

  /** /v1/query answered as CSV: the answer's rows (a statement that did not run is a `no-rows` ProblemError). */
  queryCsv(body: QueryRequest): Promise<CsvRows> {
    return this.#csv("/query", body);
  }

  /**
   * /v1/query as server-sent events: yields each stage's event as it arrives,
   * the last one `result` (the QueryResult) or `error` (the Problem).  A
   * problem found before the stream starts is thrown as a ProblemError.
   */
  async *queryStream(body: QueryRequest, signal?: AbortSignal): AsyncGenerator<QueryEvent> {
    const resp = await this.#send("POST", "/query/stream", body, signal);
    if (!resp.body) return;
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (value) buffered += value;
      let end: number;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const event = parseEvent(buffered.slice(0, end));
        buffered = buffered.slice(end + 2);
        if (event) yield event;
      }
      if (done) return;
    }
  }

  async #json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const resp = await this.#send(method, path, body);
    return (await resp.json()) as T;
  }

  async #csv(path: string, body: unknown): Promise<CsvRows> {
    const resp = await this.#send("POST", path, body, undefined, "text/csv");
    return { text: await resp.text(), truncatedBy: resp.headers.get("X-Truncated-By") };
  }

  async #send(method: string, path: string, body?: unknown, signal?: AbortSignal,
              accept = "application/json"): Promise<Response> {
    const headers: Record<string, string> = { Accept: accept };
    if (this.#key) headers["Authorization"] = `Bearer ${this.#key}`;
    const init: RequestInit = { method, headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    if (signal) init.signal = signal;
    const resp = await this.#fetch(this.#base + path, init);
    if (!resp.ok) throw new ProblemError(await readProblem(resp));
    return resp;
  }
}

/** The problem body of a failed answer; one made from the status line when the body is not a problem. */
async function readProblem(resp: Response): Promise<Problem> {
  const text = await resp.text();
  try {
    const parsed: unknown = JSON.parse(text);
    if (isProblem(parsed)) return parsed;
  } catch {
    /* not JSON: described below */
  }
  return {
    type: "about:blank",
    title: resp.statusText || "HTTP error",
    status: resp.status,
    detail: text.slice(0, 500),
  };
}

function isProblem(v: unknown): v is Problem {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o["type"] === "string" && typeof o["title"] === "string" && typeof o["status"] === "number" &&
    typeof o["detail"] === "string";
}

/** One SSE block ("event: name\ndata: json"), or null for a comment-only block. */
function parseEvent(block: string): QueryEvent | null {
  let name = "message";
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  if (data.length === 0) return null;
  return { event: name, data: JSON.parse(data.join("\n")) as unknown } as QueryEvent;
}
