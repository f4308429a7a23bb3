#!/usr/bin/env python3
"""test_db_secrets.py - a database's password from an environment variable
(`password_env`) or a file (`password_file`, e.g. a mounted Kubernetes
Secret) instead of inside its URL (TAP).

Config checks (--check-config, exit 2 naming the key): a variable that is not
set, an empty or missing file, both keys at once, a URL that holds a password
as well, a SQLite database given a password.

On PostgreSQL: the test server trusts loopback, so for one role of its own
the test puts a scram-sha-256 line first in the server's pg_hba.conf (removed
afterwards; skipped when the file cannot be written).  That role then
connects only with its password: without one the database is unavailable;
with password_env, and with password_file (its trailing newline dropped), the
database is ready and /execute answers; a wrong password in the file leaves
it unavailable, and no password appears in /readyz or the service's log.

API keys from a file too (`auth.api_keys_file`, the Kubernetes Secret of
deploy/kubernetes/): its keys turn auth on as auth.api_keys would; a file
that is missing or not JSON, or given with auth.api_keys, is refused.
"""

import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-db-secrets-")
ROLE = "t2s_pw_reader_%d" % os.getpid()
PASSWORD = "s3cret-%d-Pa55" % os.getpid()
DB_NAME = "t2s_secrets_%d" % os.getpid()
ENV_NAME = "T2S_TEST_DB_PASSWORD"
HBA_MARK = "# text2sqld test_db_secrets %d" % os.getpid()


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def pg_entry(**extra):
    entry = {"name": "shop", "url": "postgresql://%s@127.0.0.1:5432/shop" % ROLE}
    entry.update(extra)
    return {"databases": [entry], "log": {"level": "warn"}}


def rejected(config, name, must_contain, env=None):
    code, out = t2s.run_config_only(config, extra_args=["--check-config"], env=env, timeout=20)
    tap.ok(code == 2 and must_contain in out, "check_config_rejects_" + name,
           diag="exit %r, output:\n%s\n(expected %r in it)" % (code, out, must_contain))


def test_config_errors():
    rejected(pg_entry(password_env=ENV_NAME), "unset_password_env",
             "databases[0].password_env: names the environment variable %s, which is not set" % ENV_NAME,
             env={ENV_NAME: None})
    rejected(pg_entry(password_file=os.path.join(TMP, "missing")), "missing_password_file",
             "databases[0].password_file: cannot read")
    rejected(pg_entry(password_file=write("empty", "\n")), "empty_password_file",
             "databases[0].password_file: names an empty file")
    rejected(pg_entry(password_env=ENV_NAME, password_file=write("pw", "x")), "password_env_and_file",
             "databases[0].password_file: give password_env or password_file, not both", env={ENV_NAME: "x"})
    cfg = pg_entry(password_env=ENV_NAME)
    cfg["databases"][0]["url"] = "postgresql://%s:inline@127.0.0.1:5432/shop" % ROLE
    rejected(cfg, "password_in_url_and_env", "databases[0].password_env: the url holds a password too",
             env={ENV_NAME: "x"})
    cfg = pg_entry(password_file=write("pw2", "x"))
    cfg["databases"][0]["url"] = "postgresql://127.0.0.1:5432/shop?user=%s&password=inline" % ROLE
    rejected(cfg, "password_parameter_and_file", "databases[0].password_file: the url holds a password too")
    rejected({"databases": [{"name": "lite", "url": "sqlite://" + os.path.join(TMP, "x.sqlite"),
                             "password_env": ENV_NAME}]}, "password_for_sqlite",
             "databases[0].password_env: applies to PostgreSQL and MySQL databases only", env={ENV_NAME: "x"})
    code, out = t2s.run_config_only(pg_entry(password_file=write("pw3", PASSWORD + "\n")), extra_args=["--check-config"])
    tap.ok(code == 0 and PASSWORD not in out, "check_config_accepts_password_file_and_never_prints_it",
           diag="exit %r: %s" % (code, out))


class PasswordAuth:
    """scram-sha-256 for ROLE, first in the test server's pg_hba.conf, until close()."""

    def __init__(self):
        self.path = t2s.psql("SHOW hba_file;")[0][0]
        with open(self.path, encoding="utf-8") as f:
            self.original = f.read()
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("%s\nhost all %s 127.0.0.1/32 scram-sha-256\n%s" % (HBA_MARK, ROLE, self.original))
        t2s.psql("SELECT pg_reload_conf();")

    def close(self):
        with open(self.path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[0] == HBA_MARK:
            lines = lines[2:]
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        t2s.psql("SELECT pg_reload_conf();")


def serve(entry, env, name):
    """(database ready?, /execute status, /readyz text, the service's log) for one database entry."""
    cfg = {"databases": [entry], "log": {"level": "info", "access": False}}
    with fixtures.serving(tap, cfg, name + "_service_exits_0", env=env) as svc:
        ready = svc.request("GET", "/readyz")
        db = ((ready.json or {}).get("checks", {}).get("databases", {}) or {}).get("shop", {})
        r = svc.request("POST", "/execute", json={"database": "shop", "sql": "SELECT count(*) FROM item"})
        ok = r.status == 200 and r.json.get("rows") == [[2]]
        return ok, r.status, ready.text, db, svc


def test_postgres():
    if not fixtures.have_pg():
        tap.skip("postgres_password_checks", "no PostgreSQL server (T2S_TEST_PG_PORT unset)")
        return
    pg = fixtures.PgDatabases(tap)
    auth = None
    try:
        pg.create_role(ROLE, "LOGIN PASSWORD '%s'" % PASSWORD)
        pg.create(DB_NAME, "GRANT CONNECT ON DATABASE {DB} TO %s; CREATE TABLE item (id int); "
                           "INSERT INTO item VALUES (1), (2); GRANT SELECT ON item TO %s;" % (ROLE, ROLE))
        try:
            auth = PasswordAuth()
        except (OSError, IndexError, t2s.PsqlError) as e:
            tap.skip("postgres_password_checks", "cannot turn on password authentication: %s" % e)
            return
        url = "postgresql://%s@%s:%s/%s" % (ROLE, t2s.pg_host(), t2s.pg_port(), DB_NAME)
        no_pw = {ENV_NAME: None, "PGPASSWORD": None, "PGPASSFILE": os.path.join(TMP, "no-pgpass")}
        ok, status, _, _, _ = serve({"name": "shop", "url": url}, no_pw, "no_password")
        tap.ok(not ok and status == 503, "without_a_password_the_role_cannot_connect", diag="status %d" % status)
        ok, status, ready, _, _ = serve({"name": "shop", "url": url, "password_env": ENV_NAME},
                                        dict(no_pw, **{ENV_NAME: PASSWORD}), "password_env")
        tap.ok(ok, "password_env_connects_and_executes", diag="status %d %s" % (status, ready[:500]))
        tap.ok(PASSWORD not in ready, "readyz_never_shows_the_password")
        path = write("db-password", PASSWORD + "\n")
        ok, status, ready, _, _ = serve({"name": "shop", "url": url, "password_file": path}, no_pw, "password_file")
        tap.ok(ok, "password_file_with_trailing_newline_connects_and_executes", diag="status %d %s" % (status, ready[:500]))
        wrong = write("wrong-password", "not-the-password")
        ok, status, ready, db, svc = serve({"name": "shop", "url": url, "password_file": wrong}, no_pw, "wrong_password")
        tap.ok(not ok and status == 503 and db.get("status") not in (None, "ok"),
               "wrong_password_leaves_the_database_unavailable", diag="status %d %r" % (status, db))
        log = svc.log_text()
        tap.ok("not-the-password" not in ready and "not-the-password" not in log,
               "wrong_password_never_shown_in_readyz_or_log")
    finally:
        if auth:
            auth.close()
        pg.drop_all()


def test_api_keys_file():
    key = "file-key-%d-0123456789" % os.getpid()
    keys = [{"name": "app", "key_sha256": hashlib.sha256(key.encode()).hexdigest(), "databases": ["*"]}]
    path = write("api-keys.json", json.dumps(keys))
    lite = {"name": "lite", "url": "sqlite://" + fixtures.write_sqlite(os.path.join(TMP, "lite.sqlite"),
                                                                       "CREATE TABLE t (x int);")}
    with fixtures.serving(tap, {"databases": [lite], "auth": {"api_keys_file": path}}, "api_keys_file_service_exits_0") as svc:
        anon = svc.request("GET", "/v1/databases")
        keyed = svc.request("GET", "/v1/databases", headers={"Authorization": "Bearer " + key})
        tap.ok(anon.status == 401 and keyed.status == 200, "api_keys_file_turns_auth_on_with_its_keys",
               diag="%d %d" % (anon.status, keyed.status))
    rejected({"databases": [lite], "auth": {"api_keys_file": path, "api_keys": keys}}, "api_keys_and_api_keys_file",
             "auth.api_keys_file: give auth.api_keys or auth.api_keys_file, not both")
    rejected({"databases": [lite], "auth": {"api_keys_file": os.path.join(TMP, "none.json")}}, "missing_api_keys_file",
             "auth.api_keys_file: cannot read")
    rejected({"databases": [lite], "auth": {"api_keys_file": write("bad.json", "[{")}}, "api_keys_file_not_json",
             "auth.api_keys_file: cannot read")


if __name__ == "__main__":
    sys.exit(fixtures.run_guarded(tap, "db_secrets_test", test_api_keys_file, test_config_errors, test_postgres))
