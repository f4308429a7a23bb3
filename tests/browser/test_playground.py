#!/usr/bin/env python3
"""test_playground.py - the playground page (GET /) end to end in headless
Chromium: Debian's chromium driven by playwright-core (tests/browser/
playground.mjs, installed by scripts/install-deps.sh), against the real
binary with API keys on, a SQLite database written here, and the model stub
scripted to correct one statement, answer a follow-up, and fail a question.

Checks (the browser's, reported by playground.mjs): the page loads and asks
for the key; the databases appear; a question shows every stage in order,
the join graph and the result table; a follow-up answers; a failed
generation is shown as a readable problem; nothing is fetched from
elsewhere; no script error; then the API reference (GET /docs, Swagger UI)
lists the operations, /query among them with its responses (200, 422, 429,
503), fetching nothing from another origin, raising no script error.  Checks here: the key never left memory
(playground.mjs), the follow-up's prompt carries the earlier turn (the
history the page sent), the service exits 0.

Screenshots are kept in <build dir>/meson-logs/browser/.  Skips (does not
fail) when node, chromium or playwright-core is missing or chromium cannot
start.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_ROOT, "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-browser-")
BROWSER_DIR = os.path.join(SOURCE_ROOT, "tests", "browser")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
KEY = "playground-test-key-0123456789"
ARTIFACTS = os.path.join(os.environ.get("T2S_BUILD_ROOT", TMP), "meson-logs", "browser")
SCHEMA, ROWS = fixtures.SMALL_CONCERT_SCHEMA, fixtures.SMALL_CONCERT_ROWS


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


def run():
    why = missing_tools()
    if why:
        tap.skip("playground_browser_test", why)
        return
    db_path = fixtures.write_sqlite(os.path.join(TMP, "concert.sqlite"), SCHEMA, ROWS)
    stub = fixtures.ModelStub()
    try:
        stub.rules([
            {"match": {"contains": "Please fail this one"}, "respond": {"content": "I cannot answer that."}},
            {"match": {"contains": "no such column"},
             "respond": {"content": sql("SELECT count(*) FROM singer WHERE country = 'France'")}},
            {"match": {"contains": "the Netherlands?"},
             "respond": {"content": sql("SELECT count(*) FROM singer WHERE country = 'Netherlands'")}},
        ], default_content=sql("SELECT count(*) FROM singer WHERE nation = 'France'"))
        cfg = {"databases": [{"name": "concert", "url": "sqlite://" + db_path}],
               "state": {"url": "sqlite://" + os.path.join(TMP, "state.sqlite")},
               "generate": {"cache_ttl_s": 0},
               "auth": {"api_keys": [{"name": "browser", "key_sha256": hashlib.sha256(KEY.encode()).hexdigest(),
                                      "databases": ["*"]}]},
               "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 20000,
                                       "retries": 0}},
               "log": {"level": "warn", "access": False}}
        with fixtures.serving(tap, cfg, "service_exits_0_after_the_browser_test") as svc:
            env = dict(os.environ, T2S_URL=svc.base_url, T2S_KEY=KEY, T2S_ARTIFACTS=ARTIFACTS, CHROMIUM=CHROMIUM)
            t0 = time.monotonic()
            proc = subprocess.run(["node", os.path.join(BROWSER_DIR, "playground.mjs")], cwd=BROWSER_DIR, env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240)
            tap.diag("browser steps took %.1f s; screenshots in %s" % (time.monotonic() - t0, ARTIFACTS))
            results = []
            for line in proc.stdout.splitlines():
                try:
                    results.append(json.loads(line))
                except ValueError:
                    tap.diag("playground.mjs: " + line)
            if any("skip" in r for r in results):
                tap.skip("playground_browser_test", next(r["skip"] for r in results if "skip" in r))
                return
            tap.ok(proc.returncode == 0 and results, "playground_script_ran",
                   diag="exit %s\n%s" % (proc.returncode, proc.stderr[-3000:]))
            for r in results:
                tap.ok(r.get("ok"), r.get("check", "?"), diag=r.get("diag"))
            follow = [q for q in stub.requests() if "And how many are from the Netherlands?" in
                      json.dumps(q["body"].get("messages", []))]
            tap.ok(follow and "How many singers are from France?" in json.dumps(follow[0]["body"]["messages"]),
                   "follow_up_prompt_carries_the_earlier_turn",
                   diag=json.dumps(follow[0]["body"]["messages"])[:1500] if follow else "no follow-up request")
            shots = sorted(os.listdir(ARTIFACTS)) if os.path.isdir(ARTIFACTS) else []
            tap.ok({"01-key-form.png", "02-answer.png", "03-error.png", "04-docs.png"} <= set(shots),
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
