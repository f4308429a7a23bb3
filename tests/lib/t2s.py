"""t2s.py - shared helpers for text2sqld's Python integration tests (standard library and jsonschema).

Import from a test with:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
    import t2s

What is here:
  Tap                 TAP producer: ok / eq / skip / diag / done (done() returns
                      the exit status, so `sys.exit(tap.done())`).
  free_port()         a TCP port free on 127.0.0.1 right now.
  Service             runs `$T2S_BIN --config FILE` with a config dict, waits for
                      /healthz, makes HTTP requests (never raising on 4xx/5xx),
                      stops it and returns its exit code; log captured to a file.
  run_config_only()   runs the binary expecting it to exit (config errors).
  take_sanitizer_reports()
                      sanitizer reports (ThreadSanitizer, AddressSanitizer,
                      LeakSanitizer, UBSan) that the binaries this process ran
                      printed; the test's own Tap checks them in done().
  psql(), pg_checksum(), sqlite_checksum(), pg_url(), sqlite_ro(), qi()
                      real-database helpers; the PostgreSQL server is the one
                      started by tests/lib/servers.sh (T2S_TEST_PG_* variables).
  datasets_dir(), spider_db_path(), spider_tables_json(), spider_dev_json()
                      benchmark data lookup via $T2S_DATASETS (default
                      <source root>/../shared/datasets); None when absent so
                      tests can `tap.skip(...)`.
  validate(), openapi_response_schema(), check_response()
                      JSON Schema 2020-12 validation (the jsonschema package)
                      and lookup of a response schema in an OpenAPI 3.1
                      document.

Temporary files (configs, logs) live in a per-Service temp directory that
Service.close() (or leaving the `with` block) removes; the log text stays
readable through log_text() after that.
"""

import hashlib
import http.client
import json
import os
import re
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.parse

import jsonschema
import jsonschema.validators

SOURCE_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


# --------------------------------------------------------------------------- TAP

class Tap:
    """Writes TAP to stdout as checks happen; done() prints the plan `1..N`
    and returns 0 when every check passed (skips count as passed), else 1.

    The test's own Tap (the one writing to stdout, out=None) also answers for
    the binaries the test ran: when any Service or run_config_only() ran
    since the last take_sanitizer_reports(), done() adds the check
    text2sqld_printed_no_sanitizer_report, which fails with the reports when
    one of them printed a sanitizer report. A sanitizer build keeps serving
    after a report, or dies of it (halt_on_error): either way the report,
    not a missing exit-code check, fails the test."""

    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.checks_binaries = out is None
        self.count = 0
        self.failed = 0
        self.skipped = 0

    @staticmethod
    def _clean(name):
        # '#' starts a TAP directive and a newline ends the line: keep names plain.
        return str(name).replace("\n", " ").replace("#", "no.")

    def _line(self, text):
        self.out.write(text + "\n")
        self.out.flush()

    def diag(self, msg):
        """Writes msg as '# ' comment lines."""
        for line in str(msg).splitlines() or [""]:
            self._line("# " + line)

    def ok(self, cond, name, diag=None):
        """Records one check; diag (text or a callable returning text) is
        printed only when the check fails. Returns bool(cond)."""
        self.count += 1
        cond = bool(cond)
        self._line("%s %d - %s" % ("ok" if cond else "not ok", self.count, self._clean(name)))
        if not cond:
            self.failed += 1
            if diag is not None:
                self.diag(diag() if callable(diag) else diag)
        return cond

    def eq(self, got, want, name):
        """Checks got == want, showing both on failure."""
        return self.ok(got == want, name,
                       diag=lambda: "got:  %s\nwant: %s" % (_short(got), _short(want)))

    def skip(self, name, why):
        self.count += 1
        self.skipped += 1
        self._line("ok %d - %s # SKIP %s" % (self.count, self._clean(name),
                                              str(why).replace("\n", " ")))

    def done(self):
        """Prints the plan (after the sanitizer check, see the class comment;
        it stops the Services still running first) and returns the exit
        status."""
        if self.checks_binaries:
            reports = take_sanitizer_reports()
            if reports is not None:
                self.ok(not reports, "text2sqld_printed_no_sanitizer_report",
                        diag=lambda: "\n\n".join(reports))
        self._line("1..%d" % self.count)
        return 1 if self.failed else 0


def _short(value, limit=2000):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "... (%d chars)" % len(text)


# --------------------------------------------------------------------------- processes

def free_port():
    """A TCP port that is free on 127.0.0.1 at the time of the call."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_binary():
    """Path of the text2sqld binary from $T2S_BIN, or None when unset."""
    return os.environ.get("T2S_BIN") or None


# The first line of a report of each sanitizer the builds use; a report's
# SUMMARY line names where it happened.
_SANITIZER_START = re.compile(r"WARNING: ThreadSanitizer:|ERROR: (?:Address|Leak|Thread)Sanitizer:|"
                              r"^\S+:\d+:\d+: runtime error: ", re.M)
_SANITIZER_SUMMARY = re.compile(r"^SUMMARY: \w*Sanitizer:.*$", re.M)
_started = []         # every Service started since the last take_sanitizer_reports()
_other_reports = []   # reports found in run_config_only() output
_other_runs = 0       # run_config_only() calls since then


def sanitizer_report(text, origin):
    """The sanitizer report in text (a binary's output) as one short
    paragraph naming origin, or None when there is none: the first report
    line, the SUMMARY lines, the number of reports."""
    starts = list(_SANITIZER_START.finditer(text))
    if not starts:
        return None
    begin = text.rfind("\n", 0, starts[0].start()) + 1
    end = text.find("\n", starts[0].start())
    lines = ["%s: %d sanitizer report(s)" % (origin, len(starts)),
             text[begin:end if end >= 0 else len(text)].strip()]
    lines += [x.strip() for x in _SANITIZER_SUMMARY.findall(text)[:10]]
    return "\n".join(lines)


def take_sanitizer_reports():
    """Sanitizer reports printed by the binaries run through Service and
    run_config_only() since the last call: None when none ran, else a list
    (empty when all were clean) of paragraphs from sanitizer_report().
    Services still running are stopped (SIGTERM) first, so that what they
    print while shutting down is seen too. The Services and reports seen
    are forgotten."""
    global _other_runs
    if not _started and not _other_runs:
        return None
    reports = []
    for svc in _started:
        svc.stop()
        rep = sanitizer_report(svc.log_text(), "%s --config %s" % (svc.binary, svc.config_path))
        if rep:
            reports.append(rep)
    reports += _other_reports
    del _started[:]
    del _other_reports[:]
    _other_runs = 0
    return reports


def _merged_env(env):
    merged = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            merged.pop(k, None)
        else:
            merged[k] = str(v)
    return merged


class Headers:
    """Case-insensitive, read-only view of response headers. get() returns
    the values of a repeated header joined with ', '."""

    def __init__(self, pairs):
        self._pairs = list(pairs)

    def get(self, name, default=None):
        vals = [v for k, v in self._pairs if k.lower() == name.lower()]
        return ", ".join(vals) if vals else default

    def get_all(self, name):
        return [v for k, v in self._pairs if k.lower() == name.lower()]

    def __getitem__(self, name):
        v = self.get(name)
        if v is None:
            raise KeyError(name)
        return v

    def __contains__(self, name):
        return self.get(name) is not None

    def items(self):
        return list(self._pairs)

    def __repr__(self):
        return "Headers(%r)" % self._pairs


class Response:
    """status (int), headers (Headers), body (bytes), text (str), json
    (parsed body, or None when the body is not JSON)."""

    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.text = body.decode("utf-8", "replace")
        try:
            self.json = json.loads(self.text) if self.text.strip() else None
        except ValueError:
            self.json = None

    def __repr__(self):
        return "<Response %d %s>" % (self.status, _short(self.text, 300))


def http_request(host, port, method, path, json_body=None, body=None, headers=None, timeout=30):
    """One HTTP/1.1 request on a fresh connection; returns a Response for any
    status. Raises OSError/http.client errors only for transport failures."""
    hdrs = dict(headers or {})
    if json_body is not None:
        body = json.dumps(json_body).encode("utf-8")
        if not any(k.lower() == "content-type" for k in hdrs):
            hdrs["Content-Type"] = "application/json"
    elif isinstance(body, str):
        body = body.encode("utf-8")
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        return Response(resp.status, resp.reason, Headers(resp.getheaders()), data)
    finally:
        conn.close()


class Service:
    """A text2sqld process under test.

        with t2s.Service({"databases": [...]}) as svc:     # started, /healthz answered
            r = svc.request("POST", "/execute", json={...})
            tap.eq(r.status, 200, "execute_answers_200")

    config: dict written as JSON to a temp file; `listen` gets host 127.0.0.1
    and a free port unless given, `limits` a drain_delay_ms of 0. env: extra environment (None values remove a
    variable). args: extra command-line arguments. binary: defaults to $T2S_BIN
    (RuntimeError when neither is set). stdout and stderr go to one log file.
    """

    def __init__(self, config, env=None, args=None, binary=None):
        self.binary = binary or server_binary()
        if not self.binary:
            raise RuntimeError("T2S_BIN is not set: cannot start text2sqld")
        self.config = json.loads(json.dumps(config))  # private deep copy
        listen = self.config.setdefault("listen", {})
        listen.setdefault("host", "127.0.0.1")
        if "port" not in listen:
            listen["port"] = free_port()
        self.host = listen["host"]
        self.port = int(listen["port"])
        # No drain delay unless a test asks for one: SIGTERM then refuses new work at once and a
        # stopped service exits without the delay a gateway needs (limits.drain_delay_ms, 5 s).
        limits = self.config.setdefault("limits", {})
        if isinstance(limits, dict):
            limits.setdefault("drain_delay_ms", 0)
        self.env = env
        self.args = list(args or [])
        self.dir = tempfile.mkdtemp(prefix="t2s-svc-")
        self.config_path = os.path.join(self.dir, "config.json")
        self.log_path = os.path.join(self.dir, "service.log")
        with open(self.config_path, "w", encoding="utf-8") as f:
            json.dump(self.config, f, indent=1)
        self.proc = None
        self._log = None
        self._log_cache = None

    @property
    def base_url(self):
        return "http://%s:%d" % (self.host, self.port)

    def start(self, wait=True, timeout=20):
        """Starts the process; with wait, polls GET /healthz until it answers
        200. Raises RuntimeError (with the log tail) when the process exits or
        does not become healthy within timeout seconds."""
        self._log = open(self.log_path, "ab")
        if self not in _started:
            _started.append(self)
        self.proc = subprocess.Popen([self.binary, "--config", self.config_path] + self.args,
                                     stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=_merged_env(self.env))
        if not wait:
            return self
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise RuntimeError("text2sqld exited with %d before answering /healthz; log:\n%s"
                                   % (code, self.log_tail()))
            try:
                r = http_request(self.host, self.port, "GET", "/healthz", timeout=2)
                if r.status == 200:
                    return self
                last = "status %d" % r.status
            except (OSError, http.client.HTTPException) as e:
                last = str(e)
            time.sleep(0.05)
        self.stop(signal.SIGKILL, timeout=5)
        raise RuntimeError("text2sqld not healthy after %ss (%s); log:\n%s"
                           % (timeout, last, self.log_tail()))

    def request(self, method, path, json=None, body=None, headers=None, timeout=30):
        """Sends one request; returns a Response whatever the status."""
        return http_request(self.host, self.port, method, path, json_body=json, body=body,
                            headers=headers, timeout=timeout)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Sends sig and waits up to timeout seconds, then SIGKILLs. Returns
        the exit code (negative: killed by that signal; None: never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log:
            self._log.close()
            self._log = None
        return self.proc.returncode

    def log_text(self):
        """Everything the process wrote to stdout and stderr so far."""
        if self._log_cache is not None:
            return self._log_cache
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, lines=40):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def close(self):
        """Stops the process if needed and removes the temp directory."""
        self.stop()
        if os.path.isdir(self.dir):
            self._log_cache = self.log_text()
            for name in os.listdir(self.dir):
                try:
                    os.unlink(os.path.join(self.dir, name))
                except OSError:
                    pass
            try:
                os.rmdir(self.dir)
            except OSError:
                pass

    def __enter__(self):
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def run_config_only(config, extra_args=None, env=None, timeout=10, binary=None):
    """Runs `$T2S_BIN --config FILE [extra_args]` where FILE holds config (a
    dict, written as JSON, or text written verbatim) and waits for it to exit.
    Returns (exit code, stdout + stderr). When the process is still running
    after timeout seconds it is killed and the exit code is None."""
    binary = binary or server_binary()
    if not binary:
        raise RuntimeError("T2S_BIN is not set: cannot run text2sqld")
    with tempfile.TemporaryDirectory(prefix="t2s-cfg-") as tmp:
        path = os.path.join(tmp, "config.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(config if isinstance(config, str) else json.dumps(config, indent=1))
        proc = subprocess.Popen([binary, "--config", path] + list(extra_args or []),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env=_merged_env(env))
        try:
            out, _ = proc.communicate(timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            code = None
    global _other_runs
    _other_runs += 1
    text = out.decode("utf-8", "replace")
    rep = sanitizer_report(text, "%s --config (run_config_only)" % binary)
    if rep:
        _other_reports.append(rep)
    return code, text


# --------------------------------------------------------------------------- databases

PG_NULL = "\x1a"  # printed by psql for NULL so it can be told apart from ''


class PsqlError(Exception):
    pass


def pg_host():
    return os.environ.get("T2S_TEST_PG_HOST", "127.0.0.1")


def pg_port():
    return os.environ.get("T2S_TEST_PG_PORT", "5432")


def pg_url(dbname, user="t2s_reader"):
    """postgresql:// URL of dbname on the test server, for user (by default
    the read-only role the service connects as)."""
    return "postgresql://%s@%s:%s/%s" % (user, pg_host(), pg_port(), dbname)


def psql(sql, dbname="postgres", host=None, port=None, user="postgres", timeout=60):
    """Runs sql (one or more statements) through psql as `user` and returns
    the rows of every result, in order, as lists of strings (NULL becomes
    None; values may contain newlines). Raises PsqlError with psql's message
    when anything fails (ON_ERROR_STOP)."""
    # Fields end with \x1f, records with a NUL byte (-0: also after a result's
    # last record, which psql otherwise ends with a newline that values may
    # contain too); NULL prints as PG_NULL.
    cmd = ["psql", "-X", "-A", "-t", "-q", "-F", "\x1f", "-0", "-P", "null=" + PG_NULL,
           "-v", "ON_ERROR_STOP=1", "-h", host or pg_host(), "-p", str(port or pg_port()),
           "-U", user, "-d", dbname, "-f", "-"]
    env = dict(os.environ, PGCLIENTENCODING="UTF8", PGCONNECT_TIMEOUT="10")
    proc = subprocess.run(cmd, input=sql.encode("utf-8"), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=timeout)
    if proc.returncode != 0:
        raise PsqlError("psql on %s failed (exit %d): %s" % (
            dbname, proc.returncode, proc.stderr.decode("utf-8", "replace").strip()))
    out = proc.stdout.decode("utf-8")
    return [[None if v == PG_NULL else v for v in rec.split("\x1f")]
            for rec in out.split("\x00")[:-1]]


class ClientSession:
    """A database's command-line client kept open for many short queries (the
    admin side a test checks after every request): a query costs a round
    trip instead of a process and a connection.  Subclasses give the command
    and how a query is written and its output read; _exchange(script, mark)
    sends a script that ends by printing mark on its own line and returns
    the output before it (bytes) and what follows it on that line, or raises
    error_class when the client is gone or silent past the timeout.
    close() ends it; use it in a with block."""

    error_class = RuntimeError

    def __init__(self, cmd, env=None):
        self._errors = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._errors, env=env)
        self._n = 0

    def _next_mark(self):
        self._n += 1
        return "t2s-%s-done-%d" % (type(self).__name__.lower(), self._n)

    def _errors_at(self):
        return self._errors.seek(0, os.SEEK_END)

    def _errors_since(self, at):
        self._errors.seek(at)
        return self._errors.read().decode("utf-8", "replace").strip()

    def _exchange(self, script, mark, timeout):
        try:
            self._proc.stdin.write(script.encode("utf-8"))
            self._proc.stdin.flush()
        except OSError as e:
            raise self.error_class("%s is gone: %s" % (type(self).__name__, e))
        out, tail = b"", mark.encode()
        deadline = time.monotonic() + timeout
        fd = self._proc.stdout.fileno()
        while tail not in out or not out.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise self.error_class("%s gave no answer within %d s" % (type(self).__name__, timeout))
            chunk = os.read(fd, 65536)
            if not chunk:
                raise self.error_class("%s ended" % type(self).__name__)
            out += chunk
        at = out.rindex(tail)
        return out[:at], out[at + len(tail):].strip()

    def close(self):
        if self._proc.poll() is None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._errors.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class PsqlSession(ClientSession):
    """One psql kept open as `user` on dbname (ClientSession): psql(sql) runs
    sql (one or more statements) and returns the rows as the function psql()
    does, or raises PsqlError with psql's message when the last statement
    failed."""

    error_class = PsqlError

    def __init__(self, dbname="postgres", host=None, port=None, user="postgres"):
        self.dbname = dbname
        super().__init__(["psql", "-X", "-A", "-t", "-q", "-F", "\x1f", "-0", "-P", "null=" + PG_NULL,
                          "-v", "ON_ERROR_STOP=0", "-h", host or pg_host(), "-p", str(port or pg_port()),
                          "-U", user, "-d", dbname],
                         env=dict(os.environ, PGCLIENTENCODING="UTF8", PGCONNECT_TIMEOUT="10"))

    def psql(self, sql, timeout=60):
        mark = self._next_mark() + " "  # after the last record's NUL, then :ERROR on the same line
        at = self._errors_at()
        body, failed = self._exchange(sql.rstrip().rstrip(";") + ";\n\\echo " + mark + ":ERROR\n", mark, timeout)
        if failed != b"false":
            raise PsqlError("psql on %s failed: %s" % (self.dbname, self._errors_since(at)))
        return [[None if v == PG_NULL else v for v in rec.split("\x1f")]
                for rec in body.decode("utf-8").split("\x00")[:-1]]


def pg_user_tables(dbname, host=None, port=None, session=None):
    """[(schema, table)] of every ordinary table outside the system schemas
    (through session, a PsqlSession on dbname, when given)."""
    run = session.psql if session else (lambda sql: psql(sql, dbname, host, port))
    rows = run("SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON "
                "n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN "
                "('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%' "
                "AND n.nspname NOT LIKE 'pg_temp%' ORDER BY 1, 2;")
    return [(r[0], r[1]) for r in rows]


def qi(name):
    """name as a double-quoted SQL identifier (PostgreSQL and SQLite)."""
    return '"' + name.replace('"', '""') + '"'


def pg_checksum(dbname, host=None, port=None, session=None):
    """md5 (hex), computed by PostgreSQL as the admin user, over every user
    table's name and its rows' text forms in sorted order (through session,
    a PsqlSession on dbname, when given). Equal before and after a test
    means the test changed no data."""
    tables = pg_user_tables(dbname, host, port, session)
    if not tables:
        return hashlib.md5(b"").hexdigest()
    parts = []
    for schema, table in tables:
        name = "%s.%s" % (qi(schema), qi(table))
        parts.append("SELECT %s::text AS t, (SELECT coalesce(md5(string_agg(x::text, E'\\n' "
                     "ORDER BY x::text COLLATE \"C\")), '') FROM %s AS x) AS h" %
                     ("'" + name.replace("'", "''") + "'", name))
    sql = ("SELECT md5(string_agg(t || ':' || h, E'\\n' ORDER BY t COLLATE \"C\")) FROM (%s) s;"
           % " UNION ALL ".join(parts))
    return (session.psql(sql) if session else psql(sql, dbname, host, port))[0][0]


def _sqlite_uri(path):
    return "file:%s?mode=ro" % urllib.parse.quote(os.path.abspath(path), safe="/")


def sqlite_ro(path):
    """A read-only sqlite3 connection to the file at path (URI mode=ro: it
    cannot change the file, nor create it). The caller closes it."""
    return sqlite3.connect(_sqlite_uri(path), uri=True)


def sqlite_checksum(path):
    """sha256 (hex) over an SQLite file's schema (sqlite_master) and every
    table's rows in sorted order, with value types. The file is opened
    read-only (URI mode=ro), so computing it cannot change the database."""
    con = sqlite_ro(path)
    # TEXT comes back as str (undecodable bytes kept via surrogateescape), BLOB as bytes.
    con.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    try:
        h = hashlib.sha256()
        for row in con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                               "ORDER BY type, name"):
            h.update(repr(row).encode("utf-8"))
        names = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for name in names:
            ncol = len(con.execute("PRAGMA main.table_info(%s)" % qi(name)).fetchall())
            order = ", ".join(str(i + 1) for i in range(ncol))
            h.update(("\x00table\x00%r" % name).encode("utf-8", "surrogateescape"))
            for row in con.execute("SELECT * FROM main.%s ORDER BY %s" % (qi(name), order)):
                h.update(repr([(type(v).__name__, v) for v in row]).encode("utf-8", "surrogateescape"))
        return h.hexdigest()
    finally:
        con.close()


# --------------------------------------------------------------------------- datasets

def datasets_dir():
    """$T2S_DATASETS, else <source root>/../shared/datasets; None if absent."""
    d = os.environ.get("T2S_DATASETS") or os.path.join(SOURCE_ROOT, "..", "shared", "datasets")
    d = os.path.normpath(d)
    return d if os.path.isdir(d) else None


def spider_dir():
    d = datasets_dir()
    if d is None:
        return None
    d = os.path.join(d, "spider-dev")
    return d if os.path.isdir(d) else None


def spider_db_path(db_id):
    """Absolute path of spider-dev/database/<db_id>/<db_id>.sqlite, or None."""
    d = spider_dir()
    if d is None:
        return None
    p = os.path.join(d, "database", db_id, db_id + ".sqlite")
    return p if os.path.isfile(p) else None


def _spider_json(name):
    d = spider_dir()
    if d is None or not os.path.isfile(os.path.join(d, name)):
        return None
    with open(os.path.join(d, name), encoding="utf-8") as f:
        return json.load(f)


def spider_tables_json():
    """Parsed spider-dev/tables.json (a list of schemas), or None."""
    return _spider_json("tables.json")


def spider_dev_json():
    """Parsed spider-dev/dev.json (a list of questions), or None."""
    return _spider_json("dev.json")


# --------------------------------------------------------------------------- JSON Schema

# Validation is the jsonschema package's (Debian python3-jsonschema, scripts/install-deps.sh):
# JSON Schema 2020-12, the dialect of OpenAPI 3.1 (openapi.json's jsonSchemaDialect).  The one
# addition is OpenAPI 3.0's `nullable: true`, which lets a typed value be null.
_type_keyword = jsonschema.Draft202012Validator.VALIDATORS["type"]


def _type_or_nullable(validator, types, instance, schema):
    if instance is None and schema.get("nullable") is True:
        return
    yield from _type_keyword(validator, types, instance, schema)


_Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"type": _type_or_nullable})


def resolve_ref(ref, root_doc):
    """Resolves a local JSON pointer `#/a/b` in root_doc; raises KeyError."""
    if not ref.startswith("#"):
        raise KeyError("only local $ref is supported: %s" % ref)
    node = root_doc
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        part = urllib.parse.unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


_UNRESOLVABLE = ("RefResolutionError", "_WrappedReferencingError", "Unresolvable", "PointerToNowhere")


def _validator(schema, root_doc):
    """A 2020-12 validator for schema whose local $refs resolve in root_doc:
    one made for root_doc, moved to schema (as jsonschema descends itself)."""
    return _Validator(root_doc).evolve(schema=schema)


def validate(instance, schema, root_doc=None, path="$"):
    """Validates instance against schema (JSON Schema 2020-12 as used in
    OpenAPI 3.1, plus OpenAPI 3.0's nullable), local $ref such as
    #/components/schemas/X resolved in root_doc.  `format` is not checked.
    Returns a list of error strings ("<JSON path>: <message> (<keyword>)"),
    empty when the instance is valid."""
    if root_doc is None:
        root_doc = schema
    try:
        errors = sorted(_validator(schema, root_doc).iter_errors(instance), key=lambda e: e.json_path)
        return ["%s%s: %s (%s)" % (path, e.json_path[1:], e.message, e.validator) for e in errors]
    except Exception as e:  # noqa: BLE001 - RefResolutionError (4.10), referencing's Unresolvable (4.18+)
        if type(e).__name__ not in _UNRESOLVABLE:
            raise
        return ["%s: unresolvable $ref (%s)" % (path, e)]


def _is_valid(v, s, root):
    return not validate(v, s, root)


# --------------------------------------------------------------------------- OpenAPI

def _deref(node, doc, depth=0):
    while isinstance(node, dict) and "$ref" in node and depth < 50:
        node = resolve_ref(node["$ref"], doc)
        depth += 1
    return node


def _match_path(template, path):
    """True when an OpenAPI path template such as /databases/{name} matches
    the concrete path; a template parameter matches one non-empty segment."""
    t_parts = template.strip("/").split("/")
    p_parts = path.strip("/").split("/")
    if len(t_parts) != len(p_parts):
        return False
    for t, p in zip(t_parts, p_parts):
        if "{" in t:
            rx = "^" + "".join("[^/]+" if part.startswith("{") else re.escape(part)
                               for part in re.split(r"(\{[^}]*\})", t) if part) + "$"
            if not p or not re.match(rx, urllib.parse.unquote(p)):
                return False
        elif t != p:
            return False
    return True


def openapi_path(doc, path):
    """The path as the document spells it: the API's operations are listed under /v1 and also
    answer without it (server/router.h), so an unversioned path the document lacks is looked up
    with the prefix."""
    paths = doc.get("paths", {})
    if path.startswith("/v1/") or path in paths:
        return path
    if "/v1" + path in paths or any("{" in t and _match_path(t, "/v1" + path) for t in paths):
        return "/v1" + path
    return path


def openapi_response_schema(doc, path, method, status, content_type="application/json"):
    """Returns the JSON Schema of a documented response: `path` is a concrete
    request path (query string ignored; literal paths win over templates),
    `status` an int or string (exact code, then 4XX-style range, then
    "default"), content_type the response's Content-Type (parameters ignored;
    falls back to type/* and */*). A media type without a schema yields {}.
    Raises LookupError naming what is not documented."""
    path = openapi_path(doc, path.split("?", 1)[0])
    paths = doc.get("paths", {})
    item = paths.get(path)
    if item is None:
        candidates = [t for t in paths if "{" in t and _match_path(t, path)]
        # Prefer the template with the most literal segments.
        candidates.sort(key=lambda t: -sum(1 for seg in t.split("/") if "{" not in seg))
        if not candidates:
            raise LookupError("path %s is not in the OpenAPI document" % path)
        item = paths[candidates[0]]
    item = _deref(item, doc)
    op = item.get(method.lower())
    if op is None:
        raise LookupError("%s %s is not in the OpenAPI document" % (method.upper(), path))
    responses = op.get("responses", {})
    status = str(status)
    resp = responses.get(status)
    if resp is None:
        resp = responses.get(status[0] + "XX", responses.get(status[0] + "xx"))
    if resp is None:
        resp = responses.get("default")
    if resp is None:
        raise LookupError("%s %s has no response %s" % (method.upper(), path, status))
    resp = _deref(resp, doc)
    content = resp.get("content")
    if not content:
        raise LookupError("%s %s response %s has no content" % (method.upper(), path, status))
    ctype = (content_type or "").split(";", 1)[0].strip().lower()
    lowered = {k.lower(): v for k, v in content.items()}
    media = lowered.get(ctype)
    if media is None and "/" in ctype:
        media = lowered.get(ctype.split("/", 1)[0] + "/*")
    if media is None:
        media = lowered.get("*/*")
    if media is None:
        raise LookupError("%s %s response %s has no content type %s (documented: %s)" % (
            method.upper(), path, status, ctype, ", ".join(content)))
    media = _deref(media, doc)
    return media.get("schema", {})


def _schema_parts(v, s, root, depth=0):
    """The schemas that apply to v at this level: s itself, what its $ref,
    allOf, and the anyOf/oneOf branches v matches lead to."""
    if depth > 50 or not isinstance(s, dict):
        return []
    parts = [s]
    if "$ref" in s:
        try:
            parts += _schema_parts(v, resolve_ref(s["$ref"], root), root, depth + 1)
        except (KeyError, IndexError, ValueError):
            pass
    for sub in s.get("allOf", []):
        parts += _schema_parts(v, sub, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        for sub in s.get(key, []):
            if _is_valid(v, sub, root):
                parts += _schema_parts(v, sub, root, depth + 1)
    return parts


def undocumented_fields(instance, schema, root_doc=None, path="$"):
    """Paths of the object members of instance that no schema documents:
    the response schemas of the OpenAPI document are open (clients must
    ignore unknown fields), so validate() accepts any extra member; this is
    the check that the service itself sends none it does not document.  A
    member is documented when a schema that applies at its level (through
    $ref, allOf, and the anyOf/oneOf branches the value matches) names it in
    properties or patternProperties, or gives additionalProperties a schema
    (a map).  Members are followed into every schema that documents them."""
    if root_doc is None:
        root_doc = schema
    found = []
    _undocumented(instance, schema, root_doc, path, found)
    return found


def _undocumented(v, s, root, path, found):
    parts = _schema_parts(v, s, root)
    if isinstance(v, dict):
        for key, val in v.items():
            subs, documented = [], False
            for p in parts:
                if key in p.get("properties", {}):
                    subs.append(p["properties"][key])
                    documented = True
                for pat, psch in p.get("patternProperties", {}).items():
                    if re.search(pat, key):
                        subs.append(psch)
                        documented = True
                ap = p.get("additionalProperties")
                if isinstance(ap, dict) and key not in p.get("properties", {}):
                    subs.append(ap)
                    documented = True
                elif ap is True or (p.get("type") == "object" and not p.get("properties") and
                                    "additionalProperties" not in p and not p.get("patternProperties")):
                    documented = True  # a free-form object: anything goes
            if not documented:
                found.append("%s.%s" % (path, key))
            for sub in subs:
                _undocumented(val, sub, root, "%s.%s" % (path, key), found)
    elif isinstance(v, list):
        for p in parts:
            prefix = p.get("prefixItems", [])
            for i, item in enumerate(v):
                if i < len(prefix):
                    _undocumented(item, prefix[i], root, "%s[%d]" % (path, i), found)
                elif "items" in p:
                    _undocumented(item, p["items"], root, "%s[%d]" % (path, i), found)


def check_response(tap, doc, resp, method, path, name):
    """One TAP check: resp (a Response) matches the schema documented for
    method, path, its status and its Content-Type in the OpenAPI doc."""
    try:
        schema = openapi_response_schema(doc, path, method, resp.status,
                                         resp.headers.get("Content-Type", ""))
    except LookupError as e:
        return tap.ok(False, name, diag=str(e))
    if resp.json is None and resp.text.strip() != "null":
        return tap.ok(False, name, diag="body is not JSON: %s" % _short(resp.text, 300))
    errs = validate(resp.json, schema, doc)
    errs += ["%s: not documented (the document's response objects are open; every field sent must be "
             "documented)" % f for f in sorted(set(undocumented_fields(resp.json, schema, doc)))]
    return tap.ok(not errs, name, diag="\n".join(errs[:20]))
