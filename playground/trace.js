/*
 * playground/trace.js - how an answer was made, for the playground page
 * (index.html; loaded before app.js, which uses these globals): DOM helpers,
 * RFC 9457 problem boxes, and a renderer per stage of the streamed trace
 * (link with the join scaffold as an SVG graph drawn here, evidence,
 * descriptions, the prompt's size, each generation and correction round
 * with its validation report, the final validation, the execution).  All
 * text from the service is inserted as text, never as HTML.
 */
"use strict";

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

/* "1 row", "2 rows". */
const count = (n, word) => n + " " + word + (n === 1 ? "" : "s");

/* How far a statement got, as the service scores it (pipeline/generate/validate.c): the levels
   passed before the first failed blocking check (a failed warning blocks nothing); 3 when none failed. */
function validationScore(checks) {
  const failed = (checks || []).filter((c) => !c.ok && c.severity !== "warning").map((c) => c.level);
  return failed.length ? Math.min(...failed) - 1 : 3;
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
      [el("div", { class: "wide" }, tables), cols, joinGraph(d.tables || [], d.joins || [])]];
  },
  evidence(d) {
    const e = d.evidence;
    if (!e) return ["Evidence", "", [el("div", { class: "muted" }, "no evidence (see the trace's fallbacks)")]];
    const parts = [];
    if ((e.values || []).length)
      parts.push(el("div", { class: "wide" }, el("table", {}, el("tr", {}, el("th", {}, "value as stored"), el("th", {}, "column"), el("th", {}, "score"), el("th", {}, "probe")),
        e.values.map((v) => el("tr", {}, el("td", {}, v.value), el("td", {}, v.table + "." + v.column), el("td", { class: "num" }, fmt(v.score)),
          el("td", {}, v.probe && v.probe.sql ? [el("code", {}, v.probe.sql), " \u2192 " + count((v.probe.rows || []).length, "row")] : ""))))));
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
    const score = typeof d.score === "number" ? d.score : validationScore(d.validation);
    return ["Final SQL", " score " + score + "/3 ", [badge(d.ok), sqlBlock(d.sql), report(d.validation || [])]];
  },
  rows(d) {
    const note = count(d.row_count, "row") + (d.truncated ? " (truncated by " + d.truncated_by + ")" : "") + ", " +
      fmt(d.elapsed_ms, 1) + " ms";
    return ["Execution", " " + note, [el("div", { class: "muted" }, "the rows are in the answer above")]];
  },
};

function badge(ok) {
  return el("span", { class: "badge " + (ok ? "ok" : "bad") }, ok ? "passes" : "fails a check");
}

