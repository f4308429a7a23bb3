#!/usr/bin/env python3
"""check-layers.py - the architecture rules of text2sqld, checked on the source tree.

Prints one line per violation, `file:line: rule: detail`, and exits 1 when
there is any (0 when the tree is clean).  CI runs it through
tests/tools/test_check_layers.py, which also proves that it fails on a planted
violation.  Rules (see README.md, "Layout"):

  1. common/ and config/ include nothing from pipeline/, server/ or handlers/
     (config/ includes only common/).
  2. pipeline/ never includes server/, handlers/ or libmicrohttpd.
  3. Within pipeline/, includes point down the layers only:
         db  <  sql, text, models, store  <  values  <  link
             <  evidence, describe  <  builtin  <  generate
     A folder includes its own files and folders of a lower rank; two folders
     of one rank do not include each other.
  4. Only the catalog (pipeline/db/catalog.*) reads struct config; every other
     stage takes its own options struct.
  5. Handlers are thin: they parse, call one entry point of the service
     layer and render.  From pipeline/ they include only the service layer
     (pipeline/pipeline.h, pipeline/pipeline_json.h) and the renderers
     beside the result structs (pipeline/<folder>/*_json.h); of the process
     state they touch only app->pipeline (through its entry points),
     app->cfg (request defaults, auth), app->draining and the OpenAPI text;
     no locks, no libmicrohttpd calls (server/http.h wraps what they need);
     they call no function a stage header declares (only the service
     layer's and the renderers'), even one pipeline.h brings in.
  8. The service layer (the files directly in pipeline/) sits above every
     stage folder: no stage includes it.
  9. Files of one concern: no production source file (outside tests/) is
     longer than MAX_FILE_LINES lines.
  6. Every quoted include is root-relative and names a file that exists.
  7. No include cycle between files.
 10. Calls flow one way inside a folder: no cycle of references between the
     .c files of one folder (a file refers to another when it names a
     function or data that file defines; definitions and references are
     found by name, comments and strings left out).  A folder's shared
     helpers sit at its bottom, steps call them, only the driver names the
     steps.
 11. Engines live in pipeline/db/ (engine.h: a table of functions per
     engine) and pipeline/sql/ (sql_engine.h: how each runs user SQL).
     Outside those two folders no production file names an engine: no
     DB_ENGINE_* token or engine table (db_engine_sqlite, sql_engine_pg,
     db_engine_mysql...), no dialect name chosen as a string ("PostgreSQL",
     "SQLite", "MySQL", "MariaDB": ask engine->dialect), no driver of a user
     database (<libpq-fe.h>, <mysql.h>, a PQ*() or mysql_*() call, a
     connection's ->sqlite or ->my handle).  SQLite as a library stays
     allowed (the value index's FTS table, the state store's file); the
     state store's own PostgreSQL backend, ENGINE_DRIVER_ALLOWED, keeps the
     service's state through a pool of pipeline/db/ and speaks libpq.  The
     configuration knows the URL schemes (sqlite://, postgresql://,
     mysql://): they are its language, not an engine's code.

usage: check-layers.py [--root DIR]
"""

import os
import re
import sys

RANK = {
    "db": 1,
    "sql": 2, "text": 2, "models": 2, "store": 2,
    "values": 3,
    "link": 4,
    "evidence": 5, "describe": 5,
    "builtin": 6,
    "generate": 7,
}
MAX_FILE_LINES = 900
SOURCE_DIRS = ("common", "config", "pipeline", "server", "handlers", "tests/unit")
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^">]+)[">]')


def sources(root):
    for top in SOURCE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def includes(root, path):
    """(line number, kind '<' or '"', target, text of the line) for each include."""
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield no, m.group(1), m.group(2), line


def pipeline_folder(path):
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "pipeline" else None


def check_file(root, path, report):
    top = path.split("/")[0]
    folder = pipeline_folder(path)
    for no, kind, target, _ in includes(root, path):
        where = "%s:%d" % (path, no)
        if kind == "<":
            if top == "pipeline" and target.startswith("microhttpd"):
                report(where, "pipeline-no-http", "pipeline/ must not include <%s>" % target)
            continue
        if not os.path.isfile(os.path.join(root, target)):
            report(where, "root-relative", '"%s" is not a path from the source root' % target)
            continue
        ttop = target.split("/")[0]
        if top in ("common", "config") and ttop in ("pipeline", "server", "handlers"):
            report(where, "common-config-below-all", "%s/ must not include %s" % (top, target))
        if top == "common" and ttop == "config":
            report(where, "common-config-below-all", "common/ must not include %s" % target)
        if top == "pipeline" and ttop in ("server", "handlers"):
            report(where, "pipeline-no-http", "pipeline/ must not include %s" % target)
        if folder and ttop == "pipeline" and pipeline_folder(target) is None:
            report(where, "service-on-top", "a stage (%s/) must not include the service layer %s" % (folder, target))
        if folder and ttop == "pipeline":
            tfolder = pipeline_folder(target)
            if tfolder and tfolder != folder:
                if tfolder not in RANK or folder not in RANK:
                    report(where, "pipeline-layers", "folder %s/ has no rank" % (tfolder if tfolder not in RANK else folder))
                elif RANK[tfolder] >= RANK[folder]:
                    report(where, "pipeline-layers", "%s/ (rank %d) must not include %s (%s/, rank %d)"
                           % (folder, RANK[folder], target, tfolder, RANK[tfolder]))
        if top == "pipeline" and target == "config/config.h" and not path.startswith("pipeline/db/catalog."):
            report(where, "config-only-in-catalog",
                   "only the catalog reads struct config; give this stage an options struct")
    if top == "pipeline" and not path.startswith("pipeline/db/catalog."):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for no, line in enumerate(f, 1):
                if re.search(r"\bstruct config\b(?!_)", line):
                    report("%s:%d" % (path, no), "config-only-in-catalog",
                           "only the catalog reads struct config")
    if top == "handlers":
        check_handler(root, path, report)


HANDLER_PIPELINE_INCLUDE = re.compile(r"^pipeline/(pipeline(_json)?\.h|[a-z]+/[a-z_]+_json\.h)$")
HANDLER_APP_MEMBERS = ("pipeline", "cfg", "draining", "openapi_json", "openapi_len")


def check_handler(root, path, report):
    """Rule 5: a handler parses, calls one entry point and renders."""
    for no, kind, target, _ in includes(root, path):
        if kind == '"' and target.startswith("pipeline/") and not HANDLER_PIPELINE_INCLUDE.match(target):
            report("%s:%d" % (path, no), "thin-handlers",
                   "handlers reach pipeline/ through pipeline/pipeline.h and the *_json.h renderers, not %s" % target)
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            where = "%s:%d" % (path, no)
            if re.search(r"\bpthread_(mutex|rwlock|cond)_\w+|\batomic_(fetch|compare)", line):
                report(where, "thin-handlers", "handlers do not lock: move this logic into the pipeline")
            if re.search(r"\bMHD_\w+", line):
                report(where, "thin-handlers", "handlers do not call libmicrohttpd: use server/http.h")
            if re.search(r"\bapp->pipeline\s*(\.|->)", line):
                report(where, "thin-handlers", "handlers call the pipeline's entry points, not its members")
            for member in re.findall(r"\bapp->(\w+)", line):
                if member not in HANDLER_APP_MEMBERS:
                    report(where, "thin-handlers",
                           "handlers reach the pipeline's parts through its entry points, not app->%s" % member)


SERVICE_HEADERS = re.compile(r"^pipeline/(pipeline(_json)?\.h|[a-z]+/[a-z_]+_json\.h)$")


def declared_functions(text):
    """Names of the functions a header declares or defines (static inline) at file level."""
    toks = [t for t in TOKEN.findall(text)
            if not (t.startswith("//") or t.startswith("/*") or t.startswith('"') or t.startswith("'")
                    or t.lstrip().startswith("#"))]
    names, stmt, depth = set(), [], 0
    for t in toks:
        if depth == 0 and t in (";", "{"):
            if "(" in stmt and "typedef" not in stmt:
                j = stmt.index("(")
                if j > 0 and re.match(r"[A-Za-z_]\w*$", stmt[j - 1]) and stmt[j - 1] not in KEYWORDS:
                    names.add(stmt[j - 1])
            stmt = []
            if t == "{":
                depth = 1
            continue
        if depth > 0:
            depth += (t == "{") - (t == "}")
            continue
        stmt.append(t)
    return names


def stage_functions(root):
    """{name: header} of the functions pipeline/'s stage headers declare (not the service layer, not a renderer)."""
    found = {}
    for dirpath, _, names in os.walk(os.path.join(root, "pipeline")):
        for name in sorted(names):
            path = os.path.relpath(os.path.join(dirpath, name), root)
            if not name.endswith(".h") or SERVICE_HEADERS.match(path):
                continue
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                for fn in declared_functions(f.read()):
                    found.setdefault(fn, path)
    return found


def check_handler_calls(root, report):
    """Rule 5, calls: a handler calls the service layer (pipeline/pipeline.h) and the renderers
    (*_json.h), never a stage's own function, even one a service header brings in."""
    stage = stage_functions(root)
    hdir = os.path.join(root, "handlers")
    for name in sorted(os.listdir(hdir)) if os.path.isdir(hdir) else ():
        if not name.endswith(".c"):
            continue
        path = "handlers/" + name
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        toks = [(m.group(0), m.start()) for m in TOKEN.finditer(text)
                if not (m.group(0).startswith(("//", "/*", '"', "'")) or m.group(0).lstrip().startswith("#"))]
        for i, (t, pos) in enumerate(toks[:-1]):
            if t not in stage or toks[i + 1][0] != "(":
                continue
            before = [x for x, _ in toks[max(0, i - 2):i]]
            if before[-1:] == ["."] or before[-2:] == ["-", ">"]:
                continue  # a member's name, not the stage's function
            report("%s:%d" % (path, text.count("\n", 0, pos) + 1), "thin-handlers",
                   "handlers call the service layer (pipeline/pipeline.h), not %s() of %s" % (t, stage[t]))


def check_size(root, path, report):
    if path.startswith("tests/"):
        return
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        n = sum(1 for _ in f)
    if n > MAX_FILE_LINES:
        report("%s:%d" % (path, n), "file-size",
               "%d lines (at most %d): split it along its concerns" % (n, MAX_FILE_LINES))


def check_cycles(root, files, report):
    graph = {}
    for path in files:
        graph[path] = [(no, t) for no, kind, t, _ in includes(root, path)
                       if kind == '"' and os.path.isfile(os.path.join(root, t))]
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for no, nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                report("%s:%d" % (node, no), "no-cycles", "include cycle: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for path in files:
        if path not in state:
            visit(path)


TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|^\s*#[^\n]*(?:\\\n[^\n]*)*|[A-Za-z_]\w*|[{}();=,]|\S', re.S | re.M)
TAG_KEYWORDS = {"struct", "union", "enum"}
KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "do", "else", "case", "defined", "_Static_assert", "static_assert", "__attribute__", "_Alignof", "typeof"}

def defs_and_refs(text):
    """(external definitions, identifiers referenced) of one C file."""
    toks = [m.group(0) for m in TOKEN.finditer(text)]
    toks = [t for t in toks if not (t.startswith("//") or t.startswith("/*") or t.startswith('"') or t.startswith("'") or t.lstrip().startswith("#"))]
    defs, refs = set(), set()
    depth = 0
    stmt = []  # tokens of the current top-level statement
    for i, t in enumerate(toks):
        if depth == 0:
            if t == "{":
                # a function definition: ... name ( ... ) {
                if stmt and stmt[-1] == ")" and "static" not in stmt and "=" not in stmt:
                    # find the name before the first '(' at paren depth 0
                    for j, s in enumerate(stmt):
                        if s == "(":
                            if j > 0 and re.match(r"[A-Za-z_]\w*$", stmt[j - 1]) and stmt[j-1] not in KEYWORDS:
                                defs.add(stmt[j - 1])
                            break
                elif stmt and "=" in stmt and "static" not in stmt and "extern" not in stmt:
                    k = stmt.index("=")
                    names = [s for s in stmt[:k] if re.match(r"[A-Za-z_]\w*$", s)]
                    if names and "typedef" not in stmt:
                        defs.add(names[-1])
                if "=" in stmt:
                    refs.update(s for s in stmt if re.match(r"[A-Za-z_]\w*$", s))
                depth = 1
                stmt.append("{")
                continue
            if t == ";":
                if "=" in stmt and "static" not in stmt and "extern" not in stmt and "typedef" not in stmt:
                    k = stmt.index("=")
                    names = [s for s in stmt[:k] if re.match(r"[A-Za-z_]\w*$", s)]
                    if names:
                        defs.add(names[-1])
                if "=" in stmt:
                    refs.update(s for s in stmt[stmt.index("="):] if re.match(r"[A-Za-z_]\w*$", s))
                stmt = []
                continue
            stmt.append(t)
        else:
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                if depth == 0:
                    stmt = ["}"]  # wait for ';' or next
                    continue
            elif re.match(r"[A-Za-z_]\w*$", t) and toks[i - 1] not in TAG_KEYWORDS:
                refs.add(t)  # a struct, union or enum tag names a type, not a file's function
        if depth == 0 and t == "}":
            pass
    return defs, refs


CALL_DIRS = ("common", "config", "pipeline", "server", "handlers")

ENGINE_DIRS = ("pipeline/db/", "pipeline/sql/")
ENGINE_DRIVER_ALLOWED = ("pipeline/store/state_backend_pg.c",)
ENGINE_NAME = re.compile(r'\bDB_ENGINE_\w+|\b(db|sql)_engine_(sqlite|pg|mysql)\b|"(PostgreSQL|SQLite|MySQL|MariaDB)"')
ENGINE_DRIVER = re.compile(r"^\s*#\s*include\s*<(libpq-fe|mysql)\.h>|\bPQ[a-z]\w*\s*\(|\bmysql_[a-z]\w*\s*\(|->(sqlite|my)\b")


def check_engines(root, path, report):
    """Rule 11: outside pipeline/db/ and pipeline/sql/ nothing names an engine."""
    if path.split("/")[0] not in CALL_DIRS or path.startswith(ENGINE_DIRS):
        return
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            m = ENGINE_NAME.search(line)
            if m:
                report("%s:%d" % (path, no), "engine-in-db",
                       "%s names an engine: ask the schema's or connection's engine (pipeline/db/engine.h)" % m.group(0))
            m = ENGINE_DRIVER.search(line)
            if m and path not in ENGINE_DRIVER_ALLOWED:
                report("%s:%d" % (path, no), "engine-in-db",
                       "%s drives a database engine: that is pipeline/db/'s and pipeline/sql/'s work" % m.group(0).strip())


def folder_call_graph(root, folder):
    """{file: {other file: [names it uses from there]}} among the .c files of folder."""
    files = sorted(f for f in os.listdir(os.path.join(root, folder)) if f.endswith(".c"))
    info = {}
    for f in files:
        with open(os.path.join(root, folder, f), encoding="utf-8", errors="replace") as fh:
            info[f] = defs_and_refs(fh.read())
    owner = {}
    for f in files:
        for n in info[f][0]:
            owner.setdefault(n, f)
    graph = {}
    for f in files:
        outs = graph.setdefault(f, {})
        for n in info[f][1]:
            o = owner.get(n)
            if o and o != f:
                outs.setdefault(o, []).append(n)
    return graph


def strongly_connected(graph):
    """Tarjan's components of graph (node -> iterable of nodes), each a sorted list."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check_call_cycles(root, report):
    for top in CALL_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            if not any(n.endswith(".c") for n in names):
                continue
            folder = os.path.relpath(dirpath, root)
            graph = folder_call_graph(root, folder)
            for comp in strongly_connected(graph):
                if len(comp) < 2:
                    continue
                edges = []
                for f in comp:
                    for o, ns in sorted(graph[f].items()):
                        if o in comp:
                            edges.append("%s -> %s (%s)" % (f, o, ", ".join(sorted(ns)[:3])))
                report("%s/%s:1" % (folder, comp[0]), "one-way-calls",
                       "call cycle among %s: %s" % (", ".join(comp), "; ".join(edges)))


def main(argv):
    root = "."
    if len(argv) >= 2 and argv[0] == "--root":
        root = argv[1]
    elif argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    found = []

    def report(where, rule, detail):
        found.append("%s: %s: %s" % (where, rule, detail))

    files = list(sources(root))
    for path in files:
        check_file(root, path, report)
        check_size(root, path, report)
        check_engines(root, path, report)
    check_cycles(root, files, report)
    check_call_cycles(root, report)
    check_handler_calls(root, report)
    for line in found:
        print(line)
    if found:
        print("check-layers: %d violation%s" % (len(found), "" if len(found) == 1 else "s"))
        return 1
    print("check-layers: %d files, no violations" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
