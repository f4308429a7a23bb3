"""fixtures.py - plumbing shared by text2sqld's integration tests: the
fixtures they build and the service lifecycle they check (stdlib only).

It lives beside t2s.py; import both after the usual sys.path line:
    import t2s
    import fixtures

What is here:
  PROBLEM_PREFIX, problem_type(), is_problem(), check_problem()
                      RFC 9457 problem bodies as text2sqld writes them.
  execute()           one POST /execute.
  result_key(), has_order_by()
                      result rows as bags that compare by value (lists when
                      the query orders them).
  have_pg()           whether the PostgreSQL server of the tests is there.
  write_sqlite()      SQLite fixture files.
  scratch_dir()       a temporary directory removed when the test exits.
  PgDatabases         the PostgreSQL databases (and roles) of a test: create()
                      each, drop_all() at the end; the only place that
                      creates or drops a test database.
  serving(), stop_ok()
                      a service whose exit code 0 on SIGTERM is a TAP check.
  run_with_binary(), report_exception()
                      the frame of a test file's main().
  calibrate_count(), wait_in_flight()
                      a slow request sized for this machine and build, and
                      waiting until the service counts it in flight.
  ModelStub           tests/stub/model_stub.py as a model server.
  RedisServer         a redis-server of the test's own, with raw RESP commands.
  peak_rss_kb(), under_sanitizer()
                      a service's peak memory, and whether it means anything.

Functions that record TAP checks take the test's t2s.Tap as first argument;
the checks themselves (names, what they assert) stay in the test files.
"""

import atexit
import contextlib
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback

import t2s

PROBLEM_PREFIX = "urn:text2sqld:problem:"


# --------------------------------------------------------------------------- problems

def problem_type(resp):
    """The slug of a problem response's type (what follows PROBLEM_PREFIX;
    the whole type when it lacks the prefix), or None when the body has no
    string type."""
    if isinstance(resp.json, dict) and isinstance(resp.json.get("type"), str):
        t = resp.json["type"]
        return t[len(PROBLEM_PREFIX):] if t.startswith(PROBLEM_PREFIX) else t
    return None


def _media_type(resp):
    return (resp.headers.get("Content-Type") or "").split(";")[0].strip()


def is_problem(resp, status, slug):
    """True when resp has HTTP status `status`, Content-Type
    application/problem+json and type PROBLEM_PREFIX + slug."""
    return (resp.status == status and _media_type(resp) == "application/problem+json" and
            isinstance(resp.json, dict) and resp.json.get("type") == PROBLEM_PREFIX + slug)


def problem_faults(resp, status, slug):
    """What keeps resp from being a complete problem response: a list of
    reasons, empty when there is none. Complete means: HTTP status `status`;
    Content-Type application/problem+json; a JSON object body whose type,
    title and detail are non-empty strings and whose status is that integer;
    type PROBLEM_PREFIX + slug (any type under the prefix when slug is None);
    an X-Request-Id header, equal to the body's request_id when it has one."""
    faults = []
    if resp.status != status:
        faults.append("HTTP status %d, want %d" % (resp.status, status))
    ctype = _media_type(resp)
    if ctype != "application/problem+json":
        faults.append("Content-Type %r" % ctype)
    body = resp.json if isinstance(resp.json, dict) else {}
    if not isinstance(resp.json, dict):
        faults.append("body is not a JSON object")
    for field, typ in (("type", str), ("title", str), ("status", int), ("detail", str)):
        if not isinstance(body.get(field), typ) or body.get(field) in ("",):
            faults.append("field %s missing or not %s" % (field, typ.__name__))
    if body.get("status") != resp.status:
        faults.append("body status %r != HTTP status %d" % (body.get("status"), resp.status))
    typ = body.get("type") or ""
    if not typ.startswith(PROBLEM_PREFIX):
        faults.append("type %r does not start with %s" % (typ, PROBLEM_PREFIX))
    elif slug and typ != PROBLEM_PREFIX + slug:
        faults.append("type %r, want %s%s" % (typ, PROBLEM_PREFIX, slug))
    rid = resp.headers.get("X-Request-Id")
    if not rid:
        faults.append("no X-Request-Id header")
    elif "request_id" in body and body["request_id"] != rid:
        faults.append("body request_id %r != header %r" % (body["request_id"], rid))
    return faults


def check_problem(tap, resp, status, slug, name):
    """One TAP check `name`: resp is a complete problem response with this
    status and type slug (see problem_faults). Returns the check's result."""
    faults = problem_faults(resp, status, slug)
    return tap.ok(not faults, name, diag=lambda: "; ".join(faults) + "\n" + repr(resp))


# --------------------------------------------------------------------------- /execute results

def execute(svc, database, sql, max_rows=None, timeout=60):
    """POST /execute {database, sql[, max_rows]}; the Response, whatever
    its status."""
    body = {"database": database, "sql": sql}
    if max_rows is not None:
        body["max_rows"] = max_rows
    return svc.request("POST", "/execute", json=body, timeout=timeout)


def _norm_value(v):
    """Numbers compare by value (int 2 == float 2.0), floats to 9 significant digits."""
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", float("%.9g" % v))
    return ("s", v)


def result_key(rows, ordered):
    """rows (lists of JSON values) in a form that compares equal for equal
    results: a sorted bag, or a list when ordered; numbers by value."""
    keyed = [repr([_norm_value(v) for v in r]) for r in rows]
    return keyed if ordered else sorted(keyed)


def has_order_by(sql):
    """True when sql contains ORDER BY (so its row order is part of the result)."""
    return re.search(r"\border\s+by\b", sql, re.I) is not None


# --------------------------------------------------------------------------- PostgreSQL

def have_pg():
    """True when the PostgreSQL server of tests/lib/servers.sh is configured
    (T2S_TEST_PG_PORT is set)."""
    return bool(os.environ.get("T2S_TEST_PG_PORT"))


# The setup of a database that only needs the reader to connect (its tables come later).
READER_CONNECT_SQL = "GRANT CONNECT ON DATABASE {DB} TO t2s_reader;"


class PgDatabases:
    """The PostgreSQL databases (and roles) one test creates, as the admin
    `postgres`, for the service to read as the role t2s_reader: create() each
    database, create_role() each extra role, and drop_all() once in the test's
    finally (databases, then roles; a failure to drop a database is a TAP
    diagnostic). Without a PostgreSQL server (have_pg() false) create() and
    create_role() do nothing and create() returns None, so a test whose
    PostgreSQL part is optional writes `url = pg.create(DB)` and `if url: ...`.
    Errors of psql raise t2s.PsqlError."""

    def __init__(self, tap):
        self.tap = tap
        self.names = []
        self.roles = []

    def create(self, name, setup_sql=READER_CONNECT_SQL, options=""):
        """Creates database name afresh (a leftover of that name is dropped
        first), makes sure the login role t2s_reader exists, then runs
        setup_sql (None: nothing) in the new database with every {DB} replaced
        by the quoted name, as in READER_CONNECT_SQL. options follow
        `CREATE DATABASE name` (ENCODING, TEMPLATE...). Returns the database's
        t2s_reader URL (t2s.pg_url), or None without PostgreSQL."""
        if not have_pg():
            return None
        self.names.append(name)
        # Tests run in parallel: losing the race to create t2s_reader is fine.
        t2s.psql("DO $$ BEGIN CREATE ROLE t2s_reader LOGIN; "
                 "EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;")
        self._drop_database(name)
        t2s.psql(("CREATE DATABASE %s %s" % (t2s.qi(name), options)).strip() + ";")
        if setup_sql:
            t2s.psql(setup_sql.replace("{DB}", t2s.qi(name)), name)
        return t2s.pg_url(name)

    def create_role(self, name, options="LOGIN", setup_sql=None):
        """Creates role name afresh (a leftover of that name is dropped first)
        with options (as in `CREATE ROLE name LOGIN SUPERUSER`), then runs
        setup_sql (GRANT pg_read_server_files TO ...) in the database
        postgres. Create the roles before the databases whose setup_sql
        grants to them. Nothing without PostgreSQL."""
        if not have_pg():
            return
        self.roles.append(name)
        self._drop_role(name)
        t2s.psql("CREATE ROLE %s %s;" % (t2s.qi(name), options))
        if setup_sql:
            t2s.psql(setup_sql)

    def drop_all(self):
        for name in reversed(self.names):
            try:
                self._drop_database(name)
            except t2s.PsqlError as e:
                self.tap.diag("could not drop %s: %s" % (name, e))
        for name in reversed(self.roles):
            self._drop_role(name)
        self.names = []
        self.roles = []

    @staticmethod
    def _drop_database(name):
        t2s.psql("DROP DATABASE IF EXISTS %s WITH (FORCE);" % t2s.qi(name))

    @staticmethod
    def _drop_role(name):
        # Best effort: a role still granted something elsewhere stays behind.
        t2s.psql("DO $$ BEGIN DROP ROLE IF EXISTS %s; EXCEPTION WHEN OTHERS THEN NULL; END $$;" % t2s.qi(name))


# --------------------------------------------------------------------------- MariaDB

def have_mariadb():
    """True when the MariaDB server of tests/lib/servers.sh is running
    (T2S_TEST_MARIADB_SOCKET is set)."""
    return bool(os.environ.get("T2S_TEST_MARIADB_SOCKET"))


def mariadb(sql, db=None, timeout=60):
    """Runs sql (one or more statements) as root over the test server's unix
    socket; returns the rows of the last results as lists of strings (NULL as
    None, tab-separated batch output). Raises RuntimeError with the client's
    message on failure."""
    cmd = ["mariadb", "--no-defaults", "--socket=" + os.environ["T2S_TEST_MARIADB_SOCKET"], "-u", "root",
           "--batch", "--skip-column-names", "--raw", "--default-character-set=utf8mb4"] + ([db] if db else [])
    proc = subprocess.run(cmd, input=sql.encode("utf-8"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError("mariadb: %s" % proc.stderr.decode("utf-8", "replace").strip())
    out = proc.stdout.decode("utf-8", "replace")
    return [[None if v == "NULL" else v for v in line.split("\t")] for line in out.splitlines()]


class MariadbSession(t2s.ClientSession):
    """One mariadb client kept open as root (t2s.ClientSession): sql(...)
    runs one or more statements and returns the rows as mariadb() does, or
    raises RuntimeError with the client's message."""

    def __init__(self):
        super().__init__(["mariadb", "--no-defaults", "--socket=" + os.environ["T2S_TEST_MARIADB_SOCKET"], "-u",
                          "root", "--batch", "--skip-column-names", "--raw", "--unbuffered", "--force",
                          "--default-character-set=utf8mb4"])

    def sql(self, sql, timeout=60):
        mark = self._next_mark()
        at = self._errors_at()
        body, _ = self._exchange("%s;\nSELECT '%s';\n" % (sql.rstrip().rstrip(";"), mark), mark, timeout)
        if self._errors_at() != at:
            raise RuntimeError("mariadb: %s" % self._errors_since(at))
        text = body.decode("utf-8", "replace")
        return [[None if v == "NULL" else v for v in line.split("\t")] for line in text.splitlines()]


def mariadb_url(db, user, password=None):
    """mysql:// URL of db on the test server for user (password in the URL when given)."""
    auth = user + (":" + password if password else "")
    return "mysql://%s@%s:%s/%s" % (auth, os.environ.get("T2S_TEST_MARIADB_HOST", "127.0.0.1"),
                                    os.environ["T2S_TEST_MARIADB_PORT"], db)


def mariadb_checksum(db, session=None):
    """A checksum of every table of db (CHECKSUM TABLE, as root; through
    session, a MariadbSession, when given) with the list of tables: equal
    before and after means no data or table changed."""
    run = session.sql if session else mariadb
    tables = [r[0] for r in run("SELECT TABLE_NAME FROM information_schema.TABLES "
                                    "WHERE TABLE_SCHEMA = '%s' ORDER BY TABLE_NAME" % db)]
    if not tables:
        return ""
    rows = run("CHECKSUM TABLE %s EXTENDED" % ", ".join("`%s`.`%s`" % (db, t) for t in tables))
    return ";".join("%s=%s" % (r[0], r[1]) for r in rows)


# --------------------------------------------------------------------------- SQLite, files

# A small concert database (three tables, a bridge table) for tests that need a few joins:
# fixtures.write_sqlite(path, SMALL_CONCERT_SCHEMA, SMALL_CONCERT_ROWS).
# PostgreSQL objects a guard must not let a reader reach (tables victim(k, v) must exist):
# a SECURITY DEFINER function and a procedure that delete, a VOLATILE row hook, and an
# operator, a cast and a domain each backed by a VOLATILE function that takes an advisory lock.
PG_HOSTILE_OBJECTS = """
CREATE FUNCTION evil_definer() RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS
  $$ BEGIN DELETE FROM victim; RETURN 1; END $$;
CREATE PROCEDURE evil_proc() LANGUAGE plpgsql AS $$ BEGIN DELETE FROM victim; END $$;
CREATE FUNCTION row_hook(victim) RETURNS int LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN PERFORM pg_advisory_lock(77); RETURN 1; END $$;
CREATE FUNCTION vol_eq(int, int) RETURNS bool LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN PERFORM pg_advisory_lock(78); RETURN $1 = $2; END $$;
CREATE OPERATOR public.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = vol_eq);
CREATE TYPE mytype AS (v text);
CREATE FUNCTION vol_cast(text) RETURNS mytype LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN PERFORM pg_advisory_lock(79); RETURN ROW($1)::mytype; END $$;
CREATE CAST (text AS mytype) WITH FUNCTION vol_cast(text);
CREATE FUNCTION vol_check(int) RETURNS bool LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN PERFORM pg_advisory_lock(80); RETURN $1 > 0; END $$;
CREATE DOMAIN posint AS int CHECK (vol_check(VALUE));
"""


SMALL_CONCERT_SCHEMA = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, year TEXT);
CREATE TABLE singer_in_concert (concert_id INTEGER REFERENCES concert(concert_id),
                                singer_id INTEGER REFERENCES singer(singer_id),
                                PRIMARY KEY (concert_id, singer_id));
"""
SMALL_CONCERT_ROWS = {
    "singer": [(1, "Joe Sharp", "Netherlands", 52), (2, "Timbaland", "United States", 32),
               (3, "Justin Brown", "France", 29), (4, "Rose White", "France", 41)],
    "concert": [(1, "Auditions", "2014"), (2, "Home Visits", "2015")],
    "singer_in_concert": [(1, 2), (1, 3), (2, 1), (2, 4)],
}


def write_sqlite(path, script="", rows=None):
    """Writes to the SQLite file at path (created when missing) through its
    own writable connection, as an application would: runs script (SQL
    statements), then inserts rows, a dict {table: [row tuples]}, in order,
    and commits. Returns path."""
    con = sqlite3.connect(path, timeout=30)
    try:
        if script:
            con.executescript(script)
        for table, values in (rows or {}).items():
            values = list(values)
            if values:
                con.executemany("INSERT INTO %s VALUES (%s)" % (t2s.qi(table), ", ".join("?" * len(values[0]))),
                                values)
        con.commit()
    finally:
        con.close()
    return path


def scratch_dir(prefix):
    """A new temporary directory; it and everything in it are removed when
    the test process exits, however main() ends."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


# --------------------------------------------------------------------------- service lifecycle

def stop_ok(tap, svc, name):
    """Stops svc with SIGTERM and records the TAP check `name`: it exited 0
    (under AddressSanitizer that also means it leaked nothing). Does not
    close svc. Returns the check's result."""
    code = svc.stop()
    return tap.ok(code == 0, name, diag=lambda: "exit %r; log:\n%s" % (code, svc.log_tail()))


@contextlib.contextmanager
def serving(tap, config, exit_check, env=None, timeout=20):
    """A t2s.Service for config, for the length of a with block:

        with fixtures.serving(tap, cfg, "service_exits_0_on_sigterm") as svc:
            ...

    On entry the service is started and healthy (within timeout seconds,
    else RuntimeError). When the block ends normally it is stopped with
    SIGTERM and stop_ok() records exit_check. However the block ends, the
    service is then closed (killed if still running, temp files removed);
    an exception leaves the block without the exit check."""
    svc = t2s.Service(config, env=env)
    try:
        svc.start(timeout=timeout)
        yield svc
        stop_ok(tap, svc, exit_check)
    finally:
        svc.close()


def run_with_binary(tap, skip_name, *checks, reason="T2S_BIN is not set"):
    """The main() of a test that needs the text2sqld binary: calls each of
    checks in order or, when $T2S_BIN is unset, records instead one skip
    named skip_name. Returns tap.done(), the exit status."""
    if not t2s.server_binary():
        tap.skip(skip_name, reason)
        return tap.done()
    for check in checks:
        check()
    return tap.done()


def run_guarded(tap, skip_name, *checks):
    """run_with_binary, where a check that raises records test_ran_without_exception
    (report_exception) and the next check still runs."""
    def guarded(check):
        def call():
            try:
                check()
            except Exception:
                report_exception(tap)
        return call
    return run_with_binary(tap, skip_name, *[guarded(c) for c in checks])


def node_results(tap, proc, script):
    """The checks a node script printed, one JSON object per line of proc.stdout
    ({"check", "ok", "diag"} or {"skip"}); other lines become diagnostics."""
    results = []
    for line in proc.stdout.splitlines():
        try:
            results.append(json.loads(line))
        except ValueError:
            tap.diag("%s: %s" % (script, line))
    return results


def report_exception(tap, *services):
    """For the `except Exception:` around a whole test: records the failed
    check test_ran_without_exception with the traceback, then the log tail
    of each service given (None entries are ignored) as diagnostics."""
    tap.ok(False, "test_ran_without_exception", diag=traceback.format_exc())
    for svc in services:
        if svc is not None:
            tap.diag("service log tail (%s, alive: %s):\n%s" % (svc.config_path, svc.alive(), svc.log_tail(20)))


# --------------------------------------------------------------------------- slow requests

def calibrate_count(svc, database, sql_for, target_s):
    """How large n must be for sql_for(n), a statement whose work grows
    linearly with n (a recursive CTE counting to n), to take about target_s
    seconds on database in this service: timed through /execute at n =
    200000 (the faster of two runs, so a busy machine does not shorten the
    slow request) and scaled, never below 200000; 3000000 when no run
    succeeds. Measured, so it suits sanitizer builds too."""
    n = 200000
    best = None
    for _ in range(2):
        r = execute(svc, database, sql_for(n), timeout=120)
        ms = (r.json or {}).get("elapsed_ms") or 0
        if r.status == 200 and ms > 0:
            best = ms if best is None else min(best, ms)
    if best is None:
        return 3000000
    return max(n, int(n * target_s * 1000.0 / best))


def wait_until(pred, timeout=20):
    """Polls pred until it returns something true (an event, not a time) or
    timeout seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    v = pred()
    while not v and time.monotonic() < deadline:
        time.sleep(0.02)
        v = pred()
    return v


def access_line(svc, request_id, timeout=5):
    """The access-log line (msg "request") of request_id in svc's log, or
    None: it is written as the request completes, just after its answer was
    sent, so it is polled for up to timeout seconds."""
    def find():
        for text in svc.log_text().splitlines():
            try:
                obj = json.loads(text)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("msg") == "request" and obj.get("request_id") == request_id:
                return obj
        return None
    return wait_until(find, timeout) if request_id else None


def wait_in_flight(svc, at_least, timeout=20, alive=None):
    """Polls GET /metrics until text2sqld_http_requests_in_flight >= at_least
    (the scrape counts itself: one request in flight makes 2). Gives up
    after timeout seconds, when a scrape fails, or as soon as alive() (when
    given) is false. Returns whether the gauge got there."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (alive is None or alive()):
        try:
            m = svc.request("GET", "/metrics", timeout=10).text
        except OSError:
            return False
        mm = re.search(r"^text2sqld_http_requests_in_flight(?:\{\})? (\S+)", m, re.M)
        if mm and float(mm.group(1)) >= at_least:
            return True
        time.sleep(0.02)
    return False


# --------------------------------------------------------------------------- model server

class ModelStub:
    """tests/stub/model_stub.py in a child process on a free port; port, and
    base_url (http://127.0.0.1:PORT/v1) for a models.* config entry. args
    are the stub's further options (--api-key K, --fixture FILE...). Raises
    RuntimeError when the stub does not report LISTENING. kill() stops it
    at once (a model server that vanishes), close() with SIGTERM first;
    either may be called more than once."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, os.path.join(t2s.SOURCE_ROOT, "tests", "stub", "model_stub.py"),
                                      "--port", "0"] + list(args),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode("utf-8", "replace").strip()
        if not line.startswith("LISTENING "):
            self.kill()
            raise RuntimeError("model stub did not start: %r" % line)
        self.port = int(line.split()[1])
        self.base_url = "http://127.0.0.1:%d/v1" % self.port

    def call(self, method, path, obj=None):
        """A control request to the stub (/_stub/...); returns its JSON."""
        r = t2s.http_request("127.0.0.1", self.port, method, path, json_body=obj, timeout=10)
        if r.status != 200:
            raise RuntimeError("stub %s %s: %d %s" % (method, path, r.status, r.text[:200]))
        return r.json

    def rules(self, rules, default_content=None):
        """Forgets recorded requests and installs rules (and the default chat answer)."""
        self.call("POST", "/_stub/reset", {})
        fixture = {"rules": rules}
        if default_content is not None:
            fixture["default_content"] = default_content
        self.call("POST", "/_stub/rules", fixture)

    def requests(self, path="/v1/chat/completions"):
        """The requests the stub received on path (all when None), in order."""
        reqs = self.call("GET", "/_stub/requests")["requests"]
        return [q for q in reqs if path is None or q["path"] == path]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=20)
        self.proc.stdout.close()

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.kill()


class RedisServer:
    """redis-server of the test's own (never the suite's shared one) on port,
    in the foreground (so that kill() is a crash, not a shutdown), its files
    under tmp. command() sends one command as RESP (any bytes in its
    arguments) and returns the decoded reply: str for status lines, int,
    bytes or None for bulk strings, lists for arrays; errors raise."""

    def __init__(self, tmp, port):
        self.port = port
        self.dir = os.path.join(tmp, "redis-%d" % time.monotonic_ns())
        os.makedirs(self.dir)
        self.proc = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", self.dir,
                                      "--save", "", "--appendonly", "no"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if self.command("PING") == "PONG":
                    return
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise RuntimeError("redis-server did not start on port %d" % port)

    def command(self, *args):
        parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        msg = b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(msg)
            return self._reply(s.makefile("rb"))

    def _reply(self, f):
        line = f.readline().rstrip(b"\r\n")
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError("redis: " + rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else f.read(n + 2)[:n]
        if kind == b"*":
            return [self._reply(f) for _ in range(max(int(rest), 0))]
        raise RuntimeError("redis: unexpected reply %r" % line)

    def dbsize(self):
        return self.command("DBSIZE")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=20)


# --------------------------------------------------------------------------- memory

def peak_rss_kb(pid):
    """Peak resident memory (VmHWM) of process pid in kB, None when
    /proc does not report it. Raises OSError when the process is gone."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


def binary_is_sanitized(path=None):
    """True when the text2sqld binary at path (default: the one under test) is
    linked with AddressSanitizer or ThreadSanitizer, which make it several
    times slower: tests that wait on timing scale their windows by this."""
    path = path or t2s.server_binary()
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (OSError, TypeError):
        return False
    return b"libasan.so" in data or b"libtsan.so" in data


def under_sanitizer(pid):
    """True when process pid runs with AddressSanitizer or ThreadSanitizer
    (their shadow memory and allocators make resident-memory figures
    meaningless)."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read()
    except OSError:
        return False
    return "libasan" in maps or "libtsan" in maps
