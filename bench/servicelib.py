"""Starting what a bench needs: a model stub (gold_stub.py, gold_tables_stub.py,
replay_stub.py), a text2sqld config (through make_config.py) and the text2sqld
service itself (wait_ready: until GET /readyz answers), and stopping them again.
Python 3 standard library only.

Every process started here is stopped by its own pid (SIGTERM, then SIGKILL
after 5 s); nothing is looked up by name.
"""

import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def find_binary(explicit=None):
    """text2sqld binary: explicit, $TEXT2SQLD_BIN, build/ of this repository, /tmp/bench-build."""
    for p in (explicit, os.environ.get("TEXT2SQLD_BIN"), os.path.join(REPO, "build", "text2sqld"),
              "/tmp/bench-build/text2sqld"):
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.abspath(p)  # the service runs in its own directory
    return None


def wait_ready(client, proc, timeout_s):
    """Poll GET /readyz every 10 ms until it answers 200 (returns its body); exits when
    proc (a started service, or None) ends first or after timeout_s."""
    t_end = time.perf_counter() + timeout_s
    last = None
    while time.perf_counter() < t_end:
        if proc is not None and proc.poll() is not None:
            raise SystemExit("spawned process exited with status %s before ready" % proc.returncode)
        try:
            status, body, text, _ = client.request("GET", "/readyz")
            if status == 200:
                return body
            last = "HTTP %d %s" % (status, text[:200])
        except OSError as e:
            last = str(e)
        time.sleep(0.01)
    raise SystemExit("service not ready after %.0f s: %s" % (timeout_s, last))


class Procs:
    """The processes a bench started; stop_all() ends them in reverse order."""

    def __init__(self):
        self.procs = []
        self.tmp = tempfile.mkdtemp(prefix="t2s-bench-")

    def path(self, name):
        return os.path.join(self.tmp, name)

    def start_stub(self, script, args, log_name):
        """Start bench/<script> (a model_stub.py answer source) with --port 0 and args;
        returns its base URL (…/v1) from its "LISTENING <port>" line."""
        cmd = [sys.executable, os.path.join(HERE, script), "--port", "0"] + list(args)
        err = open(self.path(log_name), "w")
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        self.procs.append(p)
        line = p.stdout.readline()
        if not line.startswith("LISTENING "):
            raise SystemExit("%s did not start (see %s)" % (script, self.path(log_name)))
        return "http://127.0.0.1:%d/v1" % int(line.split()[1])

    def start_gold_stub(self, question_files, bare=False, log_name="gold_stub.log", keep_prompts=False):
        """Start gold_stub.py on a free port; returns its base URL (…/v1)."""
        args = ["--keep-prompts"] if keep_prompts else []
        for f in question_files:
            args += ["--questions", f]
        if bare:
            args.append("--bare")
        return self.start_stub("gold_stub.py", args, log_name)

    def start_gold_tables_stub(self, question_files, db_dirs, log_name="gold_tables_stub.log"):
        """Start gold_tables_stub.py (a link model answering the gold tables) on a
        free port; returns its base URL (…/v1)."""
        args = []
        for f in question_files:
            args += ["--questions", f]
        for d in db_dirs:
            args += ["--db-dir", d]
        return self.start_stub("gold_tables_stub.py", args, log_name)

    def write_config(self, port, db_dir, extra, name="text2sqld.json"):
        """Config registering db_dir's Spider-layout databases on port, with
        extra (dict) merged into the top level; written by make_config.py."""
        out = self.path(name)
        subprocess.run([sys.executable, os.path.join(HERE, "make_config.py"), "--port", str(port),
                        "--db-dir", db_dir, "--extra", json.dumps(extra), "--out", out],
                       check=True, stdout=subprocess.DEVNULL)
        return out

    def start_service(self, binary, config, ready_timeout=600.0, log_name="text2sqld.log"):
        """Start text2sqld with config and wait for GET /readyz and for every database's value
        index (evidence, and so the prompt, depend on it); returns (client URL, pid)."""
        with open(config, encoding="utf-8") as f:
            cfg = json.load(f)
        url = "http://%s:%d" % (cfg["listen"].get("host", "127.0.0.1"), cfg["listen"]["port"])
        log = open(self.path(log_name), "w")
        p = subprocess.Popen(shlex.split(binary) + ["--config", config], stdout=log, stderr=subprocess.STDOUT,
                             cwd=self.tmp)
        self.procs.append(p)
        try:
            wait_ready(benchlib.LinkClient(url, timeout=5.0), p, ready_timeout)
        except SystemExit as e:
            log.flush()
            with open(self.path(log_name), encoding="utf-8", errors="replace") as f:
                tail = f.read()[-2000:]
            raise SystemExit("%s\n%s (%s):\n%s" % (e, binary, self.path(log_name), tail))
        dbs = sorted(d["name"] for d in cfg.get("databases", []))
        state, _ = benchlib.wait_value_indexes(benchlib.LinkClient(url, timeout=60.0), dbs, ready_timeout)
        not_ready = [n for n, st in state.items() if st["state"] != "ready"]
        if not_ready:
            print("servicelib: value index not ready for %s" % ", ".join(not_ready), file=sys.stderr)
        return url, p.pid

    def start(self, argv, log_name, cwd=None, env=None):
        """Start any other process (a peer); its output goes to log_name."""
        log = open(self.path(log_name), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []


def models_section(base_url, model, profile=None, api_key_env=None, timeout_ms=None, max_tokens=None):
    """The contract's models.generate entry for one OpenAI-compatible endpoint."""
    g = {"base_url": base_url, "model": model}
    if api_key_env:
        g["api_key_env"] = api_key_env
    if profile:
        g["profile"] = profile
    if timeout_ms:
        g["timeout_ms"] = timeout_ms
    if max_tokens:
        g["max_tokens"] = max_tokens
    return {"generate": g}


def bench_extra(procs, models, generate=None, more=None):
    """Top-level config members a bench adds: models, a private state store
    (so no earlier run's examples leak in) and generate settings."""
    extra = {"models": models, "state": {"url": "sqlite://" + procs.path("state.sqlite")}}
    if generate:
        extra["generate"] = generate
    if more:
        extra.update(more)
    return extra
