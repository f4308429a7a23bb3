#!/usr/bin/env python3
"""test_deploy.py - text2sqld is deployable as shipped.

  - docker/compose.yaml passes the compose linter dclint and docker/Dockerfile
    dockerfile-utils' linter (npm packages, pinned, installed by this test
    next to the binary under test; no Docker engine is needed), and they hold
    what a deployment relies on: the runtime image's HEALTHCHECK is the
    binary's own --health probe, it runs as a non-root user whose uid and gid
    the image creates, it keeps no apt downloads or lists, its build stage
    installs no test servers and (install-deps.sh run with stand-ins for
    apt and npm) no test npm packages; compose keeps the state store in a named
    volume, checks PostgreSQL over TCP, runs a chat and an embedding model
    server with health checks, and starts text2sqld after all are healthy;
  - docker/text2sqld.json passes --check-config;
  - `text2sqld --health URL|PATH`: 0 on a 2xx answer, 1 on 503 or no answer;
  - config/text2sqld.example.json starts as README.md documents (with
    GENERATE_API_KEY set; refused naming the key without it), accepts none
    of the dictionary keys of tests/corpus/weak_keys.txt, and a service
    started on a copy writes nothing inside the repository;
  - every model-server snippet of README.md (vLLM, llama.cpp, Ollama, TGI,
    TEI) loads with --check-config and, pointed at the model stub serving
    that server's routes (--server KIND), is ready and answers through it.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
ROOT = t2s.SOURCE_ROOT
TMP = fixtures.scratch_dir("t2s-deploy-test-")
CLEAN_ENV = {"TEXT2SQLD_LISTEN_HOST": None, "TEXT2SQLD_LISTEN_PORT": None, "TEXT2SQLD_REDIS_URL": None}
NPM_TOOLS = {"dclint": "3.1.0", "dockerfile-utils": "0.16.3"}
DB = fixtures.write_sqlite(os.path.join(TMP, "shop.sqlite"), """
    CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
    INSERT INTO customer VALUES (1, 'Ann', 'France'), (2, 'Bob', 'Peru');
""")


def npm_tools():
    """The pinned linters, installed once next to the binary under test; their bin dir."""
    base = os.path.join(os.path.dirname(os.path.abspath(t2s.server_binary())), "npm-tools")
    bin_dir = os.path.join(base, "node_modules", ".bin")
    if not all(os.path.exists(os.path.join(bin_dir, n)) for n in NPM_TOOLS):
        os.makedirs(base, exist_ok=True)
        r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", base] +
                           ["%s@%s" % kv for kv in NPM_TOOLS.items()], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError("npm install of the linters failed: %s" % (r.stderr or r.stdout)[-1500:])
    return bin_dir


def test_lint_and_contents():
    bin_dir = npm_tools()
    compose = os.path.join(ROOT, "docker", "compose.yaml")
    dockerfile = os.path.join(ROOT, "docker", "Dockerfile")
    r = subprocess.run([os.path.join(bin_dir, "dclint"), compose], capture_output=True, text=True, timeout=120)
    tap.ok(r.returncode == 0 and "problem" not in r.stdout + r.stderr, "compose_file_passes_dclint",
           diag=(r.stdout + r.stderr)[-2000:])
    r = subprocess.run([os.path.join(bin_dir, "dockerfile-utils"), "lint", dockerfile], capture_output=True,
                       text=True, timeout=120)
    tap.ok(r.returncode == 0 and not (r.stdout + r.stderr).strip(), "dockerfile_passes_dockerfile_utils_lint",
           diag=(r.stdout + r.stderr)[-2000:])
    r = subprocess.run([os.path.join(bin_dir, "js-yaml"), compose], capture_output=True, text=True, timeout=60)
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    svc = doc.get("services", {})
    t = svc.get("text2sqld", {})
    tap.ok("state:/var/lib/text2sqld" in t.get("volumes", []) and "state" in (doc.get("volumes") or {}),
           "compose_keeps_the_state_store_in_a_named_volume", diag=repr(t.get("volumes")))
    with open(compose, encoding="utf-8") as f:
        secrets = re.findall(r"(?<!\$)\$\{(\w*PASSWORD\w*)(:?[-?])?[^}]*\}", f.read())
    tap.ok(secrets and all(how == ":?" for _, how in secrets), "compose_passwords_are_required_without_fallback",
           diag=repr(secrets))
    with open(os.path.join(ROOT, ".dockerignore"), encoding="utf-8") as f:
        ignored = f.read().split()
    tap.ok("**/.env" in ignored, "dockerignore_keeps_env_files_out_of_the_build_context", diag=repr(ignored))
    pg_test = " ".join((svc.get("postgres", {}).get("healthcheck") or {}).get("test", []))
    tap.ok("pg_isready" in pg_test and "-h 127.0.0.1" in pg_test, "compose_checks_postgres_over_tcp", diag=pg_test)
    with open(os.path.join(ROOT, "docker", "text2sqld.json"), encoding="utf-8") as f:
        models = json.load(f)["models"]
    chat_url, embed_url = models["generate"]["base_url"], models["embed"]["base_url"]
    served = {name: s for name, s in svc.items() if "healthcheck" in s and name not in ("text2sqld", "postgres", "redis")}
    tap.ok(any("//%s:" % n in chat_url for n in served) and any("//%s:" % n in embed_url for n in served) and
           models["debug"]["base_url"] == chat_url and "--embeddings" in " ".join(svc.get("embed", {}).get("command", [])),
           "compose_runs_chat_and_embedding_servers_the_config_points_at", diag=repr((chat_url, embed_url, list(served))))
    deps = t.get("depends_on", {})
    tap.ok(all((deps.get(n) or {}).get("condition") == "service_healthy" for n in ["postgres", "redis"] + list(served)),
           "text2sqld_starts_after_every_dependency_is_healthy", diag=repr(deps))
    tap.ok("--health" in (t.get("healthcheck") or {}).get("test", []), "compose_checks_text2sqld_with_its_probe")
    with open(dockerfile, encoding="utf-8") as f:
        text = f.read()
    runtime = text[text.rindex("\nFROM "):]
    build = text[:text.rindex("\nFROM ")]
    tap.ok(re.search(r'^HEALTHCHECK .*\n?.*CMD \["text2sqld", "--health", "/readyz"\]', runtime, re.M) is not None,
           "runtime_image_healthcheck_is_the_binarys_probe")
    user = re.findall(r"^USER (\S+)", runtime, re.M)
    tap.ok(user and not user[-1].startswith(("0", "root")), "runtime_image_runs_as_non_root", diag=repr(user))
    # USER uid:gid must name the account the runtime stage creates, group included: useradd
    # --system --user-group alone gives the group a system gid (999), not the one USER runs with.
    uid, _, gid = (user[-1] if user else "").partition(":")
    tap.ok(uid.isdigit() and gid.isdigit() and re.search(r"\buseradd\b[^\n]*--uid %s\b" % uid, runtime) is not None and
           (re.search(r"\bgroupadd\b[^\n]*--gid %s\b" % gid, runtime) is not None and
            re.search(r"\buseradd\b[^\n]*--gid %s\b" % gid, runtime) is not None),
           "runtime_image_user_and_group_exist_with_the_ids_user_names", diag=repr(user))
    tap.ok("apt-get clean" in runtime and "/var/lib/apt/lists" in runtime,
           "runtime_image_leaves_no_apt_downloads_or_lists")
    tap.ok("TEXT2SQLD_RUNTIME_ONLY=1" in runtime and "TEXT2SQLD_BUILD_ONLY=1" in build and "-Dtests=false" in build,
           "image_stages_install_only_what_they_need")
    with open(os.path.join(ROOT, "scripts", "install-deps.sh"), encoding="utf-8") as f:
        deps_sh = f.read()
    test_pkgs = re.search(r'TEST_PKGS="([^"]*)"', deps_sh).group(1).split()
    build_branch = deps_sh[deps_sh.index('TEXT2SQLD_BUILD_ONLY:-0}" = 1'):]
    build_branch = build_branch[:build_branch.index("else")]
    tap.ok("postgresql" in test_pkgs and "TEST_PKGS" not in build_branch, "build_only_install_has_no_test_servers",
           diag=build_branch)
    code, out = t2s.run_config_only(os.path.join(ROOT, "docker", "text2sqld.json") and open(
        os.path.join(ROOT, "docker", "text2sqld.json"), encoding="utf-8").read(), ["--check-config"], env=CLEAN_ENV)
    tap.ok(code == 0, "docker_config_passes_check_config", diag=out[-500:])


def test_build_only_install_fetches_no_test_packages():
    """scripts/install-deps.sh run with stand-ins for dpkg-query, apt-get and npm (every package
    reported installed, calls logged): TEXT2SQLD_BUILD_ONLY=1, as the image's build stage runs it,
    must not `npm ci` the browser test's packages (playwright-core); the full install does."""
    work = os.path.join(TMP, "install-deps")
    os.makedirs(os.path.join(work, "scripts"), exist_ok=True)
    os.makedirs(os.path.join(work, "tests", "browser"), exist_ok=True)
    os.makedirs(os.path.join(work, "bin"), exist_ok=True)
    shutil.copy(os.path.join(ROOT, "scripts", "install-deps.sh"), os.path.join(work, "scripts"))
    with open(os.path.join(work, "tests", "browser", "package-lock.json"), "w", encoding="utf-8") as f:
        f.write('{"name": "browser-tests", "lockfileVersion": 3}\n')
    log = os.path.join(work, "calls.log")
    for tool, body in (("dpkg-query", 'printf "install ok installed"'), ("apt-get", ":"), ("sudo", '"$@"'),
                       ("npm", 'if [ "$1" = ci ]; then mkdir -p node_modules; fi')):
        path = os.path.join(work, "bin", tool)
        with open(path, "w", encoding="utf-8") as f:
            f.write('#!/bin/sh\necho "%s $*" >> "%s"\n%s\n' % (tool, log, body))
        os.chmod(path, 0o755)
    env = dict(os.environ, PATH=os.path.join(work, "bin") + os.pathsep + os.environ.get("PATH", ""))
    calls = {}
    for mode in ("TEXT2SQLD_BUILD_ONLY", "full"):
        if os.path.exists(log):
            os.unlink(log)
        shutil.rmtree(os.path.join(work, "tests", "browser", "node_modules"), ignore_errors=True)
        run_env = dict(env)
        run_env.pop("TEXT2SQLD_BUILD_ONLY", None)
        run_env.pop("TEXT2SQLD_RUNTIME_ONLY", None)
        if mode != "full":
            run_env[mode] = "1"
        r = subprocess.run(["sh", os.path.join(work, "scripts", "install-deps.sh")], env=run_env,
                           capture_output=True, text=True, timeout=60)
        logged = ""
        if os.path.exists(log):
            with open(log, encoding="utf-8") as f:
                logged = f.read()
        calls[mode] = (r.returncode, [c for c in logged.splitlines() if not c.startswith("dpkg-query")])
    tap.ok(calls["full"][0] == 0 and "npm ci" in " ".join(calls["full"][1]),
           "full_install_installs_the_browser_test_packages", diag=repr(calls["full"]))
    tap.ok(calls["TEXT2SQLD_BUILD_ONLY"][0] == 0 and not any(c.startswith("npm") for c in calls["TEXT2SQLD_BUILD_ONLY"][1]),
           "build_only_install_fetches_no_test_npm_packages", diag=repr(calls["TEXT2SQLD_BUILD_ONLY"]))


def test_health_probe():
    binary = t2s.server_binary()
    cfg = {"databases": [{"name": "shop", "url": "sqlite://" + DB}],
           "state": {"url": "sqlite://" + os.path.join(TMP, "health-state.sqlite")}}
    with t2s.Service(cfg, env=CLEAN_ENV) as svc:
        r = subprocess.run([binary, "--health", "http://127.0.0.1:%d/readyz" % svc.port], capture_output=True,
                           text=True, timeout=30)
        tap.ok(r.returncode == 0 and '"status":"ready"' in r.stdout, "health_probe_exits_0_when_ready",
               diag="%d %s %s" % (r.returncode, r.stdout, r.stderr))
        r = subprocess.run([binary, "--health", "/healthz"], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, TEXT2SQLD_LISTEN_PORT=str(svc.port)))
        tap.eq(r.returncode, 0, "health_probe_path_uses_text2sqld_listen_port")
    down = {"databases": [{"name": "gone", "url": "sqlite://" + os.path.join(TMP, "missing", "x.sqlite")}],
            "state": {"url": "sqlite://" + os.path.join(TMP, "health-state2.sqlite")}}
    with t2s.Service(down, env=CLEAN_ENV) as svc:
        r = subprocess.run([binary, "--health", "http://127.0.0.1:%d/readyz" % svc.port], capture_output=True,
                           text=True, timeout=30)
        tap.ok(r.returncode == 1 and "503" in r.stderr, "health_probe_exits_1_on_503", diag=r.stderr)
    port = t2s.free_port()
    r = subprocess.run([binary, "--health", "http://127.0.0.1:%d/readyz" % port], capture_output=True, text=True,
                       timeout=30)
    tap.eq(r.returncode, 1, "health_probe_exits_1_when_nothing_listens")
    r = subprocess.run([binary, "--health", "ftp://x"], capture_output=True, text=True, timeout=30)
    tap.eq(r.returncode, 2, "health_probe_refuses_other_schemes")


def repo_files():
    r = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=all", "--ignored"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None
    # Build trees and Python bytecode are written by the tests running beside this one.
    return {line for line in r.stdout.splitlines()
            if not re.match(r"!! build[^/]*/", line) and "__pycache__" not in line}


def test_example_config():
    example = os.path.join(ROOT, "config", "text2sqld.example.json")
    with open(example, encoding="utf-8") as f:
        text = f.read()
    code, out = t2s.run_config_only(text, ["--check-config"], env=dict(CLEAN_ENV, GENERATE_API_KEY=None))
    tap.ok(code == 2 and "models.generate.api_key_env" in out, "example_config_without_generate_api_key_is_refused_by_name",
           diag=out[-300:])
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    tap.ok("GENERATE_API_KEY=" in readme and "cp config/text2sqld.example.json" in readme,
           "readme_says_how_the_example_starts")
    before = repo_files()
    work = tempfile.mkdtemp(prefix="t2s-example-", dir=TMP)
    copy = os.path.join(work, "text2sqld.json")
    shutil.copy(example, copy)
    cfg = json.loads(text)
    port = t2s.free_port()
    env = dict(CLEAN_ENV, GENERATE_API_KEY="any", TEXT2SQLD_LISTEN_PORT=str(port), TEXT2SQLD_REDIS_URL="")
    proc = subprocess.Popen([t2s.server_binary(), "--config", copy], cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=t2s._merged_env(env))
    try:
        up = False
        for _ in range(200):
            try:
                r = t2s.http_request("127.0.0.1", port, "GET", "/healthz", timeout=2)
                up = r.status == 200
                break
            except OSError:
                if proc.poll() is not None:
                    break
                import time
                time.sleep(0.1)
        tap.ok(up, "example_config_starts_with_generate_api_key_set")
        r = t2s.http_request("127.0.0.1", port, "GET", "/readyz", timeout=30) if up else None
        tap.ok(r is not None and r.status == 503 and r.json.get("status") == "not_ready",
               "example_config_reports_its_placeholder_databases_down", diag=r.text[:300] if r else "")
        # Its keys are placeholders: no dictionary key (tests/corpus/weak_keys.txt) is accepted.
        with open(os.path.join(ROOT, "tests", "corpus", "weak_keys.txt"), encoding="utf-8") as f:
            words = [w.strip() for w in f if w.strip() and not w.startswith("#")]
        accepted = [w for w in words if up and t2s.http_request(
            "127.0.0.1", port, "GET", "/databases", headers={"Authorization": "Bearer " + w}, timeout=10).status != 401]
        tap.ok(up and not accepted, "example_config_accepts_no_dictionary_key", diag=repr(accepted))
    finally:
        proc.terminate()
        out = proc.communicate(timeout=30)[0].decode("utf-8", "replace")
        rep = t2s.sanitizer_report(out, "example config service")
        if rep:
            t2s._other_reports.append(rep)
    tap.ok(os.path.exists(os.path.join(work, "text2sqld-state.sqlite")), "example_state_store_is_next_to_the_copy")
    after = repo_files()
    tap.ok(before is not None and after == before, "running_the_example_writes_nothing_inside_the_repository",
           diag=repr(sorted((after or set()) - (before or set()))))
    tap.eq(cfg["state"]["url"], "sqlite://text2sqld-state.sqlite", "example_documents_the_default_state_url")
    tap.eq(sorted(tuple(k.get("scopes", ["query"])) for k in cfg["auth"]["api_keys"]), [("query",), ("query", "admin")],
           "example_shows_a_query_key_and_an_admin_key")


SNIPPET_RX = re.compile(r"<!-- model-server: (\S+) -->\s*```json\n(.*?)```", re.S)


def test_model_server_snippets():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        snippets = dict(SNIPPET_RX.findall(f.read()))
    tap.eq(sorted(snippets), ["llama.cpp", "ollama", "tei", "tgi", "vllm"], "readme_has_a_snippet_per_model_server")
    for kind, text in sorted(snippets.items()):
        name = "snippet_" + re.sub(r"\W", "_", kind)
        try:
            models = json.loads(text)["models"]
        except (ValueError, KeyError) as e:
            tap.ok(False, name + "_is_json", diag=str(e))
            continue
        key = "stub-key-%d" % os.getpid()
        stub_args = ["--server", kind, "--model", "any"]
        if any(m.get("api_key_env") for m in models.values()):
            stub_args += ["--api-key", key, "--require-api-key"]
        stub = fixtures.ModelStub(*stub_args)
        try:
            origin = "http://127.0.0.1:%d" % stub.port
            models = json.loads(re.sub(r"http://[a-z0-9.-]+:\d+", origin, text))["models"]
            env = dict(CLEAN_ENV, **{m["api_key_env"]: key for m in models.values() if m.get("api_key_env")})
            cfg = {"databases": [{"name": "shop", "url": "sqlite://" + DB}], "models": models,
                   "state": {"url": "sqlite://" + os.path.join(TMP, "snippet-%s.sqlite" % kind)},
                   "generate": {"cache_ttl_s": 0}}
            code, out = t2s.run_config_only(cfg, ["--check-config"], env=env)
            tap.ok(code == 0, name + "_passes_check_config", diag=out[-300:])
            stub.rules([{"match": {"path": "/v1/chat/completions"},
                         "respond": {"content": "```sql\nSELECT name FROM customer WHERE country = 'France'\n```"}}])
            with t2s.Service(cfg, env=env) as svc:
                r = svc.request("GET", "/readyz?strict=1", timeout=30)
                checks = ((r.json or {}).get("checks") or {}).get("models") or {}
                tap.ok(r.status == 200 and checks and all(c.get("status") == "up" for c in checks.values()),
                       name + "_is_ready", diag=r.text[:600])
                if "generate" in models:
                    r = svc.request("POST", "/query", json={"database": "shop", "question": "Who lives in France?"},
                                    timeout=60)
                    tap.ok(r.status == 200 and (r.json or {}).get("rows") == [["Ann"]], name + "_answers_a_query",
                           diag=r.text[:500])
                if "embed" in models:
                    svc.request("POST", "/link", json={"database": "shop", "question": "customers in France"}, timeout=60)
                    tap.ok(len(stub.requests("/v1/embeddings")) > 0, name + "_embeds_through_v1_embeddings")
                if "api_key_env" in json.dumps(models):
                    reqs = stub.requests(None)
                    tap.ok(reqs and all(q.get("auth_matches") for q in reqs if q["path"].startswith("/v1/")),
                           name + "_sends_the_api_key", diag=repr([(q["path"], q.get("auth_matches")) for q in reqs][:10]))
        finally:
            stub.close()


def test_tei_readiness_needs_the_fallback():
    """Readiness of a TEI-like server: /v1/models is 404, the embeddings probe decides; a
    chat stage on such a server is down with a hint, and health_url fixes it."""
    stub = fixtures.ModelStub("--server", "tei")
    try:
        cfg = {"databases": [{"name": "shop", "url": "sqlite://" + DB}],
               "state": {"url": "sqlite://" + os.path.join(TMP, "tei-state.sqlite")},
               "models": {"embed": {"base_url": stub.base_url, "model": "e"},
                          "describe": {"base_url": stub.base_url, "model": "d"}}}
        with t2s.Service(cfg, env=CLEAN_ENV) as svc:
            r = svc.request("GET", "/readyz")
            checks = ((r.json or {}).get("checks") or {}).get("models") or {}
            tap.eq((checks.get("embed") or {}).get("status"), "up", "tei_embed_stage_is_ready_without_v1_models")
            tap.ok((checks.get("describe") or {}).get("status") == "down" and
                   "health_url" in (checks.get("describe") or {}).get("error", ""),
                   "chat_stage_without_v1_models_is_down_and_names_health_url", diag=repr(checks))
        cfg["models"]["describe"]["health_url"] = "http://127.0.0.1:%d/health" % stub.port
        with t2s.Service(cfg, env=CLEAN_ENV) as svc:
            r = svc.request("GET", "/readyz?strict=1")
            tap.eq(r.status, 200, "health_url_makes_the_stage_ready")
        stub.rules([{"match": {"path": "/v1/embeddings"}, "respond": {"status": 500, "content": "broken"}}])
        cfg["models"].pop("describe")
        with t2s.Service(cfg, env=CLEAN_ENV) as svc:
            r = svc.request("GET", "/readyz")
            tap.eq((((r.json or {}).get("checks") or {}).get("models") or {}).get("embed", {}).get("status"), "down",
                   "failing_embeddings_probe_is_down")
    finally:
        stub.close()


def main():
    return fixtures.run_with_binary(tap, "deploy_checks", test_lint_and_contents,
                                    test_build_only_install_fetches_no_test_packages, test_health_probe, test_example_config,
                                    test_model_server_snippets, test_tei_readiness_needs_the_fallback)


if __name__ == "__main__":
    sys.exit(main())
