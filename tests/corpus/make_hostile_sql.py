#!/usr/bin/env python3
"""make_hostile_sql.py - writes hostile_sql.json beside it: the hostile SQL
corpus that tests/integration/test_corpus.py runs (edit the lists here, run
this, commit both).  Every entry must be refused or stopped: a statement
that succeeds (even truncated) does not belong in the corpus."""
import json
import os

def variants(stmt):
    return [stmt, stmt.lower(), "/* harmless */ " + stmt, "\n\t  " + stmt, "SELECT 1; " + stmt]

lite = []
def L(kind, sql): lite.append({"kind": kind, "sql": sql})

for base in ["INSERT INTO victim VALUES (9, 'x')", "UPDATE victim SET v = 'x'", "DELETE FROM victim",
             "REPLACE INTO victim VALUES (1, 'x')",
             "INSERT INTO victim VALUES (1, 'x') ON CONFLICT (k) DO UPDATE SET v = 'y'",
             "DROP TABLE victim", "CREATE TABLE evil (x)", "ALTER TABLE victim ADD COLUMN z",
             "CREATE INDEX evil_i ON victim (v)", "CREATE TRIGGER evil_t AFTER INSERT ON victim BEGIN DELETE FROM victim; END",
             "CREATE VIEW evil_v AS SELECT 1", "VACUUM", "REINDEX victim", "ANALYZE victim"]:
    for v in variants(base):
        L("write", v)
for s in ["WITH x AS (SELECT 1) DELETE FROM victim", "WITH x AS (SELECT 1) UPDATE victim SET v = 'x'",
          "WITH x AS (SELECT 1) INSERT INTO victim SELECT 9, 'x'", "DeLeTe/**/FROM victim",
          "\ufeffDELETE FROM victim", "\u00a0DELETE FROM victim", "\uff24\uff25\uff2c\uff25\uff34\uff25 FROM victim",
          "SELECT 1 /* */; DROP TABLE victim", "SELECT 1 -- c\n; DELETE FROM victim", "select 1;\u00a0delete from victim",
          "VACUUM INTO '/tmp/t2s_corpus_vacuum.sqlite'", "INSERT INTO victim SELECT k + 100, v FROM victim"]:
    L("write", s)
for s in ["ATTACH DATABASE '/tmp/t2s_corpus_attach.sqlite' AS evil", "DETACH DATABASE main",
          "ATTACH ':memory:' AS m", "SELECT * FROM evil.sqlite_master",
          "PRAGMA writable_schema = 1", "PRAGMA journal_mode = DELETE", "PRAGMA query_only = 0",
          "PRAGMA user_version = 7", "PRAGMA foreign_keys = OFF", "PRAGMA cache_size = 1000000",
          "PRAGMA mmap_size = 1000000000", "PRAGMA temp_store_directory = '/tmp'", "PRAGMA integrity_check",
          "SELECT load_extension('/tmp/evil.so')", "SELECT load_extension('libc.so.6', 'system')",
          "SELECT readfile('/etc/passwd')", "SELECT writefile('/tmp/t2s_corpus_w', 'x')",
          "SELECT edit('x', 'vi')", "SELECT fts3_tokenizer('simple')", "SELECT * FROM sqlite_dbpage",
          "SELECT * FROM pragma_function_list", "SELECT * FROM pragma_compile_options"]:
    L("escape", s)
for s in ["BEGIN", "BEGIN EXCLUSIVE", "COMMIT", "ROLLBACK", "SAVEPOINT s1", "RELEASE s1", "END",
          "EXPLAIN DELETE FROM victim", "EXPLAIN QUERY PLAN DELETE FROM victim"]:
    L("session", s)
for s in ["WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c",
          "SELECT count(*) FROM big a, big b, big c",
          "SELECT count(*) FROM big a, big b, big c WHERE a.i + b.i + c.i < 0",
          "SELECT count(*) FROM big a JOIN big b ON a.pad <> b.pad JOIN big c ON c.i >= 0",
          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c ORDER BY x DESC LIMIT 1",
          "SELECT sum(length(randomblob(1000))) FROM big a, big b",
          "SELECT count(*) FROM big a, big b WHERE a.pad GLOB '*[^x]*' OR b.pad LIKE '%z%' OR a.i * b.i < 0",
          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1000000000000) SELECT avg(x) FROM c",
          "SELECT (SELECT count(*) FROM big a, big b, big c WHERE a.i + b.i + c.i = -1)"]:
    L("time", s)
for s in ["SELECT printf('%.*c', 2147483647, 'x')",
          "SELECT " + ", ".join(["length(printf('%.*c', 2147483647, 'x'))"] * 4),
          "SELECT printf('%2147483647d', 1)", "SELECT printf('%.2147483647f', 1.0)",
          "SELECT format('%.*c', 2000000000, 'y')", "SELECT printf('%*s', 1500000000, 'x')",
          "SELECT printf('%-*c', -2000000000, 'x')",
          "SELECT " + ", ".join(["printf('%%.*c', 16000000, 'x') AS c%d" % i for i in range(100)]),
          "SELECT " + ", ".join(["printf('%%.*c', 6000000, 'x') AS c%d" % i for i in range(100)]),
          "SELECT zeroblob(2000000000)", "SELECT randomblob(1000000000)", "SELECT hex(zeroblob(100000000))",
          "SELECT length(zeroblob(1000000000))", "SELECT replace(hex(zeroblob(10000000)), '0', 'xxxxxxxxxx')",
          "SELECT substr(zeroblob(900000000), 1, 10)", "SELECT upper(hex(randomblob(500000000)))",
          "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT length(s) FROM r",
          "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s || s || s FROM r) SELECT max(length(s)) FROM r",
          "SELECT group_concat(a.pad || b.pad) FROM big a, big b",
          "SELECT length(group_concat(printf('%.*c', 1000, 'x'))) FROM big a, big b",
          "SELECT " + ", ".join(["hex(zeroblob(4000000)) AS h%d" % i for i in range(40)]),
          "SELECT char(" + ", ".join(["65"] * 64) + ") || printf('%.*c', 999999999, 'z')",
          "SELECT quote(zeroblob(500000000))",
          "SELECT a.i, printf('%.*c', 3000000, 'x') FROM big a, big b ORDER BY 2, 1",
          "SELECT json_group_array(printf('%.*c', 100000, 'q')) FROM big a, big b"]:
    L("size", s)
for s in ["", " ", ";", "-- only a comment", "/* only a comment */", "SELEC 1", "SELECT * FROM no_such_table",
          "SELECT no_such_function(1)", "SELECT 1 FROM victim WHERE", "SELECT 'unterminated"]:
    L("garbage", s)
# Catalog snooping / other schemas: only the main database's tables (issue 19).
for s in ["SELECT * FROM temp.sqlite_master", "SELECT name FROM sqlite_temp_master", "SELECT * FROM temp.sqlite_schema",
          "SELECT sql FROM sqlite_temp_schema", "SELECT * FROM pragma_table_info('victim', 'temp')",
          "SELECT * FROM pragma_index_list('victim', 'temp')", "SELECT * FROM pragma_table_list",
          "SELECT * FROM pragma_database_list", "SELECT m.name FROM main.sqlite_master m JOIN temp.sqlite_master t",
          "WITH x AS (SELECT * FROM temp.sqlite_master) SELECT * FROM x",
          "SELECT k, (SELECT count(*) FROM sqlite_temp_master) FROM victim", "SELECT * FROM evil.victim"]:
    L("catalog", s)

pg = []
def P(kind, sql): pg.append({"kind": kind, "sql": sql})
for base in ["INSERT INTO victim VALUES (9, 'x')", "UPDATE victim SET v = 'x'", "DELETE FROM victim",
             "INSERT INTO victim VALUES (1, 'x') ON CONFLICT (k) DO UPDATE SET v = 'y'",
             "MERGE INTO victim t USING (SELECT 1 AS k) s ON t.k = s.k WHEN MATCHED THEN DELETE",
             "TRUNCATE victim", "DROP TABLE victim", "CREATE TABLE evil (x int)", "ALTER TABLE victim ADD COLUMN z int",
             "GRANT SELECT ON victim TO PUBLIC", "CREATE TEMP TABLE evil (x int)", "SELECT * INTO evil FROM victim",
             "WITH d AS (DELETE FROM victim RETURNING *) SELECT * FROM d",
             "SELECT * FROM victim FOR UPDATE"]:
    for v in variants(base):
        P("write", v)
for s in ["SELECT * FROM (SELECT * FROM victim FOR SHARE) s", "SELECT * FROM victim FOR NO KEY UPDATE NOWAIT",
          "WITH u AS (UPDATE victim SET v = 'x' RETURNING 1) SELECT count(*) FROM u",
          "COPY victim TO '/tmp/t2s_corpus_copy'", "COPY (SELECT 1) TO PROGRAM 'touch /tmp/t2s_corpus_prog'",
          "COPY victim FROM STDIN", "CALL evil_proc()", "DO $$ BEGIN DELETE FROM victim; END $$",
          "PREPARE p AS DELETE FROM victim", "EXECUTE p", "EXPLAIN ANALYZE DELETE FROM victim",
          "DeLeTe/**/FROM victim", "\ufeffDELETE FROM victim", "SELECT $x$a$x$; DELETE FROM victim",
          "REFRESH MATERIALIZED VIEW mv", "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
          "COMMENT ON TABLE victim IS 'x'", "SECURITY LABEL ON TABLE victim IS 'x'", "VACUUM victim",
          "ANALYZE victim", "CLUSTER victim", "REINDEX TABLE victim", "CHECKPOINT"]:
    P("write", s)
for s in ["SET statement_timeout = 0", "SET ROLE postgres", "SET SESSION AUTHORIZATION postgres",
          "SET search_path = pg_temp", "RESET ALL", "RESET ROLE", "SET work_mem = '4GB'",
          "SET TRANSACTION READ WRITE", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT s", "LISTEN ch", "NOTIFY ch, 'x'",
          "UNLISTEN *", "DISCARD ALL", "LOCK TABLE victim", "DECLARE c CURSOR FOR SELECT 1", "FETCH ALL FROM c",
          "CLOSE ALL", "LOAD 'auto_explain'", "SHOW data_directory"]:
    P("session", s)
for f, args in [("set_config", "'statement_timeout', '0', false"), ("set_config", "'search_path', 'pg_temp', false"),
                ("pg_catalog.set_config", "'work_mem', '1MB', false"), ("pg_advisory_lock", "4242"),
                ("pg_try_advisory_lock", "1"), ("pg_advisory_xact_lock", "7"), ("pg_advisory_lock_shared", "9"),
                ("pg_read_file", "'/etc/passwd'"), ("pg_read_binary_file", "'/etc/passwd'"), ("pg_ls_dir", "'.'"),
                ("pg_stat_file", "'postgresql.conf'"), ("lo_import", "'/etc/passwd'"), ("lo_export", "0, '/tmp/x'"),
                ("lo_create", "0"), ("lo_from_bytea", "0, 'x'"), ("nextval", "'seq'"), ("setval", "'seq', 100"),
                ("pg_terminate_backend", "pg_backend_pid()"), ("pg_cancel_backend", "1"), ("pg_reload_conf", ""),
                ("pg_rotate_logfile", ""), ("pg_switch_wal", ""), ("pg_create_restore_point", "'x'"),
                ("pg_notify", "'ch', 'x'"), ("pg_sleep", "30"), ("pg_sleep_for", "'1 minute'"),
                ("pg_sleep_until", "now() + interval '1 minute'"), ("query_to_xml", "'DELETE FROM victim RETURNING 1', true, true, ''"),
                ("query_to_xml_and_xmlschema", "'SELECT 1', true, true, ''"), ("cursor_to_xml", "'c', 1, true, true, ''"),
                ("table_to_xml", "'victim', true, true, ''"), ("schema_to_xml", "'public', true, true, ''"),
                ("database_to_xml", "true, true, ''"), ("ts_stat", "'SELECT to_tsvector(v) FROM victim'"),
                ("ts_rewrite", "'a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery'"),
                ("ts_rewrite", "'a'::tsquery, 'SELECT pg_terminate_backend(pid)::text::tsquery, ''a''::tsquery FROM pg_stat_activity'"),
                ("dblink", "'dbname=postgres', 'DELETE FROM victim'"), ("dblink_exec", "'dbname=postgres', 'DELETE FROM victim'"),
                ("txid_current", ""), ("pg_current_xact_id", ""), ("evil_definer", ""), ("row_hook", "v.*"),
                ("setseed", "0.5"), ("pg_logical_emit_message", "false, 'x', 'y'"), ("pg_stat_reset", ""),
                ("pg_export_snapshot", ""), ("pg_import_system_collations", "'pg_catalog'"),
                ("pg_blocking_pids", "1"), ("pg_log_backend_memory_contexts", "1"), ("lo_get", "0"),
                ("pg_file_write", "'x', 'y', false"), ("pg_replication_origin_create", "'x'")]:
    P("function", "SELECT %s(%s)" % (f, args) if f != "row_hook" else "SELECT row_hook(v) FROM victim v")
for s in ["SELECT v.row_hook FROM victim v", "SELECT (v).row_hook FROM victim v",
          "SELECT * FROM pg_ls_dir('.')", "SELECT lower(pg_read_file('x'))",
          "WITH x AS (SELECT nextval('seq')) SELECT * FROM x", "VALUES (1), (pg_advisory_lock(42))",
          "SELECT a FROM (VALUES (1)) t(a) ORDER BY setval('seq', 1)",
          "SELECT CASE WHEN true THEN set_config('a.b', 'c', false) END",
          "SELECT 1 UNION ALL SELECT lo_import('/etc/passwd')", "SELECT \"set_config\"('search_path', 'pg_temp', false)",
          "SELECT PG_CATALOG.PG_SLEEP(10)", "SELECT * FROM generate_series(1, 3) WHERE pg_sleep(5) IS NULL",
          "SELECT count(*) FROM victim WHERE pg_try_advisory_lock(k)"]:
    P("function", s)
for s in ["SELECT 1 OPERATOR(public.===) 2", "SELECT k FROM victim WHERE k === 1",
          "SELECT count(*) FROM victim WHERE k === ANY (SELECT k FROM victim)",
          "SELECT k FROM victim ORDER BY k USING ===", "SELECT 'x'::text::mytype", "SELECT CAST(v AS mytype) FROM victim",
          "SELECT mytype(v) FROM victim", "SELECT ARRAY['x']::mytype[]", "SELECT 5::posint",
          "SELECT k::public.posint FROM victim"]:
    P("operator", s)
for s in ["SELECT count(*) FROM generate_series(1, 2000000000) g",
          "SELECT count(*) FROM big a, big b, big c",
          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
          "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b",
          "SELECT sum(length(md5(g::text))) FROM generate_series(1, 1000000000) g",
          "SELECT count(DISTINCT g) FROM generate_series(1, 1000000000) g",
          "SELECT max(x) FROM (SELECT g AS x FROM generate_series(1, 500000000) g ORDER BY random()) s",
          "SELECT count(*) FROM big a JOIN big b ON a.i <> b.i JOIN big c ON c.i <> a.i",
          "SELECT (SELECT count(*) FROM generate_series(1, 1000000000))",
          "SELECT count(*) FROM victim, LATERAL generate_series(1, 1000000000) g"]:
    P("time", s)
for s in ["SELECT repeat('x', 300000000)", "SELECT repeat('x', 100000000) AS a, repeat('y', 100000000) AS b",
          "SELECT " + ", ".join(["repeat('x', 1000000) AS c%d" % i for i in range(100)]),
          "SELECT " + ", ".join(["repeat('x', 8000000)"] * 4),
          "SELECT string_agg(repeat('x', 1000), '') FROM generate_series(1, 100000)",
          "SELECT array_agg(repeat('x', 100000)) FROM generate_series(1, 1000)",
          "SELECT repeat(repeat('x', 10000), 10000)", "SELECT lpad('x', 500000000, 'y')",
          "SELECT rpad('', 400000000, 'ab')", "SELECT json_agg(repeat('z', 100000)) FROM generate_series(1, 2000)",
          "SELECT jsonb_agg(g) FROM generate_series(1, 5000000) g",
          "SELECT to_json(array_agg(g)) FROM generate_series(1, 10000000) g",
          "SELECT repeat('é', 100000000)", "SELECT decode(repeat('00', 200000000), 'hex')",
          "SELECT g, repeat('x', 9000000) FROM generate_series(1, 10) g",
          "SELECT string_agg(a.pad || b.pad, ',') FROM big a, big b"]:
    P("size", s)
for s in ["", ";", "-- only a comment", "SELEC 1", "SELECT * FROM no_such_table", "SELECT no_such_function(1)",
          "SELECT 'unterminated", "SELECT 1; SELECT 2", "SELECT " + "(SELECT " * 1000 + "1" + ")" * 1000]:
    P("garbage", s)
# Catalog snooping / other schemas (issue 19): cluster-wide catalogs and statistics, whoever names them and
# however, and a schema outside the database's "schemas" (the corpus database serves public only).
for rel in ["pg_stat_activity", "pg_database", "pg_authid", "pg_roles", "pg_shadow", "pg_user", "pg_settings",
            "pg_locks", "pg_prepared_xacts", "pg_file_settings", "pg_hba_file_rules", "pg_stat_statements",
            "pg_stat_database", "pg_stat_user_tables", "pg_replication_slots", "pg_class", "pg_proc",
            "pg_auth_members", "pg_stat_ssl", "pg_stat_replication"]:
    P("catalog", "SELECT * FROM %s" % rel)
for s in ["SELECT query FROM pg_catalog.pg_stat_activity", "SELECT * FROM PG_CATALOG.PG_DATABASE",
          "SELECT * FROM \"pg_catalog\".\"pg_stat_activity\"", "TABLE pg_stat_activity",
          "SELECT (SELECT string_agg(query, ';') FROM pg_stat_activity)",
          "SELECT k FROM victim WHERE EXISTS (SELECT 1 FROM pg_database WHERE datname <> current_database())",
          "SELECT * FROM victim v JOIN pg_catalog.pg_user u ON true",
          "SELECT * FROM victim, LATERAL (SELECT query FROM pg_stat_activity LIMIT 1) s",
          "WITH x AS (SELECT datname FROM pg_database) SELECT * FROM x",
          "SELECT * FROM (WITH pg_database AS (SELECT 1) SELECT 1) s, pg_database",
          "WITH a AS (SELECT datname FROM pg_database), pg_database AS (SELECT 1) SELECT * FROM a",
          "(WITH pg_roles AS (SELECT 1) SELECT * FROM pg_roles) UNION ALL SELECT 1 FROM pg_roles",
          "WITH pg_database AS (SELECT 1) SELECT * FROM pg_catalog.pg_database",
          "SELECT * FROM information_schema.schemata", "SELECT * FROM information_schema.views",
          "SELECT * FROM information_schema.role_table_grants", "SELECT * FROM public.pg_stat_statements",
          "SELECT * FROM pg_toast.pg_toast_1262", "SELECT * FROM pg_temp.victim",
          "SELECT * FROM hidden.secret", "SELECT v.k, s.s FROM victim v JOIN hidden.secret s ON true",
          "SELECT k FROM victim UNION ALL SELECT length(s) FROM hidden.secret",
          "SELECT query FROM pg_stat_get_activity(NULL)",
          "SELECT pg_stat_get_backend_activity(b) FROM pg_stat_get_backend_idset() b",
          "SELECT pg_stat_get_db_numbackends(1)", "SELECT has_database_privilege('postgres', 'CONNECT')",
          "SELECT * FROM pg_show_all_settings()", "SELECT * FROM pg_get_replication_slots()",
          "SELECT pg_tablespace_databases(1663)"]:
    P("catalog", s)

# MySQL / MariaDB (tests/integration/test_corpus.py's database "my": victim, big, the sequence seq, the
# procedure evil_proc() and the function evil_fn() that delete, neither granted to the reader).
my = []
def M(kind, sql): my.append({"kind": kind, "sql": sql})

for base in ["INSERT INTO victim VALUES (9, 'x')", "UPDATE victim SET v = 'x'", "DELETE FROM victim",
             "REPLACE INTO victim VALUES (1, 'x')", "INSERT INTO victim VALUES (1, 'x') ON DUPLICATE KEY UPDATE v = 'y'",
             "DROP TABLE victim", "CREATE TABLE evil (x INT)", "ALTER TABLE victim ADD COLUMN z INT",
             "CREATE INDEX evil_i ON victim (v)", "CREATE TRIGGER evil_t AFTER INSERT ON victim FOR EACH ROW DELETE FROM big",
             "CREATE VIEW evil_v AS SELECT 1", "TRUNCATE TABLE victim", "RENAME TABLE victim TO evil",
             "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE victim", "HANDLER victim OPEN", "CALL evil_proc()",
             "DO SLEEP(5)", "SET GLOBAL max_connections = 1", "SET @x = 1", "SET SESSION sql_mode = ''",
             "LOCK TABLES victim WRITE", "FLUSH TABLES", "GRANT ALL ON *.* TO CURRENT_USER", "KILL 1", "SHUTDOWN",
             "PREPARE s FROM 'DELETE FROM victim'", "XA START 'x'", "START TRANSACTION", "COMMIT",
             "SHOW GRANTS", "EXPLAIN DELETE FROM victim", "OPTIMIZE TABLE victim", "USE mysql",
             "INSTALL SONAME 'ha_blackhole'", "CREATE FUNCTION f RETURNS STRING SONAME 'x.so'"]:
    for v in variants(base):
        M("write", v)
for s in ["WITH x AS (SELECT 1) DELETE FROM victim", "WITH x AS (SELECT 1) UPDATE victim SET v = 'x'",
          "DeLeTe/**/FROM victim", "SELECT 1 # c\n; DELETE FROM victim", "SELECT 1 -- c\n; DELETE FROM victim",
          "(SELECT 1); DELETE FROM victim", "SELECT 'a;'; DELETE FROM victim", "SELECT \"\\\"; DELETE FROM victim",
          "SELECT '\\'; DELETE FROM victim -- '", "INSERT INTO victim SELECT k + 100, v FROM victim"]:
    M("write", s)
for s in ["SELECT * FROM victim INTO OUTFILE '/tmp/t2s_corpus_my_out'",
          "SELECT v FROM victim LIMIT 1 INTO DUMPFILE '/tmp/t2s_corpus_my_dump'",
          "SELECT v INTO @x FROM victim LIMIT 1", "SELECT @x := v FROM victim", "SELECT @@global.secure_file_priv",
          "SELECT LOAD_FILE('/etc/passwd')", "SELECT /*!50000 SLEEP(5) */ 1", "SELECT /*M! SLEEP(5) */ 1",
          "SELECT /*!99999 1, */ k FROM victim", "SELECT /*+ SET_VAR(max_statement_time=0) */ SLEEP(5)",
          "SELECT * FROM mysql.user", "SELECT * FROM `mysql`.`user`", "SELECT * FROM MYSQL . user",
          "SELECT * FROM performance_schema.threads", "SELECT * FROM sys.processlist",
          "SELECT * FROM information_schema.processlist", "SELECT * FROM information_schema.user_privileges",
          "SELECT * FROM `information_schema`.`PROCESSLIST`", "SELECT * FROM information_schema.session_variables",
          "SELECT v FROM victim PROCEDURE ANALYSE()", "SELECT `evil_fn`()", "SELECT evil_fn()",
          "SELECT t2s_corpus_db.evil_fn()", "SELECT NEXT VALUE FOR seq", "SELECT NEXTVAL(seq)", "SELECT SETVAL(seq, 100)",
          "SELECT LAST_INSERT_ID(5)", "SELECT k FROM victim WHERE v = 'a' UNION SELECT LOAD_FILE('/etc/shadow')"]:
    M("escape", s)
for s in ["SELECT SLEEP(5)", "SELECT k FROM victim WHERE SLEEP(5) = 0", "SELECT BENCHMARK(100000000, MD5('x'))",
          "SELECT GET_LOCK('t2s', 5)", "SELECT RELEASE_LOCK('t2s')", "SELECT IS_FREE_LOCK('t2s')",
          "SELECT IS_USED_LOCK('t2s')", "SELECT RELEASE_ALL_LOCKS()", "SELECT MASTER_POS_WAIT('x', 1)",
          "SELECT MASTER_GTID_WAIT('0-1-1', 5)", "SELECT sleep (5)", "SELECT SLEEP/**/(5)"]:
    M("function", s)
for s in ["SELECT * FROM victim FOR UPDATE", "SELECT * FROM victim LOCK IN SHARE MODE", "SELECT * FROM victim FOR SHARE",
          "SELECT * FROM victim FOR UPDATE NOWAIT", "SELECT * FROM victim FOR UPDATE SKIP LOCKED"]:
    M("session", s)
for s in ["SELECT count(*) FROM big a, big b, big c", "SELECT count(*) FROM big a JOIN big b ON a.i <> b.i JOIN big c",
          "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 999) "
          "SELECT count(*) FROM r a, r b, r c, r d",
          "SELECT count(DISTINCT a.i * b.i * c.i) FROM big a, big b, big c"]:
    M("time", s)
for s in ["SELECT 'unterminated", "SELECT `unterminated", "SELECT 1 /* unterminated", "SELECT FROM WHERE",
          "SELECT k FROM victim WHERE", "", "   ", ";", "SELECT k FROM", "\ufeff", "SELECT k FROM no_such_table",
          "SELECT no_such_column FROM victim"]:
    M("garbage", s)

# Statement text far over what a model may answer or a problem may quote (issue 19): "{PAD}" stands for
# "pad" bytes of 'x' (test_corpus.py expands it).  /execute refuses the long one (max_sql_bytes) and
# names no name it cannot resolve at length; through /query the model's reply is refused past the bound
# its max_tokens sets (502), or, under it, the 422 quotes at most a 4 KiB excerpt.
for add in (L, P, M):
    add("oversized", {"sql": "SELECT k FROM victim WHERE v = '{PAD}'", "pad": 300000})
    add("oversized", {"sql": "SELECT no_such_column FROM victim WHERE v = '{PAD}'", "pad": 60000})
    add("oversized", {"sql": "SELECT k FROM victim WHERE v = '{PAD}' AND no_such_function(k) = 1", "pad": 60000})
# Table-level access (issue 30): run only by a key whose tables are victim and big_view (test_corpus.py),
# each statement reads big, which that key may not read: by name, in any clause, through big_view (which
# the key may name but which reads big), through the catalogs, and on PostgreSQL through a function.
TABLE_READS = [
    "SELECT * FROM big", "select i from BIG", 'SELECT i FROM "big"', "SELECT count(*) FROM big",
    "SELECT * FROM victim, big", "SELECT * FROM victim JOIN big ON big.i = victim.k",
    "SELECT * FROM victim LEFT JOIN big b ON b.i = victim.k", "SELECT * FROM victim CROSS JOIN big",
    "SELECT * FROM victim WHERE k IN (SELECT i FROM big)", "SELECT * FROM victim WHERE EXISTS (SELECT 1 FROM big)",
    "SELECT (SELECT max(pad) FROM big) FROM victim", "SELECT * FROM (SELECT * FROM big) AS t",
    "WITH t AS (SELECT * FROM big) SELECT * FROM t", "WITH victim AS (SELECT i AS k, pad AS v FROM big) SELECT * FROM victim",
    "WITH RECURSIVE r(n) AS (SELECT max(i) FROM big UNION ALL SELECT n - 1 FROM r WHERE n > 0) SELECT * FROM r",
    "WITH a AS (SELECT 1 AS x), b AS (SELECT i FROM big) SELECT * FROM a, b",
    "SELECT v FROM victim UNION SELECT pad FROM big", "SELECT v FROM victim UNION ALL SELECT pad FROM big",
    "SELECT k FROM victim INTERSECT SELECT i FROM big", "SELECT k FROM victim EXCEPT SELECT i FROM big",
    "SELECT * FROM big_view", "SELECT count(*) FROM victim JOIN big_view ON big_view.i = victim.k",
    "SELECT * FROM victim WHERE k IN (SELECT i FROM big_view)",
    "SELECT k, (SELECT count(*) FROM big WHERE big.i < victim.k) FROM victim ORDER BY 2",
    "SELECT * FROM victim GROUP BY k HAVING k < (SELECT max(i) FROM big)",
    "SELECT * FROM victim ORDER BY (SELECT min(i) FROM big)",
]
for sql in TABLE_READS:
    L("tables", sql)
    P("tables", sql)
for sql in ["SELECT * FROM main.big", "SELECT name FROM sqlite_master", "SELECT sql FROM sqlite_schema",
            "SELECT * FROM pragma_table_info('big')", "SELECT * FROM main.sqlite_master WHERE name = 'big'"]:
    L("tables", sql)
for sql in ["SELECT * FROM public.big", "SELECT * FROM public.\"big\"", "SELECT table_name FROM information_schema.tables",
            "SELECT column_name FROM information_schema.columns", "SELECT tablename FROM pg_tables",
            "SELECT relname FROM pg_class", "SELECT big_count()", "SELECT public.big_count()",
            "SELECT * FROM victim, LATERAL (SELECT * FROM big WHERE big.i = victim.k) l",
            "SELECT * FROM ROWS FROM (big_count()) AS t(n)"]:
    P("tables", sql)

lite[:] = [dict(kind=e["kind"], **e["sql"]) if isinstance(e["sql"], dict) else e for e in lite]
pg[:] = [dict(kind=e["kind"], **e["sql"]) if isinstance(e["sql"], dict) else e for e in pg]
my[:] = [dict(kind=e["kind"], **e["sql"]) if isinstance(e["sql"], dict) else e for e in my]

out = {"_about": "Hostile statements run by tests/integration/test_corpus.py through POST /execute and through "
                 "the generate path (the model stub answers each one). Each must be refused or stopped with a "
                 "4xx, 408, 503 or 504 problem within its limit, leave the data and the pooled session as they "
                 "were, and keep the service's memory bounded. Tables: victim(k, v), big(i, pad); PostgreSQL "
                 "also has seq, mv, evil_definer() (SECURITY DEFINER), evil_proc() (procedure), row_hook(victim) "
                 "(VOLATILE), the operator === (VOLATILE vol_eq), the cast text -> mytype (VOLATILE vol_cast) "
                 "and the domain posint (CHECK with VOLATILE vol_check), and a schema hidden with a table secret that "
                 "the reader may read but that is outside the database's schemas (public). MySQL (MariaDB) "
                 "also has seq, evil_proc() and evil_fn() (they delete; not granted to the reader). "
                 "kind: write, escape, session, function, operator, time, size, garbage, catalog (catalog "
                 "snooping and other schemas), tables (run only by a key limited to the tables victim and "
                 "big_view, a view reading big; each reads big by name, in a join, subquery, CTE body or set "
                 "operation, through big_view, the catalogs or, on PostgreSQL, the function big_count()), "
                 "oversized (the "
                 "statement text itself is huge: {PAD} stands for pad bytes of 'x'; through the generate path "
                 "a reply past the bound max_tokens sets is a 502 upstream-error; every problem body stays "
                 "under 16 KiB).",
       "sqlite": lite, "postgresql": pg, "mysql": my}
print(len(lite), len(pg), len(my))
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "hostile_sql.json"), "w", encoding="utf-8") as f:
    json.dump(out, f, indent=1, ensure_ascii=False)
    f.write("\n")
