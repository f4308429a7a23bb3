/*
 * playground/app.js - the playground page's behaviour (index.html; the
 * stage renderers and DOM helpers are in trace.js, loaded first).
 *
 * Lists the databases (GET /v1/databases), sends each question to POST
 * /v1/query/stream (server-sent events) and shows the answer first, under
 * the question: the explanation in words, the chart when the answer
 * suggests one (a Vega-Lite spec, drawn by vega-embed with
 * vega-interpreter: no eval), the rows, the SQL with a copy button, a CSV
 * download (built here from the rows shown), 👍/👎 feedback (POST
 * /v1/feedback) and the confidence; then, folded, how the answer was made:
 * every stage as its event arrived.  A Stop button aborts the stream
 * (AbortController; the service stops working when the client goes away).
 * Answered turns are kept in localStorage (the answer without its trace) and
 * drawn again after a reload; Clear history forgets them.  Follow-up
 * questions send the earlier turns of the same database as `history`.
 * With auth on, the API key is asked for and kept in a variable only (never
 * in storage).  All text from the service is inserted as text, never as
 * HTML.
 *
 * Every URL is relative to the page (no leading slash), so behind a proxy
 * that serves the service under a path prefix and strips it
 * (https://host/t2s/playground/ -> /), the page, its assets and its API
 * calls all stay under the prefix.
 */
"use strict";

const STORE_KEY = "text2sqld.playground.turns.v1";
const DB_KEY = "text2sqld.playground.database";
const HISTORY_MAX = 50;      // turns sent as history and kept in storage
const STORED_ROWS_MAX = 500; // rows of one answer kept in storage

const state = {
  apiKey: null,     // memory only
  turns: [],        // stored answers, oldest first: see storedAnswer()
  busy: null,       // the AbortController of the question under way
};

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (state.apiKey) h["Authorization"] = "Bearer " + state.apiKey;
  return h;
}

function announce(text) {
  $("status").textContent = text;
}

// ---- databases and the key ----------------------------------------------------------

async function loadDatabases() {
  $("page-error").replaceChildren();
  let resp;
  try {
    resp = await fetch("v1/databases", { headers: headers() });
  } catch (e) {
    $("page-error").append(problemBox({ title: "Cannot reach text2sqld", detail: String(e) }));
    return;
  }
  if (resp.status === 401) {
    $("key-form").hidden = false;
    $("key-state").hidden = true;
    if (state.apiKey) $("page-error").append(problemBox(await readProblem(resp)));
    state.apiKey = null;
    $("api-key").focus();
    return;
  }
  if (!resp.ok) {
    $("page-error").append(problemBox(await readProblem(resp)));
    return;
  }
  $("key-form").hidden = true;
  if (state.apiKey) {
    $("key-state").hidden = false;
    $("key-state").textContent = "API key in use (memory only)";
  }
  const body = await resp.json();
  const select = $("database");
  const previous = select.value || storageGet(DB_KEY);
  select.replaceChildren(...body.databases.map((d) =>
    el("option", { value: d.name, "data-engine": d.engine, "data-status": d.status },
      d.name + " (" + d.engine + (d.status === "up" ? "" : ", " + d.status) + ")")));
  if (previous && body.databases.some((d) => d.name === previous)) select.value = previous;
  if (!body.databases.length)
    $("page-error").append(problemBox({ title: "No database", detail: "This key may use no registered database." }));
  databaseChanged();
}

function databaseChanged() {
  const opt = $("database").selectedOptions[0];
  $("db-info").textContent = opt && opt.dataset.status !== "up" ? "database is " + opt.dataset.status : "";
  if (opt) storageSet(DB_KEY, opt.value);
  showTurns();
}

// ---- the answer ---------------------------------------------------------------------------

/* RFC 4180: fields with a comma, quote, CR or LF quoted, quotes doubled; CRLF after every record. */
function toCsv(columns, rows) {
  const field = (v) => {
    const s = v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
    return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  };
  return [columns, ...rows].map((r) => r.map(field).join(",") + "\r\n").join("");
}

function csvName(question) {
  const slug = question.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 60);
  return (slug || "answer") + ".csv";
}

function download(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = el("a", { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

async function copyText(text, pre) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (e) {  // no clipboard API (a page served over plain http off localhost): select and copy
    const range = document.createRange();
    range.selectNodeContents(pre);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    const ok = document.execCommand && document.execCommand("copy");
    sel.removeAllRanges();
    return !!ok;
  }
}

/* Draws a Vega-Lite spec into box with the real renderer; no eval (the page's CSP allows none). */
async function drawChart(box, spec) {
  if (typeof vegaEmbed !== "function" || !window.vega || !vega.expressionInterpreter) {
    box.append(el("div", { class: "muted" }, "the chart renderer did not load"));
    return;
  }
  const s = Object.assign({}, spec);
  if (s.width === undefined) s.width = "container";
  if (s.autosize === undefined) s.autosize = { type: "fit", contains: "padding" };
  try {
    await vegaEmbed(box, s, {
      renderer: "svg", actions: false, ast: true, expr: vega.expressionInterpreter, defaultStyle: false,
      tooltip: { disableDefaultStyle: true },
    });
    box.dataset.drawn = "true";
  } catch (e) {
    box.replaceChildren(el("div", { class: "muted" }, "the chart could not be drawn: " + String(e.message || e)));
  }
}

function confidenceLine(a) {
  /* Who wrote the SQL: the generate model, the built-in generator, or a stored example. */
  const who = { model: "SQL by the model", builtin: "SQL by the built-in generator",
    example: "SQL of a stored example" }[a.generator] || "";
  /* How far to trust it: the calibrated probability and its band (high / medium / low). */
  const band = a.confidence_band ? ", " + a.confidence_band : "";
  const sure = typeof a.confidence === "number" ? " (confidence " + fmt(a.confidence, 2) + band + ")" : "";
  const line = el("div", { class: "confidence" + (a.confidence_band ? " band-" + a.confidence_band : ""),
    "data-generator": a.generator || null, "data-band": a.confidence_band || null },
  [a.cached ? "answered from the cache" : "", who + (who ? sure : ""), a.ok === false ? "the SQL fails a check" : ""]
    .filter(Boolean).join(", "));
  return line;
}

function feedbackButtons(turn) {
  const note = el("span", { class: "muted feedback-note", role: "status" });
  const up = el("button", { type: "button", class: "secondary icon", "aria-label": "Right answer",
    title: "Right answer: keep it as an example for similar questions" },
  el("span", { "aria-hidden": "true" }, "\u{1F44D}"), " Right");
  const down = el("button", { type: "button", class: "secondary icon", "aria-label": "Wrong answer",
    title: "Wrong answer: keep it for review" },
  el("span", { "aria-hidden": "true" }, "\u{1F44E}"), " Wrong");
  const send = async (correct, button) => {
    up.disabled = down.disabled = true;
    button.setAttribute("aria-pressed", "true");
    const a = turn.answer;
    try {
      const resp = await fetch("v1/feedback", {
        method: "POST", headers: headers({ "Content-Type": "application/json" }),
        body: JSON.stringify({ database: a.database, question: a.question, sql: a.sql, correct }),
      });
      if (resp.status === 201) {
        note.textContent = correct ? "Thanks: kept as an example for similar questions." : "Thanks: kept for review.";
        turn.answer.feedback = correct ? "right" : "wrong";
        saveTurns();
        return;
      }
      const p = await readProblem(resp);
      note.textContent = resp.status === 403 && correct
        ? "Not stored: keeping an answer as an example needs a key with the admin scope."
        : "Not stored: " + (p.detail || p.title || resp.status);
    } catch (e) {
      note.textContent = "Not stored: " + String(e);
    }
    up.disabled = down.disabled = false;
    button.removeAttribute("aria-pressed");
  };
  up.addEventListener("click", () => send(true, up));
  down.addEventListener("click", () => send(false, down));
  const done = turn.answer && turn.answer.feedback;
  if (done) {
    up.disabled = down.disabled = true;
    (done === "right" ? up : down).setAttribute("aria-pressed", "true");
  }
  return el("span", { class: "feedback" }, up, down, note);
}

/* The answer as kept in storage: everything the answer part shows, without the trace. */
function storedAnswer(a) {
  const rows = Array.isArray(a.rows) ? a.rows.slice(0, STORED_ROWS_MAX) : a.rows;
  return { database: a.database, question: a.question, evidence: a.evidence || null, sql: a.sql, ok: a.ok,
    explanation: a.explanation || null, chart: a.chart || null, columns: a.columns, column_types: a.column_types,
    rows, row_count: a.row_count, truncated: a.truncated || (Array.isArray(a.rows) && a.rows.length > STORED_ROWS_MAX),
    truncated_by: a.truncated_by, generator: a.generator, confidence: a.confidence,
    confidence_band: a.confidence_band, cached: a.cached, validation: a.validation, feedback: a.feedback || null };
}

// ---- one turn -----------------------------------------------------------------------------

class Turn {
  constructor(question, evidence, database) {
    this.seen = new Set();
    this.answer = null;
    this.node = el("article", { class: "turn" },
      el("div", { class: "q" }, question, el("span", { class: "muted" }, " \u2014 " + database),
        evidence ? el("span", { class: "ev" }, "evidence: " + evidence) : null));
    this.part = el("div", { class: "answer" });
    this.pending = el("div", { class: "pending", role: "status" }, "linking the schema\u2026");
    this.part.append(this.pending);
    this.steps = el("div", { class: "steps" });
    this.trace = el("details", { class: "trace" }, el("summary", {}, "How this answer was made"), this.steps);
    this.node.append(this.part, this.trace);
    $("conversation").append(this.node);
  }

  stage(name, data) {
    const r = render[name];
    if (!r) return;
    const [title, sub, parts] = r(data);
    this.seen.add(name);
    this.steps.append(el("div", { class: "stage", "data-stage": name }, el("h3", {}, title, el("span", { class: "t" }, sub)), parts));
    const next = { link: "looking for evidence\u2026", evidence: "describing\u2026", describe: "writing the prompt\u2026",
      prompt: "asking the model\u2026", generation: "validating\u2026", correction: "validating\u2026", validation: "running\u2026",
      rows: "finishing\u2026" }[name];
    if (next) this.pending.textContent = next;
    if (name === "rows") this.showRows(data);
  }

  /* The rows as soon as they come; the whole answer replaces them. */
  showRows(d) {
    if (this.rowsShown) return;
    this.rowsShown = true;
    this.part.insertBefore(this.rowsPart(d), this.pending);
  }

  rowsPart(a) {
    const note = a.row_count === undefined ? "" : count(a.row_count, "row") +
      (a.truncated ? " (only the first " + (a.rows || []).length + " shown: " + (a.truncated_by || "limit") + ")" : "");
    return el("div", { class: "rows" }, resultTable(a.columns || [], a.rows || [], a.column_types),
      el("div", { class: "muted" }, note));
  }

  /* The whole answer: explanation, chart, rows, SQL, actions; the trace gets what no event showed. */
  result(body, fromStorage) {
    const t = body.trace || {};
    if (!fromStorage) {
      if (!this.seen.has("link") && t.link) this.stage("link", t.link);
      if (!this.seen.has("evidence") && "evidence" in t) this.stage("evidence", { evidence: t.evidence });
      if (!this.seen.has("prompt") && t.prompt) this.stage("prompt", t.prompt);
      if (!this.seen.has("correction"))
        for (const c of body.corrections || []) this.stage("correction", c);
      if (!this.seen.has("validation"))
        this.stage("validation", { sql: body.sql, ok: body.ok, validation: body.validation,
          score: typeof body.score === "number" ? body.score : validationScore(body.validation) });
      if (!this.seen.has("rows") && body.columns) this.stage("rows", body);
    }
    this.answer = storedAnswer(body);
    const a = this.answer;
    const parts = [];
    if (a.explanation) parts.push(el("p", { class: "explanation" }, a.explanation));
    if (a.chart && typeof a.chart === "object") {
      const box = el("div", { class: "chart", role: "figure", "aria-label": "Chart of the answer" });
      parts.push(box);
      queueMicrotask(() => drawChart(box, a.chart));
    }
    if (a.columns) parts.push(this.rowsPart(a));
    const pre = el("pre", { class: "sql" }, a.sql || "");
    const copy = el("button", { type: "button", class: "secondary" }, "Copy SQL");
    copy.addEventListener("click", async () => {
      const ok = await copyText(a.sql || "", pre);
      copy.textContent = ok ? "Copied" : "Copy failed";
      announce(ok ? "SQL copied" : "The SQL could not be copied");
      setTimeout(() => { copy.textContent = "Copy SQL"; }, 2000);
    });
    parts.push(el("div", { class: "sql-box" }, pre));
    const actions = el("div", { class: "row actions" }, copy);
    if (a.columns) {
      const csv = el("button", { type: "button", class: "secondary" }, "Download CSV");
      csv.addEventListener("click", () => download(csvName(a.question), toCsv(a.columns, a.rows || []), "text/csv;charset=utf-8"));
      actions.append(csv);
    }
    actions.append(feedbackButtons(this));
    parts.push(actions, confidenceLine(a));
    const total = t.timings_ms ? fmt(t.timings_ms.total, 0) + " ms" : "";
    if (total) parts.push(el("div", { class: "muted" }, "answered in " + total));
    this.part.replaceChildren(...parts);
    if (fromStorage) this.trace.remove();
  }

  error(problem, status) {
    this.part.replaceChildren(problemBox(problem, status));
  }

  stopped() {
    this.part.replaceChildren(el("div", { class: "problem stopped", role: "status" },
      "Stopped before an answer. The question is still in the box below to send again."));
  }
}

// ---- history in the browser --------------------------------------------------------------

function storageGet(key) {
  try { return localStorage.getItem(key); } catch (e) { return null; }
}

function storageSet(key, value) {
  try { localStorage.setItem(key, value); return true; } catch (e) { return false; }
}

function saveTurns() {
  while (state.turns.length > HISTORY_MAX) state.turns.shift();
  /* Storage full: forget the oldest turns until the rest fits. */
  while (!storageSet(STORE_KEY, JSON.stringify(state.turns.map((t) => t.answer))) && state.turns.length > 1)
    state.turns.shift();
}

function restoreTurns() {
  let stored = [];
  try { stored = JSON.parse(storageGet(STORE_KEY) || "[]"); } catch (e) { stored = []; }
  for (const a of Array.isArray(stored) ? stored : []) {
    if (!a || typeof a.question !== "string" || typeof a.database !== "string") continue;
    const turn = new Turn(a.question, a.evidence, a.database);
    turn.result(a, true);
    state.turns.push(turn);
  }
  showTurns();
}

function earlierTurns(database) {
  return state.turns.filter((t) => t.answer.database === database && t.answer.sql)
    .slice(-HISTORY_MAX).map((t) => ({ question: t.answer.question, sql: t.answer.sql }));
}

function showTurns() {
  const n = earlierTurns($("database").value).length;
  $("turns").textContent = n ? "follow-up questions see the " + count(n, "earlier turn") : "";
}

function clearHistory() {
  state.turns = [];
  try { localStorage.removeItem(STORE_KEY); } catch (e) { /* storage off: nothing kept */ }
  $("conversation").replaceChildren();
  showTurns();
  announce("History cleared");
  $("question").focus();
}

// ---- asking ---------------------------------------------------------------------------------

/* Reads server-sent events from a fetch response, calling onEvent(name, data) for each. */
async function readEvents(resp, onEvent) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const raw = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of raw.split("\n")) {
        if (line.startsWith(":")) continue;
        const i = line.indexOf(":");
        const key = i < 0 ? line : line.slice(0, i);
        const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        if (key === "event") name = val;
        else if (key === "data") data.push(val);
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

async function ask(ev) {
  ev.preventDefault();
  if (state.busy) return;
  const question = $("question").value.trim();
  const evidence = $("evidence").value.trim();
  const database = $("database").value;
  if (!question || !database) return;
  /* Integers beyond 2^53 as decimal strings: the table and the CSV show them exactly. */
  const body = { database, question, options: { big_integers: "string" } };
  if (evidence) body.evidence = evidence;
  const history = earlierTurns(database);
  if (history.length) body.history = history;
  const turn = new Turn(question, evidence, database);
  turn.node.scrollIntoView({ block: "start" });
  const control = setBusy(new AbortController());
  let finished = false, answered = false;
  const answer = (data) => {
    data.evidence = evidence || null;
    turn.result(data);
    if (data.sql) {
      state.turns.push(turn);
      saveTurns();
      showTurns();
    }
    finished = answered = true;
  };
  try {
    const resp = await fetch("v1/query/stream", {
      method: "POST", signal: control.signal,
      headers: headers({ "Content-Type": "application/json", "Accept": "text/event-stream" }),
      body: JSON.stringify(body),
    });
    const ctype = resp.headers.get("Content-Type") || "";
    if (resp.status === 401) {
      turn.error(await readProblem(resp), 401);
      state.apiKey = null;
      $("key-form").hidden = false;
      finished = true;
    } else if (!resp.ok) {
      turn.error(await readProblem(resp), resp.status);
      finished = true;
    } else if (ctype.startsWith("text/event-stream")) {
      await readEvents(resp, (name, data) => {
        if (name === "result") answer(data);
        else if (name === "error") {
          turn.error(data, data.status);
          finished = true;
        } else turn.stage(name, data);
      });
    } else {
      answer(await resp.json());
    }
    if (!finished) turn.error({ title: "The answer stopped early", detail: "the stream ended without a result" });
    if (answered) {  // after an error the question stays, to be edited and sent again
      $("question").value = "";
      $("evidence").value = "";
    }
  } catch (e) {
    if (control.signal.aborted) {
      turn.stopped();
      announce("Stopped");
    } else turn.error({ title: "Request failed", detail: String(e) });
  } finally {
    setBusy(null);
  }
}

function setBusy(control) {
  state.busy = control;
  $("send").disabled = !!control;
  $("send").textContent = control ? "Working\u2026" : "Ask";
  $("stop").hidden = !control;
  return control;
}

// ---- start -------------------------------------------------------------------------------------

$("ask").addEventListener("submit", ask);
$("stop").addEventListener("click", () => { if (state.busy) state.busy.abort(); });
$("new-conversation").addEventListener("click", clearHistory);
$("database").addEventListener("change", databaseChanged);
$("question").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("ask").requestSubmit(); }
});
$("key").addEventListener("submit", (e) => {
  e.preventDefault();
  state.apiKey = $("api-key").value;
  $("api-key").value = "";
  loadDatabases();
});
restoreTurns();
loadDatabases();
