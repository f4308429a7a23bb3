/** A non-2xx answer: the problem the service sent (or one made from the status when it sent none). */
export class ProblemError extends Error {
    status;
    problem;
    constructor(problem) {
        super(`${problem.status} ${problem.title}: ${problem.detail}`);
        this.name = "ProblemError";
        this.status = problem.status;
        this.problem = problem;
    }
    /** The problem type, e.g. "urn:text2sqld:problem:not-found". */
    get type() {
        return this.problem.type;
    }
}
export class Text2SqlClient {
    #base;
    #key;
    #fetch;
    constructor(options) {
        this.#base = options.baseUrl.replace(/\/+$/, "") + "/v1";
        this.#key = options.apiKey;
        this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    }
    listDatabases() {
        return this.#json("GET", "/databases");
    }
    getDatabase(name) {
        return this.#json("GET", `/databases/${encodeURIComponent(name)}`);
    }
    link(body) {
        return this.#json("POST", "/link", body);
    }
    execute(body) {
        return this.#json("POST", "/execute", body);
    }
    generate(body) {
        return this.#json("POST", "/generate", body);
    }
    query(body) {
        return this.#json("POST", "/query", body);
    }
    /**
     * /v1/query as server-sent events: yields each stage's event as it arrives,
     * the last one `result` (the QueryResult) or `error` (the Problem).  A
     * problem found before the stream starts is thrown as a ProblemError.
     */
    async *queryStream(body, signal) {
        const resp = await this.#send("POST", "/query/stream", body, signal);
        if (!resp.body)
            return;
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffered = "";
        for (;;) {
            const { value, done } = await reader.read();
            if (value)
                buffered += value;
            let end;
            while ((end = buffered.indexOf("\n\n")) >= 0) {
                const event = parseEvent(buffered.slice(0, end));
                buffered = buffered.slice(end + 2);
                if (event)
                    yield event;
            }
            if (done)
                return;
        }
    }
    async #json(method, path, body) {
        const resp = await this.#send(method, path, body);
        return (await resp.json());
    }
    async #send(method, path, body, signal) {
        const headers = { Accept: "application/json" };
        if (this.#key)
            headers["Authorization"] = `Bearer ${this.#key}`;
        const init = { method, headers };
        if (body !== undefined) {
            headers["Content-Type"] = "application/json";
            init.body = JSON.stringify(body);
        }
        if (signal)
            init.signal = signal;
        const resp = await this.#fetch(this.#base + path, init);
        if (!resp.ok)
            throw new ProblemError(await readProblem(resp));
        return resp;
    }
}
/** The problem body of a failed answer; one made from the status line when the body is not a problem. */
async function readProblem(resp) {
    const text = await resp.text();
    try {
        const parsed = JSON.parse(text);
        if (isProblem(parsed))
            return parsed;
    }
    catch {
        /* not JSON: described below */
    }
    return {
        type: "about:blank",
        title: resp.statusText || "HTTP error",
        status: resp.status,
        detail: text.slice(0, 500),
    };
}
function isProblem(v) {
    if (typeof v !== "object" || v === null)
        return false;
    const o = v;
    return typeof o["type"] === "string" && typeof o["title"] === "string" && typeof o["status"] === "number" &&
        typeof o["detail"] === "string";
}
/** One SSE block ("event: name\ndata: json"), or null for a comment-only block. */
function parseEvent(block) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
        if (line.startsWith(":"))
            continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event")
            name = value;
        else if (field === "data")
            data.push(value);
    }
    if (data.length === 0)
        return null;
    return { event: name, data: JSON.parse(data.join("\n")) };
}
