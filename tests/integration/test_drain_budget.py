#!/usr/bin/env python3
"""test_drain_budget.py - every shipped config and manifest gives a drain at
least as long as the longest request it allows (issue 30: the shipped
configs drained 15 s but let model calls run 120 s, so a rolling restart
dropped a long generation).

Covers, over docker/text2sqld.json, deploy/kubernetes/text2sqld.json and
the config scripts/demo.sh writes (config/text2sqld.example.json lists the
compiled defaults, test_defaults checks that; the default drain, 125 s,
covers the default budgets, 120 s, so a config setting neither is not warned
about):
  - limits.drain_timeout_ms >= the longest request budget (the largest
    options.timeout_ms a request may ask: generate.max_timeout_ms, with auth
    on at most limits.key_max_timeout_ms) and >= every model's timeout_ms;
  - Kubernetes' terminationGracePeriodSeconds and compose's
    stop_grace_period cover the drain delay, the drain and the exit;
and with the binary: --check-config of docker's config prints no drain
warning, while a config whose drain is shorter than its budget is warned
about, naming limits.drain_timeout_ms.
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
ROOT = t2s.SOURCE_ROOT
# The service's defaults (config/config.c, pipeline/generate/generate.c): a config that leaves a
# setting out gets these.
DEFAULT_DRAIN_MS = 125000
DEFAULT_DRAIN_DELAY_MS = 5000
DEFAULT_KEY_MAX_TIMEOUT_MS = 120000
DEFAULT_MAX_TIMEOUT_MS = 120000
EXIT_MARGIN_S = 5
CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("TEXT2SQLD_")}


def load(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return json.load(f)


def demo_config():
    """The JSON scripts/demo.sh writes (its heredoc, with a port and a model filled in)."""
    with open(os.path.join(ROOT, "scripts", "demo.sh"), encoding="utf-8") as f:
        text = f.read()
    body = re.search(r"cat >demo/text2sqld.json <<JSON\n(.*?)\nJSON\n", text, re.S).group(1)
    models = ',\n  "models": {"generate": {"base_url": "http://127.0.0.1:1/v1", "model": "m", "timeout_ms": 120000}}'
    return json.loads(body.replace("$port", "8080").replace("$models", models))


def longest_budget(cfg):
    auth = bool(cfg.get("auth", {}).get("api_keys") or cfg.get("auth", {}).get("api_keys_file"))
    budget = cfg.get("generate", {}).get("max_timeout_ms", DEFAULT_MAX_TIMEOUT_MS)
    if auth:
        budget = min(budget, cfg.get("limits", {}).get("key_max_timeout_ms", DEFAULT_KEY_MAX_TIMEOUT_MS))
    return budget


def check_config(name, cfg):
    drain = cfg.get("limits", {}).get("drain_timeout_ms", DEFAULT_DRAIN_MS)
    budget = longest_budget(cfg)
    tap.ok(drain >= budget, "%s_drain_covers_the_longest_request_budget" % name,
           diag="drain_timeout_ms %d < budget %d" % (drain, budget))
    models = {s: m.get("timeout_ms") for s, m in (cfg.get("models") or {}).items() if isinstance(m, dict)}
    long_models = {s: t for s, t in models.items() if t and t > drain}
    tap.eq(long_models, {}, "%s_drain_covers_every_model_call" % name)
    return drain, cfg.get("limits", {}).get("drain_delay_ms", DEFAULT_DRAIN_DELAY_MS)


def seconds(text):
    m = re.match(r"^(\d+)s$", text.strip())
    return int(m.group(1)) if m else None


def run():
    docker = load("docker/text2sqld.json")
    kube = load("deploy/kubernetes/text2sqld.json")
    check_config("docker", docker)
    drain, delay = check_config("kubernetes", kube)
    check_config("demo", demo_config())

    with open(os.path.join(ROOT, "deploy", "kubernetes", "deployment.yaml"), encoding="utf-8") as f:
        dep = f.read()
    grace = int(re.search(r"terminationGracePeriodSeconds:\s*(\d+)", dep).group(1))
    pre_stop = int(re.search(r'command:\s*\["sleep",\s*"(\d+)"\]', dep).group(1))
    need = pre_stop + (drain + delay) / 1000 + EXIT_MARGIN_S
    tap.ok(grace >= need, "kubernetes_grace_covers_pre_stop_drain_delay_drain_and_exit",
           diag="grace %d < %s" % (grace, need))

    with open(os.path.join(ROOT, "docker", "compose.yaml"), encoding="utf-8") as f:
        compose = f.read()
    d_drain = docker.get("limits", {}).get("drain_timeout_ms", DEFAULT_DRAIN_MS)
    d_delay = docker.get("limits", {}).get("drain_delay_ms", DEFAULT_DRAIN_DELAY_MS)
    stop = seconds(re.search(r"stop_grace_period:\s*(\S+)", compose).group(1))
    tap.ok(stop is not None and stop >= (d_drain + d_delay) / 1000 + EXIT_MARGIN_S,
           "compose_stop_grace_covers_drain_delay_drain_and_exit", diag="stop_grace_period %r" % stop)

    if not t2s.server_binary():
        tap.skip("check_config_warnings", "T2S_BIN is not set")
        return
    with open(os.path.join(ROOT, "docker", "text2sqld.json"), encoding="utf-8") as f:
        code, out = t2s.run_config_only(f.read(), ["--check-config"], env=CLEAN_ENV)
    tap.ok(code == 0 and "drain_timeout_ms" not in out, "docker_config_checks_without_a_drain_warning", diag=out[-500:])
    short = {"databases": [{"name": "x", "url": "sqlite:///nonexistent.sqlite"}],
             "limits": {"drain_timeout_ms": 15000}}
    code, out = t2s.run_config_only(short, ["--check-config"], env=CLEAN_ENV)
    tap.ok(code == 0 and "warning" in out and "limits.drain_timeout_ms (15000)" in out and "120000" in out,
           "check_config_warns_when_the_drain_is_shorter_than_the_longest_budget", diag=out[-500:])
    # the compiled defaults agree with each other: a config that sets neither is not warned about
    bare = {"databases": [{"name": "x", "url": "sqlite:///nonexistent.sqlite"}]}
    code, out = t2s.run_config_only(bare, ["--check-config"], env=CLEAN_ENV)
    tap.ok(code == 0 and "drain_timeout_ms" not in out, "the_default_drain_covers_the_default_budgets", diag=out[-500:])
    bare["generate"] = {"max_timeout_ms": 300000}
    code, out = t2s.run_config_only(bare, ["--check-config"], env=CLEAN_ENV)
    tap.ok(code == 0 and "limits.drain_timeout_ms (125000)" in out and "300000" in out,
           "a_budget_raised_past_the_default_drain_is_warned_about", diag=out[-500:])
    short["auth"] = {"api_keys": [{"name": "k", "key_sha256": "ab" * 32, "databases": ["*"]}]}
    code, out = t2s.run_config_only(short, ["--check-config"], env=CLEAN_ENV)
    tap.ok(code == 0 and "limits.key_max_timeout_ms" in out and "120000" in out,
           "with_auth_the_key_cap_is_the_longest_budget", diag=out[-500:])
    short["limits"]["drain_timeout_ms"] = 120000
    code, out = t2s.run_config_only(short, ["--check-config"], env=CLEAN_ENV)
    tap.ok(code == 0 and "drain_timeout_ms" not in out, "a_drain_as_long_as_the_budget_is_not_warned", diag=out[-500:])


def main():
    try:
        run()
    except Exception:  # noqa: BLE001 - reported as a failed check
        fixtures.report_exception(tap)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
