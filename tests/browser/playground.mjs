// playground.mjs - drives the playground page (GET /) in headless Chromium.
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

fs.mkdirSync(artifacts, { recursive: true });
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "t2s-chromium-"));
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
    viewport: { width: 1200, height: 900 },
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

  // 2. A question: every stage arrives, the graph and the result table appear.
  await page.fill("#question", "How many singers are from France?");
  await page.click("#send");
  const turn = page.locator(".turn").first();
  await turn.locator("table.result").waitFor({ state: "visible", timeout: STEP_MS });
  const stages = await turn.locator(".stage[data-stage]").evaluateAll((ns) => ns.map((n) => n.dataset.stage));
  check("stages_arrive_in_order", JSON.stringify(stages) === JSON.stringify(
    ["link", "evidence", "describe", "prompt", "generation", "correction", "validation", "rows"]), JSON.stringify(stages));
  const nodes = await turn.locator(".graph svg g.node text").allTextContents();
  const edges = await turn.locator(".graph svg g.edge").count();
  check("join_graph_draws_the_linked_tables", nodes.includes("singer") && nodes.length >= 1, JSON.stringify(nodes));
  check("join_graph_draws_edges_between_them", nodes.length < 2 || edges >= 1, edges + " edges for " + nodes.length + " nodes");
  const cells = await turn.locator("table.result td").allTextContents();
  const heads = await turn.locator("table.result th").allTextContents();
  check("result_table_shows_the_rows", JSON.stringify(cells) === JSON.stringify(["2"]) && heads.length === 1,
    JSON.stringify([heads, cells]));
  const correction = await turn.locator(".stage[data-stage=correction]").innerText();
  check("correction_round_shows_the_error_and_new_sql", /nation/.test(correction) && /country/.test(correction), correction);
  const prompt = await turn.locator(".stage[data-stage=prompt] h3").innerText();
  check("prompt_size_is_shown", /characters, ~\d+ tokens/.test(prompt), prompt);
  const who = await turn.locator("[data-generator]").first().innerText().catch(() => "");
  check("answer_says_which_generator_wrote_it", /SQL by the model \(confidence \d\.\d\d, (high|medium|low)\)/.test(who), who);
  const band = await turn.locator("[data-band]").first().getAttribute("data-band").catch(() => null);
  check("answer_shows_its_confidence_band", ["high", "medium", "low"].includes(band) && who.includes(band), band);
  check("the_question_box_is_cleared_for_a_follow_up", (await page.inputValue("#question")) === "", "not cleared");
  await shot(page, "02-answer");

  // 3. A follow-up question keeps the conversation (the stub sees the history).
  await page.fill("#question", "And how many are from the Netherlands?");
  await page.click("#send");
  const second = page.locator(".turn").nth(1);
  await second.locator("table.result, .problem").first().waitFor({ state: "visible", timeout: STEP_MS });
  check("follow_up_answers", await second.locator("table.result").isVisible(), await second.innerText());
  check("page_counts_the_earlier_turns", /2 earlier turns/.test(await page.locator("#turns").innerText()),
    await page.locator("#turns").innerText());

  // 4. An error is shown readably (problem title, status, detail; no raw JSON).
  await page.fill("#question", "Please fail this one");
  await page.click("#send");
  const third = page.locator(".turn").nth(2);
  await third.locator(".problem").waitFor({ state: "visible", timeout: STEP_MS });
  const problem = await third.locator(".problem").innerText();
  check("error_is_shown_with_title_status_and_detail",
    /No valid SQL generated \(422\)/.test(problem) && /no executable read-only SQL/.test(problem), problem);
  check("error_is_not_raw_json", !problem.includes('"type"') && !problem.includes("urn:text2sqld"), problem);
  check("send_button_is_usable_after_an_error", await page.locator("#send").isEnabled(), "disabled");
  check("question_stays_after_an_error_to_be_sent_again",
    (await page.inputValue("#question")) === "Please fail this one", await page.inputValue("#question"));
  await shot(page, "03-error");

  // 5. New conversation forgets the turns.
  await page.click("#new-conversation");
  check("new_conversation_clears_the_page", (await page.locator(".turn").count()) === 0, "turns remain");
  check("page_fetched_nothing_from_elsewhere", foreign.length === 0, foreign.join(" "));
  check("page_logged_no_script_errors", consoleErrors.length === 0, consoleErrors.join("\n"));

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
