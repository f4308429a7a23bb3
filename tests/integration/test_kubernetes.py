#!/usr/bin/env python3
"""test_kubernetes.py - deploy/kubernetes/ is what `kubectl apply -k` takes,
and it agrees with the service's config (TAP; no cluster, kubectl or
kustomize needed).

  - the kustomization lists every manifest of the folder and nothing missing,
    and its configMapGenerator's file is the service's config;
  - every manifest, and the ConfigMap the generator makes, validates against
    the Kubernetes API schemas (npm kubernetes-models' validators, and its
    TypeScript types under tsc --strict for fields the API lacks: tests/deploy/
    validate.mjs); manifests broken on purpose (a port that is not a number,
    a wrong shape, an unknown field) are refused (the check can fail);
  - the ConfigMap's config passes `text2sqld --check-config` (its secret files
    and variables stood in for);
  - the Deployment agrees with that config: the container port and the
    Prometheus annotation are listen.port, readiness probes /readyz and
    liveness /healthz on it, --config names the mounted file, every
    password_file and auth.api_keys_file lies in the mounted Secret under a
    key the Secret has, cache.secret_env is set from the Secret;
  - drain: terminationGracePeriodSeconds >= the preStop sleep +
    limits.drain_timeout_ms (+ limits.drain_delay_ms where config/ has that
    setting) + 5 s, each read from the ConfigMap's config or, when it leaves
    one out, from config/config.c's default; rolling updates keep every
    replica until its successor is ready (maxUnavailable 0);
  - the Service, PodDisruptionBudget and HorizontalPodAutoscaler select the
    Deployment's pods, and the autoscaler's minimum leaves the budget room to
    evict one.

Skips (does not fail) the schema checks when node or tests/deploy/node_modules
(scripts/install-deps.sh runs npm ci there) is missing.
"""

import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-kubernetes-")
ROOT = t2s.SOURCE_ROOT
K8S = os.path.join(ROOT, "deploy", "kubernetes")
TOOLS = os.path.join(ROOT, "tests", "deploy")
MARGIN_S = 5  # the process's exit after the drain (deployment.yaml's comment)


def missing_tools():
    if not shutil.which("node"):
        return "node is not installed"
    if not os.path.isdir(os.path.join(TOOLS, "node_modules", "kubernetes-models")):
        return "kubernetes-models is not installed in tests/deploy (scripts/install-deps.sh runs npm ci there)"
    return None


def validate(files):
    """validate.mjs's verdicts: a list of {file, kind, name, ok, error, object}."""
    r = subprocess.run(["node", os.path.join(TOOLS, "validate.mjs")] + files, cwd=TOOLS, capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("validate.mjs failed: %s" % r.stderr[-2000:])
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def config_default(setting):
    """The default config/config.c gives limits.<setting> (an integer), or None when there is no such setting."""
    with open(os.path.join(ROOT, "config", "config.c"), encoding="utf-8") as f:
        m = re.search(r"limits\.%s\s*=\s*(\d+)\s*;" % re.escape(setting), f.read())
    return int(m.group(1)) if m else None


def limit_ms(cfg, setting):
    """limits.<setting> of the ConfigMap's config, else its default; None when config/ has no such setting."""
    v = (cfg.get("limits") or {}).get(setting)
    return v if v is not None else config_default(setting)


def check_kustomization(docs):
    kust = next((d["object"] for d in docs if d.get("kind") == "Kustomization"), None)
    tap.ok(kust is not None, "kustomization_parses")
    if kust is None:
        return None
    listed = set(kust.get("resources", []))
    present = {f for f in os.listdir(K8S) if f.endswith(".yaml") and f != "kustomization.yaml"}
    tap.eq(sorted(listed), sorted(present), "kustomization_lists_every_manifest_of_the_folder")
    gen = kust.get("configMapGenerator", [])
    files = [f for g in gen for f in g.get("files", [])]
    tap.ok(files == ["text2sqld.json"] and os.path.isfile(os.path.join(K8S, "text2sqld.json")),
           "config_map_generator_holds_the_service_config", diag=repr(gen))
    return kust


def config_map(kust):
    """The ConfigMap kustomize generates (without its hash suffix), as a manifest file."""
    gen = kust["configMapGenerator"][0]
    data = {}
    for f in gen["files"]:
        with open(os.path.join(K8S, f), encoding="utf-8") as fh:
            data[os.path.basename(f)] = fh.read()
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": gen["name"]}, "data": data}
    path = os.path.join(TMP, "configmap.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh)
    return path


def test_schemas(manifests, kust):
    verdicts = validate(manifests + [config_map(kust)])
    objects = [v for v in verdicts if v.get("kind") != "Kustomization"]
    kinds = sorted({v.get("kind") for v in objects})
    tap.ok({"Deployment", "Service", "ConfigMap", "Secret", "PodDisruptionBudget", "HorizontalPodAutoscaler",
            "Namespace"} <= set(kinds), "manifests_hold_every_kind_the_deployment_needs", diag=repr(kinds))
    for v in objects:
        tap.ok(v.get("ok"), "%s_%s_validates_against_the_kubernetes_schema" % (v.get("kind"), v.get("name")),
               diag="%s: %s" % (v.get("file"), v.get("error")))
    # The check can fail: a Deployment with a port that is not a number, a PDB without its selector's shape.
    with open(os.path.join(K8S, "deployment.yaml"), encoding="utf-8") as f:
        broken = f.read().replace("containerPort: 8080", "containerPort: eighty")
    bad = os.path.join(TMP, "broken.yaml")
    with open(bad, "w", encoding="utf-8") as f:
        f.write(broken + "\n---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\n"
                "spec: {minAvailable: [1]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: y}\n"
                "spec: {selectr: {app: y}, ports: [{port: 80}]}\n")
    refused = {v.get("kind"): v.get("error", "") for v in validate([bad]) if not v.get("ok")}
    tap.ok(sorted(refused) == ["Deployment", "PodDisruptionBudget", "Service"], "broken_manifests_are_refused",
           diag=repr(refused))
    tap.ok("selectr" in refused.get("Service", ""), "unknown_field_is_refused", diag=repr(refused.get("Service")))
    return {(v["kind"], v["name"]): v["object"] for v in objects}


def test_config_checks(cfg):
    """The ConfigMap's config passes --check-config, its secret files and variables stood in for."""
    cfg = json.loads(json.dumps(cfg))
    for i, db in enumerate(cfg.get("databases", [])):
        if "password_file" in db:
            db["password_file"] = os.path.join(TMP, "db-%d-password" % i)
            with open(db["password_file"], "w", encoding="utf-8") as f:
                f.write("a-password\n")
    auth = cfg.get("auth") or {}
    if "api_keys_file" in auth:
        auth["api_keys_file"] = os.path.join(TMP, "api-keys.json")
        with open(auth["api_keys_file"], "w", encoding="utf-8") as f:
            json.dump([{"name": "app", "key_sha256": "ab" * 32, "databases": ["*"]}], f)
    env = {}
    if (cfg.get("cache") or {}).get("secret_env"):
        env[cfg["cache"]["secret_env"]] = "x" * 40
    for stage in (cfg.get("models") or {}).values():
        if stage.get("api_key_env"):
            env[stage["api_key_env"]] = "model-key"
    code, out = t2s.run_config_only(cfg, extra_args=["--check-config"], env=env, timeout=30)
    tap.ok(code == 0, "config_map_config_passes_check_config", diag=out)


def container_of(deploy):
    return deploy["spec"]["template"]["spec"]["containers"][0]


def probe_port(container, probe):
    """The number a probe's httpGet port names (a number, or a container port's name)."""
    port = probe.get("httpGet", {}).get("port")
    for p in container.get("ports", []):
        if port == p.get("name"):
            return p.get("containerPort")
    return port


def test_agreement(objs, cfg):
    deploy = objs[("Deployment", "text2sqld")]
    pod = deploy["spec"]["template"]["spec"]
    c = container_of(deploy)
    port = (cfg.get("listen") or {}).get("port", 8080)
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    tap.eq(ports.get("http"), port, "container_port_is_listen_port")
    for kind, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz"), ("startupProbe", "/healthz")):
        probe = c.get(kind) or {}
        tap.ok(probe.get("httpGet", {}).get("path") == path and probe_port(c, probe) == port,
               "%s_gets_%s_on_listen_port" % (kind.lower(), path.strip("/")), diag=json.dumps(probe))
    ann = deploy["spec"]["template"]["metadata"].get("annotations", {})
    tap.eq(ann.get("prometheus.io/port"), str(port), "prometheus_annotation_names_listen_port")

    mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    args = c.get("args", [])
    conf_path = args[args.index("--config") + 1] if "--config" in args else ""
    cm_vol = next((n for n, v in volumes.items() if "configMap" in v), None)
    tap.ok(cm_vol and conf_path == mounts.get(cm_vol, "?") + "/text2sqld.json", "config_flag_names_the_mounted_config",
           diag="%s vs %r" % (conf_path, mounts))

    secret_vol = next((n for n, v in volumes.items() if "secret" in v), None)
    secret = objs.get(("Secret", volumes[secret_vol]["secret"]["secretName"])) if secret_vol else None
    items = {i["path"]: i["key"] for i in volumes[secret_vol]["secret"].get("items", [])} if secret_vol else {}
    keys = set((secret or {}).get("stringData", {})) | set((secret or {}).get("data", {}))
    wanted = [db["password_file"] for db in cfg.get("databases", []) if "password_file" in db]
    if (cfg.get("auth") or {}).get("api_keys_file"):
        wanted.append(cfg["auth"]["api_keys_file"])
    wrong = []
    for path in wanted:
        d, name = os.path.split(path)
        if d != mounts.get(secret_vol) or items.get(name) not in keys:
            wrong.append(path)
    tap.ok(wanted and not wrong, "every_secret_file_of_the_config_is_mounted_from_the_secret",
           diag="missing: %r (mount %r, items %r, keys %r)" % (wrong, mounts.get(secret_vol), items, sorted(keys)))
    env = {e["name"]: e for e in c.get("env", [])}
    for var in [(cfg.get("cache") or {}).get("secret_env")] + [m.get("api_key_env") for m in
                                                               (cfg.get("models") or {}).values()]:
        if var:
            ref = env.get(var, {}).get("valueFrom", {}).get("secretKeyRef", {})
            tap.ok(ref.get("key") in keys, "env_%s_comes_from_the_secret" % var.lower(), diag=json.dumps(env.get(var)))

    # Drain: the grace period covers the preStop sleep, the service's drain and the exit.
    grace = pod.get("terminationGracePeriodSeconds", 30)
    cmd = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    pre_stop = float(cmd[1]) if len(cmd) == 2 and cmd[0] == "sleep" else None
    tap.ok(pre_stop is not None and pre_stop > 0, "pre_stop_sleeps_while_endpoints_drop_the_pod", diag=repr(cmd))
    drain_timeout = limit_ms(cfg, "drain_timeout_ms")
    drain_delay = limit_ms(cfg, "drain_delay_ms")
    if drain_delay is None:
        tap.diag("limits.drain_delay_ms is not a setting of config/ on this branch: the drain check leaves it out")
    need = (pre_stop or 0) + (drain_timeout or 0) / 1000 + (drain_delay or 0) / 1000 + MARGIN_S
    tap.ok(drain_timeout is not None and grace >= need, "termination_grace_covers_pre_stop_drain_and_exit",
           diag="grace %s < preStop %s + drain_timeout %s ms + drain_delay %s ms + %d" %
                (grace, pre_stop, drain_timeout, drain_delay, MARGIN_S))
    ru = deploy["spec"].get("strategy", {}).get("rollingUpdate", {})
    tap.eq(ru.get("maxUnavailable"), 0, "rolling_update_keeps_every_replica_until_its_successor_is_ready")

    labels = deploy["spec"]["template"]["metadata"]["labels"]
    selects = lambda sel: sel and all(labels.get(k) == v for k, v in sel.items())  # noqa: E731
    svc = objs[("Service", "text2sqld")]
    tap.ok(selects(svc["spec"]["selector"]) and all(p.get("targetPort") in ("http", port) for p in svc["spec"]["ports"]),
           "service_selects_the_pods_and_targets_http", diag=json.dumps(svc["spec"]))
    pdb = objs[("PodDisruptionBudget", "text2sqld")]
    tap.ok(selects(pdb["spec"]["selector"]["matchLabels"]), "disruption_budget_selects_the_pods")
    hpa = objs[("HorizontalPodAutoscaler", "text2sqld")]
    ref = hpa["spec"]["scaleTargetRef"]
    tap.ok(ref.get("kind") == "Deployment" and ref.get("name") == "text2sqld", "autoscaler_scales_the_deployment")
    tap.ok(hpa["spec"].get("minReplicas", 1) > pdb["spec"].get("minAvailable", 0) and
           deploy["spec"].get("replicas", 1) >= hpa["spec"].get("minReplicas", 1),
           "autoscaler_minimum_leaves_the_budget_room_to_evict",
           diag="minReplicas %s, minAvailable %s" % (hpa["spec"].get("minReplicas"), pdb["spec"].get("minAvailable")))
    external = [o for (k, _), o in objs.items() if k == "Service" and o["spec"].get("type") == "ExternalName"]
    names = {o["metadata"]["name"] for o in external}
    hosts = set(re.findall(r"@([a-z0-9.-]+):\d+", json.dumps(cfg))) | set(re.findall(r"redis://([a-z0-9.-]+):", json.dumps(cfg)))
    tap.ok(hosts and hosts <= names, "postgres_and_redis_hosts_of_the_config_are_external_services",
           diag="config hosts %r, ExternalName services %r" % (sorted(hosts), sorted(names)))


def main():
    with open(os.path.join(K8S, "text2sqld.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    if t2s.server_binary():
        test_config_checks(cfg)
    else:
        tap.skip("config_map_config_passes_check_config", "T2S_BIN is not set")
    why = missing_tools()
    if why:
        tap.skip("kubernetes_manifest_checks", why)
        return tap.done()
    manifests = sorted(os.path.join(K8S, f) for f in os.listdir(K8S) if f.endswith(".yaml"))
    docs = validate([os.path.join(K8S, "kustomization.yaml")])
    kust = check_kustomization(docs)
    if kust:
        objs = test_schemas([m for m in manifests if not m.endswith("kustomization.yaml")], kust)
        test_agreement(objs, cfg)
    return tap.done()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:
        fixtures.report_exception(tap)
        sys.exit(tap.done())
