#!/usr/bin/env python3
"""test_config.py - configuration loading of the real text2sqld binary.

Covers: --check-config on a valid file; every kind of invalid config (unknown
top-level and nested keys, wrong types, out-of-range values, missing or bad
databases, unsupported URL schemes, duplicate names, incomplete models, an
api_key_env naming an unset variable, bad auth entries, malformed JSON, a
missing file, an unknown CLI flag) exits 2 with the offending key path or the
reason on stderr and never starts serving; the TEXT2SQLD_* environment
overrides (listen port, Redis URL); and relative sqlite:// paths resolving
against the config file's directory. Uses small SQLite files written here;
the Redis check uses T2S_TEST_REDIS_URL only as a configured value (it
verifies the override removes it), so nothing here needs external servers.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-config-test-")


def make_sqlite(path):
    """A one-table SQLite file with three rows."""
    return fixtures.write_sqlite(path, "CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
                                 {"singer": [(1, "Ann"), (2, "Bo"), (3, "Cy")]})


DB = make_sqlite(os.path.join(TMP, "fixture.sqlite"))
DB_URL = "sqlite://" + DB


def base_config(**extra):
    cfg = {"listen": {"host": "127.0.0.1", "port": t2s.free_port()},
           "databases": [{"name": "fixture", "url": DB_URL}]}
    cfg.update(extra)
    return cfg


def port_refuses(port):
    """True when nothing accepts TCP connections on 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return False
    except OSError:
        return True


def closed_port():
    """A port that nothing listens on (bound then released)."""
    return t2s.free_port()


def expect_rejected(config, name, must_contain, env=None, extra_args=None):
    """The config is rejected with exit 2 and must_contain on stderr, both
    with --check-config and when asked to serve (which must not listen)."""
    code, out = t2s.run_config_only(config, extra_args=["--check-config"] + list(extra_args or []),
                                    env=env, timeout=20)
    tap.ok(code == 2 and must_contain in out, "check_config_rejects_" + name,
           diag="exit %r, output:\n%s\n(expected %r in it)" % (code, out, must_contain))
    port = None
    if isinstance(config, dict):
        port = (config.get("listen") or {}).get("port") if isinstance(config.get("listen"), dict) else None
    code, out = t2s.run_config_only(config, extra_args=extra_args, env=env, timeout=20)
    serving = '"listening"' in out or (isinstance(port, int) and 0 < port < 65536 and not port_refuses(port))
    tap.ok(code == 2 and must_contain in out and not serving, "serve_refuses_to_start_" + name,
           diag="exit %r, output:\n%s" % (code, out))


def test_valid():
    env_name = "T2S_TEST_CFG_KEY_%d" % os.getpid()
    cfg = base_config(
        limits={"max_connections": 10, "max_connections_per_ip": 5, "connection_timeout_s": 30,
                "max_body_bytes": 65536, "max_header_bytes": 8192, "drain_timeout_ms": 1000},
        execution={"timeout_ms": 1000, "lock_timeout_ms": 500, "default_max_rows": 10, "max_rows": 100,
                   "max_sql_bytes": 4096, "max_result_bytes": 65536},
        catalog={"pool_size": 2, "pool_wait_ms": 1000, "connect_timeout_s": 2, "sample_values": 3,
                 "sample_rows": 100, "sample_value_max_len": 32, "introspect_timeout_ms": 5000,
                 "row_count_scan_limit": 1000},
        redis={"url": "redis://127.0.0.1:%d/0" % closed_port(), "timeout_ms": 200},
        models={"generate": {"base_url": "http://127.0.0.1:9/v1", "model": "gen", "api_key_env": env_name,
                             "timeout_ms": 1000, "connect_timeout_ms": 500, "retries": 1,
                             "temperature": 0.2, "max_tokens": 256},
                "embed": {"base_url": "http://127.0.0.1:9/v1", "model": "emb"}},
        auth={"api_keys": [{"name": "app", "key_sha256": "ab" * 32, "databases": ["fixture"]},
                           {"name": "admin", "key_sha256": "CD" * 32, "databases": ["*"]}]},
        log={"level": "warn", "access": False})
    code, out = t2s.run_config_only(cfg, extra_args=["--check-config"], env={env_name: "secret"}, timeout=20)
    tap.ok(code == 0, "check_config_accepts_full_valid_config_with_exit_0",
           diag="exit %r, output:\n%s" % (code, out))
    tap.ok('"listening"' not in out, "check_config_does_not_serve", diag=out)
    code, out = t2s.run_config_only(base_config(), extra_args=["--check-config"], timeout=20)
    tap.ok(code == 0, "check_config_accepts_minimal_config", diag="exit %r, output:\n%s" % (code, out))


def test_rejections():
    unset_env = "T2S_TEST_UNSET_%d" % os.getpid()
    env_unset = {unset_env: None}
    db = {"name": "fixture", "url": DB_URL}

    expect_rejected(base_config(databse=[]), "unknown_top_level_key", "databse")
    expect_rejected(base_config(limits={"max_body_byts": 2048}), "unknown_nested_key",
                    "limits.max_body_byts")
    cfg = base_config()
    cfg["listen"]["port"] = "8080"
    expect_rejected(cfg, "port_given_as_string", "listen.port")
    cfg = base_config()
    cfg["listen"]["port"] = 70000
    expect_rejected(cfg, "port_out_of_range", "listen.port")
    expect_rejected(base_config(limits={"max_body_bytes": 10}), "max_body_bytes_below_minimum",
                    "limits.max_body_bytes")
    expect_rejected(base_config(execution={"timeout_ms": "fast"}), "timeout_given_as_string",
                    "execution.timeout_ms")
    expect_rejected(base_config(log={"access": "yes"}), "log_access_not_boolean", "log.access")
    cfg = base_config()
    del cfg["databases"]
    expect_rejected(cfg, "missing_databases", "databases")
    expect_rejected(base_config(databases={"name": "x"}), "databases_not_an_array", "databases")
    expect_rejected(base_config(databases=[{"name": "fixture"}]), "database_without_url", "databases[0].url")
    expect_rejected(base_config(databases=[{"url": DB_URL}]), "database_without_name", "databases[0].name")
    expect_rejected(base_config(databases=[db, {"name": "other", "url": "oracle://u@h/db"}]),
                    "unsupported_url_scheme", "databases[1].url")
    expect_rejected(base_config(databases=[db, {"name": "fixture", "url": DB_URL}]),
                    "duplicate_database_names", "databases[1].name")
    expect_rejected(base_config(databases=[{"name": "fix ture", "url": DB_URL}]),
                    "database_name_with_space", "databases[0].name")
    expect_rejected(base_config(databases=[dict(db, color="red")]), "unknown_key_in_database_entry",
                    "databases[0].color")
    pg_db = {"name": "pg", "url": "postgresql://reader@127.0.0.1:9/shop"}
    for schema, name in (("pg_catalog", "pg_catalog"), ("information_schema", "information_schema"),
                         ("pg_toast", "pg_toast")):
        expect_rejected(base_config(databases=[db, dict(pg_db, schemas=["public", schema])]),
                        "system_schema_%s_in_database_schemas" % name, "databases[1].schemas[1]: is a system schema")
    expect_rejected(base_config(models={"generate": {"model": "m"}}), "model_without_base_url",
                    "models.generate.base_url")
    expect_rejected(base_config(models={"link": {"base_url": "http://127.0.0.1:9/v1"}}),
                    "model_without_model_name", "models.link.model")
    expect_rejected(base_config(models={"rerank": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}),
                    "unknown_model_stage", "models.rerank")
    expect_rejected(base_config(models={"generate": {"base_url": "ftp://h/v1", "model": "m"}}),
                    "model_base_url_not_http", "models.generate.base_url")
    expect_rejected(base_config(models={"generate": {"base_url": "http://127.0.0.1:9/v1", "model": "m",
                                                     "api_key_env": unset_env}}),
                    "api_key_env_naming_unset_variable", "models.generate.api_key_env", env=env_unset)
    expect_rejected(base_config(cache={"secret_env": unset_env}), "cache_secret_env_naming_unset_variable",
                    "cache.secret_env", env=env_unset)
    expect_rejected(base_config(cache={"secret_env": "T2S_TEST_SHORT_SECRET"}), "cache_secret_shorter_than_32",
                    "cache.secret_env", env={"T2S_TEST_SHORT_SECRET": "x" * 31})
    gen = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    expect_rejected(base_config(models={"generate": gen, "generate_candidates": [gen, {"model": "m"}]}),
                    "generate_candidate_without_base_url", "models.generate_candidates[1].base_url")
    expect_rejected(base_config(models={"generate": gen, "generate_candidates": []}),
                    "generate_candidates_empty", "models.generate_candidates")
    expect_rejected(base_config(models={"generate_candidates": [gen]}),
                    "generate_candidates_without_generate_model", "models.generate_candidates")
    expect_rejected(base_config(auth={"api_keys": [{"name": "a", "key_sha256": "zz" * 32,
                                                    "databases": ["fixture"]}]}),
                    "auth_key_sha256_not_hex", "auth.api_keys[0].key_sha256")
    expect_rejected(base_config(auth={"api_keys": [{"name": "a", "key_sha256": "ab" * 31,
                                                    "databases": ["fixture"]}]}),
                    "auth_key_sha256_too_short", "auth.api_keys[0].key_sha256")
    expect_rejected(base_config(auth={"api_keys": [{"name": "a", "key_sha256": "ab" * 32,
                                                    "databases": ["nowhere"]}]}),
                    "auth_naming_unconfigured_database", "auth.api_keys[0].databases[0]")
    key = {"name": "a", "key_sha256": "ab" * 32, "databases": ["fixture"]}
    expect_rejected(base_config(auth={"api_keys": [key], "public_metrics": "some"}), "auth_public_metrics_unknown",
                    "auth.public_metrics")
    expect_rejected(base_config(auth={"api_keys": [key], "metrics_key_sha256": "ab"}),
                    "auth_metrics_key_sha256_not_a_digest", "auth.metrics_key_sha256")
    expect_rejected(base_config(redis={"url": "http://127.0.0.1:6379"}), "redis_url_bad_scheme", "redis.url")
    # What used to pass --check-config and fail only at start (issue 10, item 7).
    expect_rejected(base_config(redis={"url": "redis://:abc@"}), "redis_url_without_host", "redis.url")
    cfg = base_config()
    cfg["listen"]["host"] = "not a host"
    expect_rejected(cfg, "listen_host_that_does_not_resolve", "listen.host")
    expect_rejected(base_config(link={"min_k": 10000}), "link_min_k_above_the_default_top_k", "link.min_k")
    expect_rejected(base_config(generate={"timeout_ms": 3600000}), "generate_timeout_above_the_default_limit",
                    "generate.timeout_ms")
    text = json.dumps(base_config())[:-1] + ', "listen": '
    expect_rejected(text, "malformed_json", "not valid JSON")
    expect_rejected('{"databases": [{"name": "a", "url": "%s"}], "databases": []}' % DB_URL,
                    "duplicate_json_keys", "duplicate")
    expect_rejected("[1, 2]", "top_level_not_object", "must be an object")


def test_cli_and_files():
    binary = t2s.server_binary()
    missing = os.path.join(TMP, "does-not-exist.json")
    proc = subprocess.run([binary, "--config", missing, "--check-config"], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20)
    err = proc.stderr.decode("utf-8", "replace")
    tap.ok(proc.returncode == 2 and "does-not-exist.json" in err, "missing_config_file_exits_2_naming_it",
           diag="exit %r, stderr:\n%s" % (proc.returncode, err))
    proc = subprocess.run([binary, "--config", missing], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20)
    tap.eq(proc.returncode, 2, "missing_config_file_exits_2_when_asked_to_serve")

    code, out = t2s.run_config_only(base_config(), extra_args=["--no-such-flag"], timeout=20)
    tap.ok(code == 2 and "--no-such-flag" in out and '"listening"' not in out,
           "unknown_cli_flag_exits_2_naming_it", diag="exit %r, output:\n%s" % (code, out))
    proc = subprocess.run([binary], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=20,
                          env=t2s._merged_env({"TEXT2SQLD_CONFIG": None}))
    tap.eq(proc.returncode, 2, "no_config_argument_exits_2")
    proc = subprocess.run([binary, "--config"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=20,
                          env=t2s._merged_env({"TEXT2SQLD_CONFIG": None}))
    tap.eq(proc.returncode, 2, "config_flag_without_value_exits_2")


def test_env_overrides():
    # TEXT2SQLD_LISTEN_PORT moves the listening port away from the file's port.
    file_port = t2s.free_port()
    env_port = t2s.free_port()
    while env_port == file_port:
        env_port = t2s.free_port()
    cfg = base_config()
    cfg["listen"]["port"] = file_port
    svc = t2s.Service(cfg, env={"TEXT2SQLD_LISTEN_PORT": str(env_port)})
    svc.port = env_port  # where the service must answer
    try:
        svc.start()
        r = svc.request("GET", "/healthz")
        tap.eq(r.status, 200, "env_listen_port_service_answers_on_env_port")
        tap.ok(port_refuses(file_port), "env_listen_port_file_port_not_used")
    except RuntimeError as e:
        tap.ok(False, "env_listen_port_service_answers_on_env_port", diag=str(e))
        tap.skip("env_listen_port_file_port_not_used", "service did not start")
    finally:
        code = svc.stop()
        svc.close()
    tap.eq(code, 0, "env_listen_port_service_exits_0_on_sigterm")

    code, out = t2s.run_config_only(base_config(), env={"TEXT2SQLD_LISTEN_PORT": "abc"}, timeout=20)
    tap.ok(code == 2 and "TEXT2SQLD_LISTEN_PORT" in out and '"listening"' not in out,
           "env_listen_port_not_a_number_exits_2", diag="exit %r, output:\n%s" % (code, out))
    code, out = t2s.run_config_only(base_config(), env={"TEXT2SQLD_LISTEN_PORT": "99999"}, timeout=20)
    tap.ok(code == 2 and "TEXT2SQLD_LISTEN_PORT" in out, "env_listen_port_out_of_range_exits_2",
           diag="exit %r, output:\n%s" % (code, out))

    # Redis configured in the file at a closed port, disabled by the empty override.
    dead_redis = "redis://127.0.0.1:%d/0" % closed_port()
    cfg = base_config(redis={"url": dead_redis, "timeout_ms": 300})
    with fixtures.serving(tap, cfg, "env_empty_redis_url_service_exits_0", env={"TEXT2SQLD_REDIS_URL": ""}) as svc:
        r = svc.request("GET", "/readyz")
        checks = (r.json or {}).get("checks", {})
        tap.ok(r.status == 200 and "redis" not in checks and (r.json or {}).get("status") == "ready",
               "env_empty_redis_url_disables_redis_check", diag=repr(r))

    # No redis in the file; the override adds one at a closed port: reported down.
    with fixtures.serving(tap, base_config(), "env_redis_url_service_exits_0",
                          env={"TEXT2SQLD_REDIS_URL": dead_redis}) as svc:
        r = svc.request("GET", "/readyz")
        body = r.json or {}
        redis = body.get("checks", {}).get("redis", {})
        tap.ok(r.status == 200 and body.get("status") == "degraded" and redis.get("status") == "down",
               "env_redis_url_at_closed_port_reports_redis_down_and_degraded", diag=repr(r))

    code, out = t2s.run_config_only(base_config(), env={"TEXT2SQLD_REDIS_URL": "http://x"}, timeout=20)
    tap.ok(code == 2 and "TEXT2SQLD_REDIS_URL" in out, "env_redis_url_bad_scheme_exits_2",
           diag="exit %r, output:\n%s" % (code, out))


def test_relative_sqlite_path():
    name = "rel_%d.sqlite" % os.getpid()
    cfg = base_config(databases=[{"name": "rel", "url": "sqlite://" + name}])
    svc = t2s.Service(cfg)
    make_sqlite(os.path.join(svc.dir, name))  # next to the config file
    cwd = os.getcwd()
    elsewhere = tempfile.mkdtemp(prefix="t2s-config-cwd-")
    os.chdir(elsewhere)  # the file must not be looked up relative to the working directory
    try:
        svc.start()
        r = svc.request("POST", "/execute", json={"database": "rel", "sql": "SELECT name FROM singer ORDER BY id"})
        tap.ok(r.status == 200 and (r.json or {}).get("rows") == [["Ann"], ["Bo"], ["Cy"]],
               "relative_sqlite_path_resolves_next_to_config_file", diag=repr(r))
        r = svc.request("GET", "/readyz")
        tap.ok(r.status == 200 and (r.json or {}).get("checks", {}).get("databases", {})
               .get("rel", {}).get("status") == "up", "relative_sqlite_database_reported_up", diag=repr(r))
        tap.ok(not os.path.exists(os.path.join(elsewhere, name)),
               "relative_sqlite_path_creates_nothing_in_working_directory")
    except RuntimeError as e:
        tap.ok(False, "relative_sqlite_path_resolves_next_to_config_file", diag=str(e))
    finally:
        code = svc.stop()
        svc.close()
        os.chdir(cwd)
        shutil.rmtree(elsewhere, ignore_errors=True)
    tap.eq(code, 0, "relative_sqlite_service_exits_0")


def test_wordnet():
    """link.wordnet (on by default): a WordNet directory without the database
    files stops the start with a message naming the Debian package; with
    link.wordnet false the same directory is never read and the service serves."""
    empty = tempfile.mkdtemp(prefix="t2s-no-wordnet-")
    try:
        cfg = base_config(link={"wordnet_dir": empty})
        code, out = t2s.run_config_only(cfg, timeout=20)
        tap.ok(code not in (0, None) and "wordnet-base" in out and '"listening"' not in out,
               "missing_wordnet_fails_start_naming_the_package", diag="exit %r, output:\n%s" % (code, out))
        code, out = t2s.run_config_only(base_config(link={"wordnet": "yes"}), extra_args=["--check-config"])
        tap.ok(code == 2 and "link.wordnet" in out, "check_config_rejects_link_wordnet_not_boolean",
               diag="exit %r, output:\n%s" % (code, out))
        svc = t2s.Service(base_config(link={"wordnet": False, "wordnet_dir": empty}))
        try:
            svc.start()
            r = svc.request("POST", "/link", json={"database": "fixture", "question": "names of singers"})
            tap.ok(r.status == 200 and any(t.get("name") == "singer" for t in (r.json or {}).get("tables", [])),
                   "link_wordnet_false_serves_without_wordnet", diag=repr(r))
        except RuntimeError as e:
            tap.ok(False, "link_wordnet_false_serves_without_wordnet", diag=str(e))
        finally:
            svc.stop()
            svc.close()
    finally:
        shutil.rmtree(empty, ignore_errors=True)


def test_port_sharing():
    """A second instance on a port in use is refused, unless both ask for sharing (listen.reuse_port)."""
    first = t2s.Service(base_config())
    try:
        first.start()
        code, out = t2s.run_config_only(base_config(listen={"host": "127.0.0.1", "port": first.port}), timeout=20)
        tap.ok(code not in (0, None) and "address in use" in out and '"listening"' not in out,
               "second_instance_on_a_port_in_use_is_refused_with_address_in_use",
               diag="exit %r, output:\n%s" % (code, out))
        tap.ok(first.request("GET", "/healthz").status == 200, "first_instance_still_serves_after_the_refusal")
    finally:
        first.stop()
        first.close()
    shared = {"host": "127.0.0.1", "port": t2s.free_port(), "reuse_port": True}
    a, b = t2s.Service(base_config(listen=dict(shared))), t2s.Service(base_config(listen=dict(shared)))
    try:
        a.start()
        b.start()
        tap.ok(a.alive() and b.alive(), "two_instances_share_a_port_when_both_set_listen_reuse_port")
    except RuntimeError as e:
        tap.ok(False, "two_instances_share_a_port_when_both_set_listen_reuse_port", diag=str(e))
    finally:
        for svc in (a, b):
            svc.stop()
            svc.close()


def main():
    return fixtures.run_with_binary(tap, "config_tests", test_valid, test_rejections, test_cli_and_files,
                                    test_env_overrides, test_relative_sqlite_path, test_wordnet, test_port_sharing)


if __name__ == "__main__":
    sys.exit(main())
