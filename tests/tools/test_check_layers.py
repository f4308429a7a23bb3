#!/usr/bin/env python3
"""test_check_layers.py - scripts/check-layers.py passes on the tree as it is
and fails, naming file and line, on each kind of planted violation (a copy of
the tree is changed, never the checkout)."""

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.environ.get("T2S_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import t2s  # noqa: E402

SCRIPT = os.path.join(ROOT, "scripts", "check-layers.py")
tap = t2s.Tap()


def run(root):
    p = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def copy_tree():
    tmp = tempfile.mkdtemp(prefix="t2s-layers-")
    for top in ("common", "config", "pipeline", "server", "handlers", "tests/unit"):
        shutil.copytree(os.path.join(ROOT, top), os.path.join(tmp, top))
    return tmp


def plant(tmp, path, line):
    """Adds line after the first line of path; returns the new line's number (2)."""
    full = os.path.join(tmp, path)
    with open(full) as f:
        text = f.readlines()
    text.insert(1, line + "\n")
    with open(full, "w") as f:
        f.writelines(text)
    return 2


rc, out = run(ROOT)
tap.eq(rc, 0, "the_checkout_has_no_layer_violations")
if rc:
    tap.diag(out)

CASES = [
    ("pipeline_includes_server", "pipeline/link/link.c", '#include "server/http.h"', "pipeline-no-http"),
    ("pipeline_includes_microhttpd", "pipeline/sql/exec.c", "#include <microhttpd.h>", "pipeline-no-http"),
    ("common_includes_pipeline", "common/strbuf.c", '#include "pipeline/db/schema.h"', "common-config-below-all"),
    ("config_includes_handlers", "config/config.c", '#include "handlers/handlers.h"', "common-config-below-all"),
    ("lower_layer_includes_higher", "pipeline/db/schema.c", '#include "pipeline/link/link.h"', "pipeline-layers"),
    ("same_rank_folders_include_each_other", "pipeline/sql/exec.c", '#include "pipeline/text/lexicon.h"',
     "pipeline-layers"),
    ("stage_reads_struct_config", "pipeline/link/link.c", '#include "config/config.h"', "config-only-in-catalog"),
    ("handler_takes_a_lock", "handlers/link.c", "static void f(pthread_mutex_t *m) { pthread_mutex_lock(m); }",
     "thin-handlers"),
    ("handler_includes_a_stage", "handlers/link.c", '#include "pipeline/link/column_index.h"', "thin-handlers"),
    ("handler_reaches_into_app", "handlers/link.c", "static void *f(struct app *app) { return app->pipeline.links; }",
     "thin-handlers"),
    ("handler_calls_microhttpd", "handlers/link.c", "static void f(void) { MHD_run(0); }", "thin-handlers"),
    ("stage_includes_service_layer", "pipeline/generate/generate.c", '#include "pipeline/pipeline.h"',
     "service-on-top"),
    ("include_not_root_relative", "pipeline/link/link.c", '#include "steiner.h"', "root-relative"),
    ("stage_tests_the_engine", "pipeline/values/value_probe.c",
     "static int f(const struct schema *s) { return s->engine == DB_ENGINE_SQLITE; }", "engine-in-db"),
    ("stage_chooses_the_dialect_name", "pipeline/generate/prompt.c",
     'static const char *f(int pg) { return pg ? "PostgreSQL" : "SQLite"; }', "engine-in-db"),
    ("stage_includes_libpq", "pipeline/builtin/builtin_sql.c", "#include <libpq-fe.h>", "engine-in-db"),
    ("stage_calls_libpq", "pipeline/values/value_index_scan.c",
     "static int f(struct db_conn *c) { return PQstatus(c->pg); }", "engine-in-db"),
    ("stage_uses_a_connections_sqlite_handle", "pipeline/values/value_probe.c",
     "static void f(struct db_conn *c) { sqlite3_interrupt(c->sqlite); }", "engine-in-db"),
    ("store_record_kind_calls_libpq", "pipeline/store/state_examples.c",
     "static int f(struct session *x) { return PQstatus(x->conn->pg); }", "engine-in-db"),
    ("stage_names_the_mysql_engine", "pipeline/describe/describe.c",
     "static const void *f(void) { return &db_engine_mysql; }", "engine-in-db"),
    ("stage_chooses_mariadb_by_name", "pipeline/generate/prompt.c",
     'static const char *f(int my) { return my ? "MariaDB" : "SQLite"; }', "engine-in-db"),
    ("stage_includes_the_mysql_client", "pipeline/values/value_probe.c", "#include <mysql.h>", "engine-in-db"),
    ("handler_calls_the_mysql_client", "handlers/execute.c",
     "static unsigned f(struct db_conn *c) { return mysql_errno(c->my); }", "engine-in-db"),
]
for name, path, line, rule in CASES:
    tmp = copy_tree()
    try:
        no = plant(tmp, path, line)
        rc, out = run(tmp)
        tap.eq(rc, 1, "fails_on_" + name)
        tap.ok("%s:%d: %s:" % (path, no, rule) in out, name + "_is_reported_with_file_line_and_rule",
               diag=out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

# A production file grown past the size limit.
tmp = copy_tree()
try:
    with open(os.path.join(tmp, "pipeline/sql/sql_text.c"), "a") as f:
        f.write("\n" * 1000)
    rc, out = run(tmp)
    tap.eq(rc, 1, "fails_on_a_file_over_the_size_limit")
    tap.ok("pipeline/sql/sql_text.c:" in out and "file-size:" in out, "file_size_is_reported_with_file_and_rule",
           diag=out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# A handler calling a stage's own function (declared in pipeline/link/link.h, which pipeline.h brings in) in
# code, not in a comment: appended at the end of the file.  A member of the same name is not a call of it.
tmp = copy_tree()
try:
    with open(os.path.join(tmp, "handlers/link.c")) as f:
        n = sum(1 for _ in f)
    with open(os.path.join(tmp, "handlers/link.c"), "a") as f:
        f.write('static int f(void) { return link_mode_parse("llm"); }\n')
        f.write("struct s { int (*link_mode_name)(int); };\n")
        f.write("static int g(struct s *x) { return x->link_mode_name(1); }\n")
    rc, out = run(tmp)
    tap.eq(rc, 1, "fails_on_handler_calling_a_stage_function")
    tap.ok("handlers/link.c:%d: thin-handlers:" % (n + 1) in out and "link_mode_parse()" in out,
           "handler_calling_a_stage_function_is_reported_with_file_line_and_rule", diag=out)
    tap.ok("handlers/link.c:%d:" % (n + 3) not in out, "a_member_named_like_a_stage_function_is_not_reported",
           diag=out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# A cycle between two headers of one folder.
tmp = copy_tree()
try:
    plant(tmp, "pipeline/link/steiner.h", '#include "pipeline/link/column_index.h"')
    rc, out = run(tmp)
    tap.eq(rc, 1, "fails_on_include_cycle")
    tap.ok("no-cycles: include cycle:" in out and "pipeline/link/steiner.h" in out, "cycle_is_reported_with_its_path",
           diag=out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# A call cycle between two .c files of one folder: each defines a function the other calls.
tmp = copy_tree()
try:
    with open(os.path.join(tmp, "pipeline/text/planted_step.c"), "w") as f:
        f.write("/* planted */\nint planted_helper(int x);\nint planted_step(int x)\n{\n\treturn planted_helper(x) + 1;\n}\n")
    with open(os.path.join(tmp, "pipeline/text/planted_helper.c"), "w") as f:
        f.write("/* planted */\nint planted_step(int x);\nint planted_helper(int x)\n{\n"
                "\t/* planted_step() named in a comment is no call */\n\treturn x ? planted_step(x - 1) : 0;\n}\n")
    rc, out = run(tmp)
    tap.eq(rc, 1, "fails_on_a_call_cycle_between_files_of_one_folder")
    tap.ok("one-way-calls: call cycle among planted_helper.c, planted_step.c" in out,
           "call_cycle_is_reported_with_its_folder_and_files", diag=out)
    # The same two files calling one way only pass.
    with open(os.path.join(tmp, "pipeline/text/planted_helper.c"), "w") as f:
        f.write("/* planted */\nint planted_helper(int x)\n{\n\t/* planted_step() */\n\treturn x;\n}\n")
    rc, out = run(tmp)
    tap.ok("planted" not in out, "calls_that_flow_one_way_are_not_reported", diag=out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

sys.exit(tap.done())
