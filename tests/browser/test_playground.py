#!/usr/bin/env python3
"""test_playground.py - the playground page (GET /) end to end in headless
Chromium: Debian's chromium driven by playwright-core (tests/browser/
playground.mjs, installed by scripts/install-deps.sh), against the real
binary with API keys on (the key has the admin scope: a right verdict stores an
example), a SQLite database written here, and the model stub scripted to
correct one statement, answer a follow-up and a grouped count, answer one
question slowly (for Stop), and fail a question.

Checks (the browser's, reported by playground.mjs): the page loads and asks
for the key; the databases appear; a question shows its answer first (the
rows within half a screen below the question at 1280x900) and every stage in
order in the folded trace, the join graph and the result table; the same
question again is answered from the cache with its score and "1 row"; a
follow-up answers; a grouped count shows its explanation and its chart drawn
by Vega (data marks in the SVG), within half a screen at 1280x900 and at
390x844, with no sideways overflow at 390 px; Copy SQL, Download CSV (the
file's content), Right, Wrong (both reach GET /feedback), Stop (a slow model
answer ends at once) and Clear history are found by accessible name and work;
the history survives a reload; a failed generation is shown as a readable
problem; every control has an accessible name; nothing is fetched from
elsewhere; no script error (a CSP refusal included); then the API reference (GET /docs, Swagger UI)
lists the operations, /query among them with its responses (200, 422, 429,
503), fetching nothing from another origin, raising no script error.  Checks here: the key never left memory
(playground.mjs), the follow-up's prompt carries the earlier turn (the
history the page sent), the service exits 0.

The browser reaches the service through a reverse proxy that mounts it at
/t2s/playground/ and strips that prefix (tests/lib/prefix_proxy.py), as a
gateway does: the page, its assets, its API calls and /docs must all stay
under the prefix (a request outside it is answered 404 by the proxy and
counted).  Without a browser, the page's files are checked for absolute URLs
(href, src, fetch), the page's relative URLs are resolved against the
prefixed page and fetched through the proxy (the chart renderer's scripts
among them), its Content-Security-Policy allows no eval, inline code or
other origin, and the renderer's licences are served.

Screenshots are kept in <build dir>/meson-logs/browser/.  Skips (does not
fail) when node, chromium or playwright-core is missing or chromium cannot
start.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_ROOT, "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402
import prefix_proxy  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-browser-")
BROWSER_DIR = os.path.join(SOURCE_ROOT, "tests", "browser")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
KEY = "playground-test-key-0123456789"
ARTIFACTS = os.path.join(os.environ.get("T2S_BUILD_ROOT", TMP), "meson-logs", "browser")
SCHEMA = fixtures.SMALL_CONCERT_SCHEMA
# One more singer, of a country whose name needs quoting in CSV (comma and quotes).
ROWS = dict(fixtures.SMALL_CONCERT_ROWS, singer=fixtures.SMALL_CONCERT_ROWS["singer"] + [(5, "Kim Lee", 'Korea, "South"', 35)])
GROUPED_SQL = "SELECT country, count(*) AS singers FROM singer GROUP BY country ORDER BY country"
SLOW_MODEL_MS = 6000
PREFIX = "/t2s/playground"
PLAYGROUND_DIR = os.path.join(SOURCE_ROOT, "playground")
# A URL that starts at the origin's root: in an attribute, a fetch, or a string naming an API path.
ABSOLUTE_URL_RX = re.compile(r'''(?:\b(?:href|src|action)\s*=\s*["']/(?!/))|(?:\bfetch\(\s*["'`]/)|'''
                             r'''(?:["'`]/(?:v1|databases|query|generate|execute|link|playground|docs|openapi)\b)''')


def sql(text):
    return "```sql\n%s\n```" % text


def missing_tools():
    if not shutil.which("node"):
        return "node is not installed"
    if not os.path.exists(CHROMIUM):
        return "%s is not installed (scripts/install-deps.sh installs Debian's chromium)" % CHROMIUM
    if not os.path.isdir(os.path.join(BROWSER_DIR, "node_modules", "playwright-core")):
        return "playwright-core is not installed in tests/browser (scripts/install-deps.sh runs npm ci there)"
    return None


def get_url(url):
    """(status, {lower-case header: value}, body) of a GET."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def test_no_absolute_urls():
    """The page's own files name every URL relative to the page (a path prefix keeps them)."""
    found = []
    for name in ("index.html", "app.js"):
        with open(os.path.join(PLAYGROUND_DIR, name), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if ABSOLUTE_URL_RX.search(line):
                    found.append("%s:%d: %s" % (name, n, line.strip()))
    tap.ok(not found, "playground_files_hold_no_absolute_url", diag="\n".join(found))


def test_prefix_without_browser():
    """The page through the prefix-stripping proxy: its stylesheet and script, resolved against
    PREFIX/, load with their types, and the database list its script asks for answers."""
    import urllib.parse
    db_path = fixtures.write_sqlite(os.path.join(TMP, "prefix.sqlite"), SCHEMA, ROWS)
    cfg = {"databases": [{"name": "concert", "url": "sqlite://" + db_path}], "log": {"level": "warn", "access": False}}
    with fixtures.serving(tap, cfg, "prefix_service_exits_0") as svc:
        proxy = prefix_proxy.PrefixProxy(svc.host, svc.port, PREFIX)
        try:
            page_url = proxy.base_url + "/"
            page = get_url(page_url)
            tap.eq(page[0], 200, "prefixed_page_answers_200")
            refs = re.findall(r'(?:href|src)="([^"]+)"', page[2].decode("utf-8", "replace"))
            want = {".css": "text/css", ".js": "text/javascript"}
            for ref in refs:
                kind = os.path.splitext(ref)[1]
                if kind not in want:
                    continue
                status, headers, _ = get_url(urllib.parse.urljoin(page_url, ref))
                tap.ok(status == 200 and headers.get("content-type", "").startswith(want[kind]),
                       "prefixed_page_loads_%s" % ref.rsplit("/", 1)[-1], diag="%s %d %r" % (ref, status, headers))
            csp = page[1].get("content-security-policy", "")
            tap.ok("script-src 'self';" in csp and "unsafe-eval" not in csp and "unsafe-inline" not in csp and
                   "connect-src 'self';" in csp, "page_csp_allows_no_eval_inline_or_remote_source", diag=csp)
            for name in ("LICENSE-vega.txt", "LICENSE-vega-lite.txt", "LICENSE-vega-embed.txt",
                         "LICENSE-vega-interpreter.txt"):
                status, headers, body = get_url(urllib.parse.urljoin(page_url, "playground/" + name))
                tap.ok(status == 200 and b"Redistribution" in body, "chart_renderer_licence_is_served_" + name,
                       diag="%d %r" % (status, body[:200]))
            status, _, _ = get_url(urllib.parse.urljoin(page_url, "playground/index.html"))
            tap.eq(status, 404, "page_is_served_at_the_root_only")
            with open(os.path.join(PLAYGROUND_DIR, "app.js"), encoding="utf-8") as f:
                lists = re.findall(r'fetch\("([^"]*databases)"', f.read())
            status, _, body = get_url(urllib.parse.urljoin(page_url, lists[0] if lists else "?"))
            names = [d.get("name") for d in json.loads(body or b"{}").get("databases", [])] if status == 200 else []
            tap.ok(names == ["concert"], "prefixed_page_database_list_answers", diag="%d %r" % (status, body[:300]))
            tap.eq(proxy.outside, [], "prefixed_page_asks_nothing_outside_the_prefix")
        finally:
            proxy.close()


def run():
    test_no_absolute_urls()
    test_prefix_without_browser()
    why = missing_tools()
    if why:
        tap.skip("playground_browser_test", why)
        return
    db_path = fixtures.write_sqlite(os.path.join(TMP, "concert.sqlite"), SCHEMA, ROWS)
    stub = fixtures.ModelStub()
    try:
        # The prompt holds the earlier turns: the rules of later questions come first.
        stub.rules([
            {"match": {"contains": "Please fail this one"}, "respond": {"content": "I cannot answer that."}},
            {"match": {"contains": "Take your time"},
             "respond": {"delay_ms": SLOW_MODEL_MS, "content": sql("SELECT count(*) FROM concert")}},
            {"match": {"contains": "in each country"}, "respond": {"content": sql(GROUPED_SQL)}},
            {"match": {"contains": "no such column"},
             "respond": {"content": sql("SELECT count(*) FROM singer WHERE country = 'France'")}},
            {"match": {"contains": "the Netherlands?"},
             "respond": {"content": sql("SELECT count(*) FROM singer WHERE country = 'Netherlands'")}},
        ], default_content=sql("SELECT count(*) FROM singer WHERE nation = 'France'"))
        cfg = {"databases": [{"name": "concert", "url": "sqlite://" + db_path}],
               "state": {"url": "sqlite://" + os.path.join(TMP, "state.sqlite")},
               "auth": {"api_keys": [{"name": "browser", "key_sha256": hashlib.sha256(KEY.encode()).hexdigest(),
                                      "databases": ["*"], "scopes": ["query", "admin"]}]},
               "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 20000,
                                       "retries": 0}},
               "log": {"level": "warn", "access": False}}
        with fixtures.serving(tap, cfg, "service_exits_0_after_the_browser_test") as svc:
            proxy = prefix_proxy.PrefixProxy(svc.host, svc.port, PREFIX)
            env = dict(os.environ, T2S_URL=proxy.base_url, T2S_KEY=KEY, T2S_ARTIFACTS=ARTIFACTS, CHROMIUM=CHROMIUM,
                       T2S_SLOW_MODEL_MS=str(SLOW_MODEL_MS))
            t0 = time.monotonic()
            proc = subprocess.run(["node", os.path.join(BROWSER_DIR, "playground.mjs")], cwd=BROWSER_DIR, env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=270)
            tap.diag("browser steps took %.1f s; screenshots in %s" % (time.monotonic() - t0, ARTIFACTS))
            results = fixtures.node_results(tap, proc, "playground.mjs")
            if any("skip" in r for r in results):
                tap.skip("playground_browser_test", next(r["skip"] for r in results if "skip" in r))
                return
            tap.ok(proc.returncode == 0 and results, "playground_script_ran",
                   diag="exit %s\n%s" % (proc.returncode, proc.stderr[-3000:]))
            for r in results:
                tap.ok(r.get("ok"), r.get("check", "?"), diag=r.get("diag"))
            proxy.close()
            tap.eq(proxy.outside, [], "browser_asked_nothing_outside_the_prefix")
            follow = [q for q in stub.requests() if "And how many are from the Netherlands?" in
                      json.dumps(q["body"].get("messages", []))]
            tap.ok(follow and "How many singers are from France?" in json.dumps(follow[0]["body"]["messages"]),
                   "follow_up_prompt_carries_the_earlier_turn",
                   diag=json.dumps(follow[0]["body"]["messages"])[:1500] if follow else "no follow-up request")
            shots = sorted(os.listdir(ARTIFACTS)) if os.path.isdir(ARTIFACTS) else []
            tap.ok({"01-key-form.png", "02-answer.png", "03-error.png", "04-docs.png", "05-chart.png",
                    "06-phone.png"} <= set(shots),
                   "screenshots_are_kept_as_artifacts", diag=repr(shots))
    finally:
        stub.close()


def main():
    try:
        run()
    except Exception:
        fixtures.report_exception(tap)


if __name__ == "__main__":
    sys.exit(fixtures.run_with_binary(tap, "playground_browser_test", main))
