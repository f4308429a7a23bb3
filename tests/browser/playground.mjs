// playground.mjs - drives the playground page (GET /) in headless Chromium:
// the answer first (position at 1280x900 and 390x844), the chart drawn by
// Vega, Copy SQL, Download CSV, Right / Wrong feedback, Stop, the history
// across reloads, no sideways overflow on a phone (test_playground.py lists
// the checks).
//
// Then opens the API reference (GET /docs) and checks that Swagger UI lists
// the operations (/query with its responses) without fetching from another
// origin.
//
// Run by tests/browser/test_playground.py, which starts text2sqld
// (auth on) and the model stub and reads this script's output: one JSON
// object per line, {"check": name, "ok": bool, "diag": text} for each check,
// or {"skip": reason} when the browser cannot start.  Screenshots go to
// $T2S_ARTIFACTS.  Environment: T2S_URL (the service), T2S_KEY (an API key
// it accepts), T2S_ARTIFACTS, CHROMIUM (default /usr/bin/chromium).
//
// Uses Debian's chromium through playwright-core; never downloads a browser.
import { chromium } from "playwright-core";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const url = process.env.T2S_URL;
const key = process.env.T2S_KEY;
const artifacts = process.env.T2S_ARTIFACTS || os.tmpdir();
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const check = (name, ok, diag) => out({ check: name, ok: !!ok, diag: ok ? undefined : String(diag ?? "") });
const STEP_MS = 30000;

const GROUPED_ROWS = [["France", "2"], ['Korea, "South"', "1"], ["Netherlands", "1"], ["United States", "1"]];
const GROUPED_CSV = 'country,singers\r\nFrance,2\r\n"Korea, ""South""",1\r\nNetherlands,1\r\nUnited States,1\r\n';
const SLOW_MODEL_MS = Number(process.env.T2S_SLOW_MODEL_MS || 6000);

/* [ok, diag]: the first `target` of the turn starts within half the viewport's height below the question. */
async function answerGap(page, turn, target) {
  const q = await turn.locator(".q").boundingBox();
  const t = await turn.locator(target).first().boundingBox();
  const h = page.viewportSize().height;
  if (!q || !t) return [false, "not laid out: " + JSON.stringify([q, t])];
  const gap = t.y - q.y;
  return [gap >= 0 && gap <= h / 2, "starts " + Math.round(gap) + " px below the question; half a screen is " + h / 2];
}

/* [ok, diag]: nothing wider than the window. */
async function noOverflow(page) {
  const m = await page.evaluate(() => {
    const wide = [...document.querySelectorAll("body *")].filter((n) => n.getBoundingClientRect().right > innerWidth + 1 &&
      !n.closest(".wide, .scroll, .graph, pre")).slice(0, 5).map((n) => n.tagName + "." + n.className);
    return { scroll: document.documentElement.scrollWidth, inner: innerWidth, wide };
  });
  return [m.scroll <= m.inner, JSON.stringify(m)];
}

/* The chart of a turn once drawn: whether it is an SVG, and how many data marks it holds. */
async function chartMarks(turn) {
  const box = turn.locator(".chart");
  try {
    await box.locator("svg g.role-mark").first().waitFor({ state: "attached", timeout: STEP_MS });
  } catch (e) {
    return { svg: false, marks: 0, text: await box.innerText().catch(() => "no .chart") };
  }
  return box.evaluate((b) => ({
    svg: !!b.querySelector("svg"),
    marks: b.querySelectorAll("svg g.role-mark > path, svg g.role-mark > g, svg g.role-mark > circle").length,
  }));
}

/* GET /v1/feedback?correct=... (the test key has the admin scope): the items of the concert database. */
async function feedbackList(correct) {
  const r = await fetch(url + "/v1/feedback?database=concert&correct=" + correct,
    { headers: { Authorization: "Bearer " + key } });
  const body = await r.json().catch(() => ({}));
  return body.feedback || [];
}

function parseEvents(text) {
  return text.split("\n\n").filter((b) => b.trim()).map((block) => {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      else if (line.startsWith(":")) return null;
    }
    return data.length ? { name, data: JSON.parse(data.join("\n")) } : null;
  }).filter(Boolean);
}

/* Asks a grouped count and waits for its answer.  The stream is relayed through the test: when the
   service's result has no `explanation` or `chart` (the fields arrive in another branch), the test
   adds them as the service will (a sentence; a Vega-Lite bar of the category by the count), so the
   page draws what it would; when the service sends them, they are passed on untouched. */
async function askGrouped(page, question, index) {
  const relayed = { result: null, service_chart: null, service_explanation: null };
  await page.route(/\/v1\/query\/stream$/, async (route) => {
    const resp = await route.fetch();
    const events = parseEvents(await resp.text());
    const last = events.find((e) => e.name === "result");
    if (last) {
      const r = last.data;
      relayed.service_chart = "chart" in r;
      relayed.service_explanation = "explanation" in r;
      if (!("explanation" in r)) r.explanation = "Counts the singers of each country.";
      if (!("chart" in r))
        r.chart = { $schema: "https://vega.github.io/schema/vega-lite/v6.json", mark: "bar",
          data: { values: r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c, row[i]]))) },
          encoding: { x: { field: r.columns[0], type: "nominal" }, y: { field: r.columns[1], type: "quantitative" } } };
      relayed.result = r;
    }
    const body = events.map((e) => "event: " + e.name + "\ndata: " + JSON.stringify(e.data) + "\n\n").join("");
    await route.fulfill({ response: resp, body });
  });
  await page.fill("#question", question);
  await page.click("#send");
  const turn = page.locator(".turn").nth(index);
  await turn.locator(".answer table.result").waitFor({ state: "visible", timeout: STEP_MS });
  await page.unrouteAll({ behavior: "wait" });
  return { turn, relayed };
}

fs.mkdirSync(artifacts, { recursive: true });
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "t2s-chromium-"));
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 900 },
    acceptDownloads: true,
    timeout: 60000,
  });
} catch (e) {
  out({ skip: "chromium cannot start: " + String(e.message || e).split("\n")[0] });
  fs.rmSync(profile, { recursive: true, force: true });
  process.exit(0);
}

const shot = async (page, name) => {
  await page.screenshot({ path: path.join(artifacts, name + ".png"), fullPage: true });
};

const page = context.pages()[0] || (await context.newPage());
await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(url).origin });
const consoleErrors = [];
const foreign = [];
// The first GET /databases answers 401 by design; Chromium logs every failed load as a console error.
page.on("console", (m) => {
  if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) consoleErrors.push(m.text());
});
page.on("pageerror", (e) => consoleErrors.push(String(e)));
page.on("request", (r) => { if (!r.url().startsWith(url)) foreign.push(r.url()); });

try {
  // 1. The page loads and, auth being on, asks for a key.
  const resp = await page.goto(url + "/", { waitUntil: "load" });
  check("page_loads_200", resp && resp.status() === 200, resp && resp.status());
  check("page_title", (await page.title()) === "text2sqld playground", await page.title());
  await page.locator("#key-form").waitFor({ state: "visible", timeout: STEP_MS });
  check("page_asks_for_an_api_key_when_auth_is_on", true);
  await shot(page, "01-key-form");
  await page.fill("#api-key", key);
  await page.click("#key button[type=submit]");
  await page.locator("#database option").first().waitFor({ state: "attached", timeout: STEP_MS });
  const dbs = await page.locator("#database option").allTextContents();
  check("databases_are_listed_after_the_key", dbs.some((d) => d.startsWith("concert")), JSON.stringify(dbs));
  check("key_form_hides_once_accepted", !(await page.locator("#key-form").isVisible()), "still visible");
  const stored = await page.evaluate(() => JSON.stringify([localStorage, sessionStorage, document.cookie]));
  check("api_key_is_not_stored_by_the_page", !stored.includes(key), stored);

  // 2. A question: the answer first (rows right under the question), every stage in the folded trace.
  await page.fill("#question", "How many singers are from France?");
  await page.click("#send");
  const fresh = page.locator(".turn").first();
  await fresh.locator(".answer table.result").waitFor({ state: "visible", timeout: STEP_MS });
  const stages = await fresh.locator(".trace .stage[data-stage]").evaluateAll((ns) => ns.map((n) => n.dataset.stage));
  check("stages_arrive_in_order_in_the_trace", JSON.stringify(stages) === JSON.stringify(
    ["link", "evidence", "describe", "prompt", "generation", "correction", "validation", "rows"]), JSON.stringify(stages));
  check("trace_is_folded_below_the_answer", !(await fresh.locator(".trace").evaluate((d) => d.open)) &&
    (await fresh.locator(".trace > summary").innerText()) === "How this answer was made",
    await fresh.locator(".trace > summary").innerText());
  await fresh.locator(".trace > summary").click();
  const nodes = await fresh.locator(".graph svg g.node text").allTextContents();
  const edges = await fresh.locator(".graph svg g.edge").count();
  check("join_graph_draws_the_linked_tables", nodes.includes("singer") && nodes.length >= 1, JSON.stringify(nodes));
  check("join_graph_draws_edges_between_them", nodes.length < 2 || edges >= 1, edges + " edges for " + nodes.length + " nodes");
  const cells = await fresh.locator("table.result td").allTextContents();
  const heads = await fresh.locator("table.result th").allTextContents();
  check("result_table_shows_the_rows", JSON.stringify(cells) === JSON.stringify(["2"]) && heads.length === 1,
    JSON.stringify([heads, cells]));
  check("row_count_says_1_row", /^1 row$/.test(await fresh.locator(".answer .rows .muted").innerText()),
    await fresh.locator(".answer .rows .muted").innerText());
  const correction = await fresh.locator(".stage[data-stage=correction]").innerText();
  check("correction_round_shows_the_error_and_new_sql", /nation/.test(correction) && /country/.test(correction), correction);
  const prompt = await fresh.locator(".stage[data-stage=prompt] h3").innerText();
  check("prompt_size_is_shown", /characters, ~\d+ tokens/.test(prompt), prompt);
  const final = await fresh.locator(".stage[data-stage=validation] h3").innerText();
  check("final_sql_shows_its_score", /score 3\/3/.test(final), final);
  const who = await fresh.locator("[data-generator]").first().innerText().catch(() => "");
  check("answer_says_which_generator_wrote_it", /SQL by the model \(confidence \d\.\d\d, (high|medium|low)\)/.test(who), who);
  const band = await fresh.locator("[data-band]").first().getAttribute("data-band").catch(() => null);
  check("answer_shows_its_confidence_band", ["high", "medium", "low"].includes(band) && who.includes(band), band);
  check("answer_shows_the_sql", (await fresh.locator(".answer pre.sql").innerText()).includes("country = 'France'"),
    await fresh.locator(".answer pre.sql").innerText());
  await fresh.locator(".trace > summary").click();
  check("answer_starts_within_half_a_screen_1280x900", ...(await answerGap(page, fresh, ".answer table.result tbody tr")));
  check("the_question_box_is_cleared_for_a_follow_up", (await page.inputValue("#question")) === "", "not cleared");
  await shot(page, "02-answer");

  // 2b. The same question again, on a cleared history: answered from the answer cache (a single
  //     result event), with its score and row count shown as for a fresh answer.
  await page.getByRole("button", { name: "Clear history" }).click();
  check("clear_history_empties_the_page_and_storage", (await page.locator(".turn").count()) === 0 &&
    (await page.evaluate(() => localStorage.getItem("text2sqld.playground.turns.v1"))) === null, "turns remain");
  await page.fill("#question", "How many singers are from France?");
  await page.click("#send");
  const turn = page.locator(".turn").first();
  await turn.locator(".answer table.result").waitFor({ state: "visible", timeout: STEP_MS });
  const cachedWho = await turn.locator("[data-generator]").first().innerText();
  check("cached_answer_says_so", /^answered from the cache, SQL by the model/.test(cachedWho), cachedWho);
  const cachedFinal = await turn.locator(".stage[data-stage=validation] h3").textContent();
  check("cached_answer_shows_its_score", /score 3\/3/.test(cachedFinal), cachedFinal);
  check("cached_answer_says_1_row", (await turn.locator(".answer .rows .muted").innerText()) === "1 row" &&
    /Execution 1 row,/.test(await turn.locator(".stage[data-stage=rows] h3").textContent()),
    await turn.locator(".stage[data-stage=rows] h3").textContent());

  // 3. A follow-up question keeps the conversation (the stub sees the history).
  await page.fill("#question", "And how many are from the Netherlands?");
  await page.click("#send");
  const second = page.locator(".turn").nth(1);
  await second.locator("table.result, .problem").first().waitFor({ state: "visible", timeout: STEP_MS });
  check("follow_up_answers", await second.locator("table.result").isVisible(), await second.innerText());
  check("page_counts_the_earlier_turns", /2 earlier turns/.test(await page.locator("#turns").innerText()),
    await page.locator("#turns").innerText());

  // 4. A grouped count: explanation, chart (drawn by Vega), rows, SQL to copy, CSV, feedback.
  //    Until the service sends `chart` and `explanation` itself, the test adds them to the answer
  //    it relays (only when absent: the service's own fields are used as soon as it sends them).
  const grouped = await askGrouped(page, "How many singers are in each country?", 2);
  const third = grouped.turn;
  check("service_answer_relayed_for_the_grouped_count", grouped.relayed.result, JSON.stringify(grouped.relayed));
  const want = grouped.relayed.result || {};
  check("explanation_is_shown_under_the_question",
    (await third.locator(".answer .explanation").innerText().catch(() => "")) === want.explanation,
    JSON.stringify([await third.locator(".answer").innerText(), want.explanation]));
  const marks = await chartMarks(third);
  check("chart_is_drawn_for_the_grouped_count", marks.svg && marks.marks >= (want.rows || []).length && marks.marks > 0,
    JSON.stringify(marks));
  check("chart_comes_before_the_table", await third.evaluate((t) => {
    const c = t.querySelector(".chart"), r = t.querySelector("table.result");
    return !!(c && r && (c.compareDocumentPosition(r) & Node.DOCUMENT_POSITION_FOLLOWING));
  }), "order");
  check("answer_starts_within_half_a_screen_1280x900_with_a_chart", ...(await answerGap(page, third, ".chart svg")));
  const gcells = await third.locator("table.result tbody tr").evaluateAll((rs) => rs.map((r) =>
    [...r.children].map((c) => c.textContent)));
  check("grouped_rows_are_shown", JSON.stringify(gcells) === JSON.stringify(GROUPED_ROWS), JSON.stringify(gcells));
  // Copy SQL (clipboard), found by its accessible name.
  await third.getByRole("button", { name: "Copy SQL" }).click();
  const clip = await page.evaluate(() => navigator.clipboard.readText()).catch((e) => "error: " + e);
  check("copy_sql_puts_the_sql_on_the_clipboard", clip === want.sql && clip.includes("GROUP BY"), JSON.stringify([clip, want.sql]));
  // CSV download: the file's content, RFC 4180 (quoted field, doubled quotes, CRLF).
  const [dl] = await Promise.all([page.waitForEvent("download", { timeout: STEP_MS }),
    third.getByRole("button", { name: "Download CSV" }).click()]);
  const csv = fs.readFileSync(await dl.path(), "utf8");
  check("csv_download_holds_the_rows", csv === GROUPED_CSV, JSON.stringify([csv, GROUPED_CSV]));
  check("csv_download_is_named_after_the_question", dl.suggestedFilename() === "how-many-singers-are-in-each-country.csv",
    dl.suggestedFilename());
  // 👍: the verdict reaches the service (GET /feedback lists it).
  await third.getByRole("button", { name: "Right answer" }).click();
  await third.locator(".feedback-note", { hasText: /\S/ }).waitFor({ timeout: STEP_MS });
  const upNote = await third.locator(".feedback-note").innerText();
  const ups = await feedbackList("true");
  check("thumbs_up_reaches_the_service", /^Thanks/.test(upNote) &&
    ups.some((f) => f.question === "How many singers are in each country?" && f.sql === want.sql && f.correct === true),
    JSON.stringify([upNote, ups]));
  await shot(page, "05-chart");

  // 5. A phone (390x844): the answer right under the question, nothing overflows sideways, even with
  //    the trace (join graph, link tables) open.
  await page.setViewportSize({ width: 390, height: 844 });
  const phone = await askGrouped(page, "How many singers are in each country, on a phone?", 3);
  await chartMarks(phone.turn);
  await phone.turn.screenshot({ path: path.join(artifacts, "06-phone.png") });
  check("answer_starts_within_half_a_screen_390x844", ...(await answerGap(page, phone.turn, ".chart svg")));
  check("no_sideways_overflow_at_390px", ...(await noOverflow(page)));
  for (const d of await page.locator(".turn .trace").all()) await d.evaluate((n) => { n.open = true; });
  check("no_sideways_overflow_at_390px_with_the_trace_open", ...(await noOverflow(page)));
  const gw = await phone.turn.locator(".graph svg").evaluate((s) => s.getBoundingClientRect().width);
  check("join_graph_stays_readable_at_390px", gw >= 500, gw + " px wide");
  for (const d of await page.locator(".turn .trace").all()) await d.evaluate((n) => { n.open = false; });
  await page.setViewportSize({ width: 1280, height: 900 });

  // 6. An error is shown readably (problem title, status, detail; no raw JSON).
  await page.fill("#question", "Please fail this one");
  await page.click("#send");
  const failed = page.locator(".turn").nth(4);
  await failed.locator(".problem").waitFor({ state: "visible", timeout: STEP_MS });
  const problem = await failed.locator(".problem").innerText();
  check("error_is_shown_with_title_status_and_detail",
    /No valid SQL generated \(422\)/.test(problem) && /no executable read-only SQL/.test(problem), problem);
  check("error_is_not_raw_json", !problem.includes('"type"') && !problem.includes("urn:text2sqld"), problem);
  check("send_button_is_usable_after_an_error", await page.locator("#send").isEnabled(), "disabled");
  check("question_stays_after_an_error_to_be_sent_again",
    (await page.inputValue("#question")) === "Please fail this one", await page.inputValue("#question"));
  await shot(page, "03-error");

  // 7. Stop: aborts the stream while the (slow) model works; the page is usable at once.
  await page.fill("#question", "Take your time: how many concerts are there?");
  await page.click("#send");
  const slow = page.locator(".turn").nth(5);
  const stop = page.getByRole("button", { name: "Stop" });
  await stop.waitFor({ state: "visible", timeout: STEP_MS });
  await slow.locator(".pending", { hasText: "asking the model" }).waitFor({ timeout: STEP_MS });
  const t0 = Date.now();
  await stop.click();
  await slow.locator(".stopped").waitFor({ timeout: 5000 });
  const stopMs = Date.now() - t0;
  check("stop_aborts_the_answer_at_once", stopMs < 3000, stopMs + " ms");
  check("stop_hides_and_ask_is_usable_again", !(await stop.isVisible()) && (await page.locator("#send").isEnabled()),
    "stop visible or ask disabled");
  check("stopped_question_stays_in_the_box",
    (await page.inputValue("#question")) === "Take your time: how many concerts are there?", await page.inputValue("#question"));
  await page.waitForTimeout(SLOW_MODEL_MS + 1000);
  check("stopped_turn_shows_no_late_answer", (await slow.locator("table.result").count()) === 0, await slow.innerText());

  // 8. 👎 on the first answer: kept for review.
  await turn.getByRole("button", { name: "Wrong answer" }).click();
  await turn.locator(".feedback-note", { hasText: /\S/ }).waitFor({ timeout: STEP_MS });
  const downs = await feedbackList("false");
  check("thumbs_down_reaches_the_service",
    downs.some((f) => f.question === "How many singers are from France?" && f.correct === false), JSON.stringify(downs));

  // 9. Every control has an accessible name.
  const unnamed = await page.evaluate(() => [...document.querySelectorAll("button, input, select, textarea, a[href]")]
    .filter((n) => !n.hidden && !(n.getAttribute("aria-label") || "").trim() && !(n.textContent || "").trim() &&
      !(n.labels && n.labels.length))
    .map((n) => n.outerHTML.slice(0, 120)));
  check("every_control_has_an_accessible_name", unnamed.length === 0, unnamed.join("\n"));
  check("page_fetched_nothing_from_elsewhere", foreign.length === 0, foreign.join(" "));
  check("page_logged_no_script_errors", consoleErrors.length === 0, consoleErrors.join("\n"));

  // 10. History survives a reload (answered turns, their chart and rows); Clear history empties it.
  const answered = 4;
  await page.reload({ waitUntil: "load" });
  await page.locator(".turn").nth(answered - 1).waitFor({ timeout: STEP_MS });
  const kept = await page.locator(".turn .q").evaluateAll((ns) => ns.map((n) => n.firstChild.textContent));
  check("history_survives_a_reload", JSON.stringify(kept) === JSON.stringify(["How many singers are from France?",
    "And how many are from the Netherlands?", "How many singers are in each country?",
    "How many singers are in each country, on a phone?"]), JSON.stringify(kept));
  const again = page.locator(".turn").nth(2);
  const marksAgain = await chartMarks(again);
  check("restored_answer_draws_its_chart_and_rows", marksAgain.marks > 0 &&
    (await again.locator("table.result tbody tr").count()) === GROUPED_ROWS.length, JSON.stringify(marksAgain));
  check("restored_answer_remembers_its_feedback",
    (await again.getByRole("button", { name: "Right answer" }).getAttribute("aria-pressed")) === "true", "not pressed");
  await page.fill("#api-key", key);
  await page.click("#key button[type=submit]");
  await page.locator("#database option").first().waitFor({ state: "attached", timeout: STEP_MS });
  check("restored_history_is_sent_with_follow_ups", /4 earlier turns/.test(await page.locator("#turns").innerText()),
    await page.locator("#turns").innerText());
  await page.getByRole("button", { name: "Clear history" }).click();
  check("clear_history_empties_the_page", (await page.locator(".turn").count()) === 0, "turns remain");
  await page.reload({ waitUntil: "load" });
  await page.locator("#key-form").waitFor({ state: "visible", timeout: STEP_MS });
  check("cleared_history_stays_cleared_after_a_reload", (await page.locator(".turn").count()) === 0 &&
    (await page.evaluate(() => localStorage.getItem("text2sqld.playground.turns.v1"))) === null, "turns remain");
  check("page_logged_no_script_errors_after_reloads", consoleErrors.length === 0, consoleErrors.join("\n"));

  // 6. The API reference (GET /docs, Swagger UI served by text2sqld): the operations list renders,
  //    /query among them, with its responses, and nothing is fetched from another origin.
  const docs = await context.newPage();
  const docsForeign = [];
  const docsErrors = [];
  docs.on("request", (r) => {
    const u = r.url();
    if (!u.startsWith(url) && !u.startsWith("data:") && !u.startsWith("blob:")) docsForeign.push(u);
  });
  docs.on("pageerror", (e) => docsErrors.push(String(e)));
  const docsResp = await docs.goto(url + "/docs", { waitUntil: "load" });
  check("docs_page_loads_200", docsResp && docsResp.status() === 200, docsResp && docsResp.status());
  await docs.locator("body[data-docs-ready=true]").waitFor({ state: "attached", timeout: STEP_MS });
  await docs.locator(".opblock").first().waitFor({ state: "visible", timeout: STEP_MS });
  const ops = await docs.locator(".opblock .opblock-summary-path").evaluateAll(
    (ns) => ns.map((n) => n.getAttribute("data-path") || n.textContent.trim()));
  check("docs_list_the_operations", ops.length >= 20, ops.length + " operations: " + JSON.stringify(ops));
  const query = docs.locator(".opblock-post").filter({ has: docs.locator('.opblock-summary-path[data-path="/v1/query"]') });
  check("docs_list_the_query_operation", (await query.count()) === 1, JSON.stringify(ops));
  await query.locator(".opblock-summary").first().click();
  await query.locator(".responses-table").first().waitFor({ state: "visible", timeout: STEP_MS });
  const codes = await query.locator(".responses-table tr.response").evaluateAll(
    (ns) => ns.map((n) => n.getAttribute("data-code")));
  check("docs_show_the_query_responses", ["200", "422", "429", "503"].every((c) => codes.includes(c)), JSON.stringify(codes));
  const specErrors = await docs.locator(".errors-wrapper").allInnerTexts();
  check("docs_show_no_document_errors", specErrors.length === 0, specErrors.join("\n").slice(0, 2000));
  await shot(docs, "04-docs");
  check("docs_fetched_nothing_from_another_origin", docsForeign.length === 0, docsForeign.join(" "));
  check("docs_raised_no_script_errors", docsErrors.length === 0, docsErrors.join("\n"));
  await docs.close();
} catch (e) {
  check("browser_steps_ran_without_exception", false, e.stack || String(e));
  try { await shot(page, "99-failure"); } catch (_) { /* the page may be gone */ }
} finally {
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
