/*
 * playground/app.js - the playground page's behaviour (index.html).
 *
 * Lists the databases (GET /v1/databases), sends each question to POST
 * /v1/query/stream (server-sent events) and draws every stage as its event
 * arrives: link (tables, columns, the join scaffold as an SVG graph drawn
 * here), evidence, descriptions, the prompt's size, each generation and
 * correction round with its validation report, the final validation, the
 * rows; then the final "result" (or "error") event.  Follow-up questions
 * send the earlier turns as `history`.  With auth on, the API key is asked
 * for and kept in a variable only (never in storage).  All text from the
 * service is inserted as text, never as HTML.
 *
 * Every URL is relative to the page (no leading slash), so behind a proxy
 * that serves the service under a path prefix and strips it
 * (https://host/t2s/playground/ -> /), the page, its assets and its API
 * calls all stay under the prefix.
 */
"use strict";

const state = {
  apiKey: null,      // memory only
  history: [],       // [{question, sql}] of answered turns, oldest first
  busy: false,
};
const HISTORY_MAX = 50;

// ---- DOM helpers --------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "style") node.style.cssText = v; // CSSOM: the page's CSP refuses style attributes
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function svgEl(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

const $ = (id) => document.getElementById(id);
const fmt = (x, d = 2) => (typeof x === "number" ? x.toFixed(d) : String(x));

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (state.apiKey) h["Authorization"] = "Bearer " + state.apiKey;
  return h;
}

// ---- problems (RFC 9457) ------------------------------------------------------------

function problemBox(p, fallbackStatus) {
  if (!p || typeof p !== "object") p = { title: "Error", detail: String(p), status: fallbackStatus };
  const box = el("div", { class: "problem", role: "alert" },
    el("h4", {}, (p.title || "Error") + (p.status ? " (" + p.status + ")" : "")),
    el("div", { class: "detail" }, p.detail || ""));
  if (p.sql) box.append(el("div", {}, "Last statement tried:"), el("pre", {}, p.sql));
  if (Array.isArray(p.validation) && p.validation.length) box.append(checksList(p.validation, true));
  if (p.request_id) box.append(el("div", { class: "rid" }, "request " + p.request_id));
  return box;
}

async function readProblem(resp) {
  const text = await resp.text();
  try { return JSON.parse(text); } catch (e) {
    return { title: resp.statusText || "Error", status: resp.status, detail: text.slice(0, 500) };
  }
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
  const previous = select.value;
  select.replaceChildren(...body.databases.map((d) =>
    el("option", { value: d.name, "data-engine": d.engine, "data-status": d.status },
      d.name + " (" + d.engine + (d.status === "up" ? "" : ", " + d.status) + ")")));
  if (previous) select.value = previous;
  if (!body.databases.length)
    $("page-error").append(problemBox({ title: "No database", detail: "This key may use no registered database." }));
  showDbInfo();
}

function showDbInfo() {
  const opt = $("database").selectedOptions[0];
  $("db-info").textContent = opt && opt.dataset.status !== "up" ? "database is " + opt.dataset.status : "";
}

// ---- the join scaffold as a graph ----------------------------------------------------

/* Tables on a circle (two in a row), joins as lines labelled with their columns. */
function joinGraph(tables, joins) {
  const names = tables.map((t) => t.name);
  for (const j of joins)
    for (const side of [j.left.table, j.right.table]) if (!names.includes(side)) names.push(side);
  const W = 720, nodeH = 28;
  const H = names.length <= 2 ? 140 : 360;
  const cx = W / 2, cy = H / 2, r = names.length <= 2 ? 200 : Math.min(W, H) / 2 - 50;
  const pos = {};
  names.forEach((n, i) => {
    if (names.length === 1) pos[n] = { x: cx, y: cy };
    else if (names.length === 2) pos[n] = { x: cx + (i ? r : -r), y: cy };
    else {
      const a = -Math.PI / 2 + (2 * Math.PI * i) / names.length;
      pos[n] = { x: cx + 1.5 * r * Math.cos(a), y: cy + r * Math.sin(a) };
    }
  });
  const svg = svgEl("svg", { viewBox: "0 0 " + W + " " + H, role: "img",
    "aria-label": "join scaffold: " + names.length + " tables, " + joins.length + " joins" });
  for (const j of joins) {
    const a = pos[j.left.table], b = pos[j.right.table];
    const g = svgEl("g", { class: "edge " + (j.kind === "foreign_key" ? "fk" : "inferred") });
    g.append(svgEl("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y }));
    const label = j.left.column + " = " + j.right.column;
    g.append(svgEl("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 6, "text-anchor": "middle" }, label));
    g.append(svgEl("title", {}, j.left.table + "." + j.left.column + " = " + j.right.table + "." + j.right.column +
      " (" + j.kind + ", cost " + fmt(j.cost) + ")"));
    svg.append(g);
  }
  for (const n of names) {
    const w = Math.max(60, n.length * 8 + 20), p = pos[n];
    const linked = tables.some((t) => t.name === n);
    svg.append(svgEl("g", { class: "node" + (linked ? "" : " extra") },
      svgEl("rect", { x: p.x - w / 2, y: p.y - nodeH / 2, width: w, height: nodeH, rx: 6 }),
      svgEl("text", { x: p.x, y: p.y + 4, "text-anchor": "middle" }, n)));
  }
  return el("div", { class: "graph" }, svg);
}

// ---- stage renderers ------------------------------------------------------------------

function checksList(checks, failuresOnly) {
  const ul = el("ul", { class: "checks" });
  for (const c of checks) {
    if (failuresOnly && c.ok) continue;
    const cls = c.ok ? "ok" : c.severity === "warning" ? "warnfail" : "fail";
    ul.append(el("li", { class: cls }, el("code", {}, "L" + c.level + " " + c.check), " ", c.detail));
  }
  return ul;
}

/* A report: the whole list when a blocking check fails, else folded behind its summary. */
function report(checks) {
  const failed = checks.filter((c) => !c.ok);
  if (failed.some((c) => c.severity !== "warning")) return checksList(checks, false);
  const summary = "all " + checks.length + " checks pass" + (failed.length ? " but " + failed.length + " warning" +
    (failed.length === 1 ? "" : "s") : "");
  return el("details", {}, el("summary", {}, summary), checksList(checks, false));
}

function sqlBlock(sql) {
  return el("pre", { class: "sql" }, sql || "(no statement in the model's answer)");
}

function resultTable(columns, rows, types) {
  const head = el("tr", {}, columns.map((c, i) =>
    el("th", { title: types && types[i] ? types[i] : null }, c)));
  const body = rows.map((r) => el("tr", {}, r.map((v) => {
    if (v === null) return el("td", { class: "null" }, "NULL");
    if (typeof v === "number") return el("td", { class: "num" }, String(v));
    return el("td", {}, typeof v === "object" ? JSON.stringify(v) : String(v));
  })));
  return el("div", { class: "scroll" }, el("table", { class: "result" }, el("thead", {}, head), el("tbody", {}, body)));
}

const render = {
  link(d) {
    const tables = el("table", {}, el("tr", {}, el("th", {}, "table"), el("th", {}, "score"), el("th", {}, "reasons")),
      (d.tables || []).map((t) => el("tr", {}, el("td", {}, t.name),
        el("td", {}, el("span", { class: "bar", style: "width:" + Math.round(60 * Math.min(1, Math.max(0, t.score))) + "px" }), fmt(t.score)),
        el("td", { class: "chips" }, (t.reasons || []).map((r) => el("span", {}, r))))));
    const cols = el("details", {}, el("summary", {}, (d.columns || []).length + " columns linked"),
      el("table", {}, (d.columns || []).map((c) => el("tr", {}, el("td", {}, c.table + "." + c.column), el("td", { class: "num" }, fmt(c.score))))));
    return ["Linked schema", " " + (d.mode || "") + ", " + fmt((d.timings_ms || {}).total, 1) + " ms",
      [tables, cols, joinGraph(d.tables || [], d.joins || [])]];
  },
  evidence(d) {
    const e = d.evidence;
    if (!e) return ["Evidence", "", [el("div", { class: "muted" }, "no evidence (see the trace's fallbacks)")]];
    const parts = [];
    if ((e.values || []).length)
      parts.push(el("table", {}, el("tr", {}, el("th", {}, "value as stored"), el("th", {}, "column"), el("th", {}, "score"), el("th", {}, "probe")),
        e.values.map((v) => el("tr", {}, el("td", {}, v.value), el("td", {}, v.table + "." + v.column), el("td", { class: "num" }, fmt(v.score)),
          el("td", {}, v.probe && v.probe.sql ? [el("code", {}, v.probe.sql), " \u2192 " + (v.probe.rows || []).length + " rows"] : "")))));
    if ((e.evidence || []).length)
      parts.push(el("ul", {}, e.evidence.map((x) => el("li", {}, el("span", { class: "badge info" }, x.kind), " ", x.text))));
    if ((e.examples || []).length)
      parts.push(el("details", {}, el("summary", {}, e.examples.length + " similar examples"),
        e.examples.map((x) => el("div", {}, x.question, sqlBlock(x.sql)))));
    if (!parts.length) parts.push(el("div", { class: "muted" }, "nothing matched"));
    return ["Evidence", " " + fmt((e.timings_ms || {}).total, 1) + " ms", parts];
  },
  describe(d) {
    const items = [];
    for (const t of d.tables || []) {
      items.push({ table: t.name, text: t.description, source: t.source });
      for (const c of t.columns || []) items.push({ table: t.name, column: c.name, text: c.description, source: c.source });
    }
    const by = {};
    for (const i of items) by[i.source] = (by[i.source] || 0) + 1;
    const summary = Object.entries(by).map(([k, v]) => v + " " + k).join(", ") || "none";
    return ["Descriptions", " " + summary, [el("details", {}, el("summary", {}, items.length + " descriptions"),
      el("ul", {}, items.map((i) => el("li", {}, el("code", {}, i.table + (i.column ? "." + i.column : "")), " ", i.text))))]];
  },
  prompt(d) {
    const s = d.shown || {};
    const line = (d.chars != null ? d.chars + " characters, " : "") + "~" + d.estimated_tokens + " tokens of a " +
      d.budget_tokens + "-token budget" + (d.over_budget ? " (over budget)" : "");
    const shown = "shows " + s.tables + " tables, " + s.columns + " columns, " + s.examples + " examples, " + s.history +
      " history turns; dropped " + s.columns_dropped + " columns, " + s.examples_dropped + " examples, " + s.history_dropped + " turns";
    return ["Prompt", " " + line, [el("div", { class: "muted" }, shown),
      el("details", {}, el("summary", {}, "messages"), (d.messages || []).map((m) => el("div", {}, el("b", {}, m.role), el("pre", {}, m.content))))]];
  },
  generation(d) {
    return ["Generation", " round 0" + (d.candidate ? ", candidate " + (d.candidate + 1) : "") + " ",
      [badge(d.ok), sqlBlock(d.sql), report(d.validation || [])]];
  },
  correction(d) {
    return ["Correction", " round " + d.round + ": " + d.check + " (level " + d.level + ")",
      [el("div", { class: "muted" }, d.error), badge(d.ok), sqlBlock(d.sql), report(d.validation || [])]];
  },
  validation(d) {
    return ["Final SQL", " score " + d.score + "/3 ", [badge(d.ok), sqlBlock(d.sql), report(d.validation || [])]];
  },
  rows(d) {
    const note = d.row_count + (d.row_count === 1 ? " row" : " rows") + (d.truncated ? " (truncated by " + d.truncated_by + ")" : "") + ", " + fmt(d.elapsed_ms, 1) + " ms";
    return ["Result", " " + note, [resultTable(d.columns || [], d.rows || [], d.column_types)]];
  },
};

function badge(ok) {
  return el("span", { class: "badge " + (ok ? "ok" : "bad") }, ok ? "passes" : "fails a check");
}

// ---- one turn -----------------------------------------------------------------------------

class Turn {
  constructor(question, evidence, database) {
    this.seen = new Set();
    this.node = el("div", { class: "turn" },
      el("div", { class: "q" }, question, el("span", { class: "muted" }, " \u2014 " + database),
        evidence ? el("span", { class: "ev" }, "evidence: " + evidence) : null));
    this.pending = el("div", { class: "pending" }, "linking the schema\u2026");
    this.node.append(this.pending);
    $("conversation").append(this.node);
  }

  stage(name, data) {
    const r = render[name];
    if (!r) return;
    const [title, sub, parts] = r(data);
    this.seen.add(name);
    const section = el("div", { class: "stage", "data-stage": name }, el("h3", {}, title, el("span", { class: "t" }, sub)), parts);
    this.node.insertBefore(section, this.pending);
    const next = { link: "looking for evidence\u2026", evidence: "describing\u2026", describe: "writing the prompt\u2026",
      prompt: "asking the model\u2026", generation: "validating\u2026", correction: "validating\u2026", validation: "running\u2026" }[name];
    this.pending.textContent = next || "";
    section.scrollIntoView({ block: "nearest" });
  }

  /* The whole answer: draws what no event showed (a cached answer streams only this). */
  result(body) {
    const t = body.trace || {};
    if (!this.seen.has("link") && t.link) this.stage("link", t.link);
    if (!this.seen.has("evidence") && "evidence" in t) this.stage("evidence", { evidence: t.evidence });
    if (!this.seen.has("prompt") && t.prompt) this.stage("prompt", t.prompt);
    if (!this.seen.has("correction"))
      for (const c of body.corrections || []) this.stage("correction", c);
    if (!this.seen.has("validation")) this.stage("validation", { sql: body.sql, ok: body.ok, score: body.score, validation: body.validation });
    if (!this.seen.has("rows") && body.columns) this.stage("rows", body);
    const total = t.timings_ms ? fmt(t.timings_ms.total, 0) + " ms" : "";
    /* Who wrote the SQL: the generate model, or the built-in generator (no model, or in a failed model's place). */
    const who = { model: "SQL by the model", builtin: "SQL by the built-in generator" }[body.generator] || "";
    /* How far to trust it: the calibrated probability and its band (high / medium / low). */
    const band = body.confidence_band ? ", " + body.confidence_band : "";
    const sure = typeof body.confidence === "number" ? " (confidence " + fmt(body.confidence, 2) + band + ")" : "";
    this.pending.className = "stage muted";
    if (body.generator) this.pending.dataset.generator = body.generator;
    if (body.confidence_band) this.pending.dataset.band = body.confidence_band;
    this.pending.textContent = [body.cached ? "answered from the cache" : "", who + (who ? sure : ""), total]
      .filter(Boolean).join(", ");
  }

  error(problem, status) {
    this.pending.remove();
    this.node.append(problemBox(problem, status));
  }
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
  const body = { database, question };
  if (evidence) body.evidence = evidence;
  if (state.history.length) body.history = state.history.slice(-HISTORY_MAX);
  const turn = new Turn(question, evidence, database);
  setBusy(true);
  let finished = false, answered = false;
  try {
    const resp = await fetch("v1/query/stream", {
      method: "POST",
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
        if (name === "result") {
          turn.result(data);
          remember(question, data.sql);
          finished = answered = true;
        } else if (name === "error") {
          turn.error(data, data.status);
          finished = true;
        } else {
          turn.stage(name, data);
        }
      });
    } else {
      const data = await resp.json();
      turn.result(data);
      remember(question, data.sql);
      finished = answered = true;
    }
    if (!finished) turn.error({ title: "The answer stopped early", detail: "the stream ended without a result" });
    if (answered) {  // after an error the question stays, to be edited and sent again
      $("question").value = "";
      $("evidence").value = "";
    }
  } catch (e) {
    turn.error({ title: "Request failed", detail: String(e) });
  } finally {
    setBusy(false);
  }
}

function remember(question, sql) {
  if (!sql) return;
  state.history.push({ question, sql });
  if (state.history.length > HISTORY_MAX) state.history.shift();
  showTurns();
}

function showTurns() {
  $("turns").textContent = state.history.length
    ? "follow-up questions see the " + state.history.length + " earlier turn" + (state.history.length === 1 ? "" : "s")
    : "";
}

function setBusy(busy) {
  state.busy = busy;
  $("send").disabled = busy;
  $("send").textContent = busy ? "Working\u2026" : "Ask";
}

function newConversation() {
  state.history = [];
  $("conversation").replaceChildren();
  showTurns();
  $("question").focus();
}

// ---- start -------------------------------------------------------------------------------------

$("ask").addEventListener("submit", ask);
$("new-conversation").addEventListener("click", newConversation);
$("database").addEventListener("change", () => { showDbInfo(); newConversation(); });
$("question").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("ask").requestSubmit(); }
});
$("key").addEventListener("submit", (e) => {
  e.preventDefault();
  state.apiKey = $("api-key").value;
  $("api-key").value = "";
  loadDatabases();
});
loadDatabases();
