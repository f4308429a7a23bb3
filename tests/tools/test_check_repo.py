#!/usr/bin/env python3
"""test_check_repo.py - scripts/check-repo.py passes on the repository as it is
and fails, naming file and line, on each kind of planted violation: a bench
script importing an entry script, a machine path in a tracked file (a copy of
the tracked files is changed, never the checkout).  Paths a machine check must
leave alone (system paths, scratch paths under /tmp, relative paths) are
planted too and must pass."""

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.environ.get("T2S_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import t2s  # noqa: E402

SCRIPT = os.path.join(ROOT, "scripts", "check-repo.py")
tap = t2s.Tap()
# Written in pieces so that this file itself names no machine path.
W, H, R, U, T = "/" + "work", "/" + "home", "/" + "root", "/" + "Users", "/" + "tmp"


def run(root):
    p = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def copy_tree():
    """The tracked files of the checkout (every file but build folders outside git) in a new folder."""
    tmp = tempfile.mkdtemp(prefix="t2s-repo-")
    p = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True)
    names = [n for n in p.stdout.decode().split("\0") if n] if p.returncode == 0 else []
    if not names:
        shutil.rmtree(tmp)
        shutil.copytree(ROOT, tmp, symlinks=True,
                        ignore=lambda d, ns: [n for n in ns if n.startswith(("build", "."))])
        return tmp
    for n in names:
        src = os.path.join(ROOT, n)
        if not os.path.isfile(src) or os.path.islink(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(tmp, n)), exist_ok=True)
        shutil.copyfile(src, os.path.join(tmp, n))
    return tmp


def plant(tmp, path, line):
    """Appends line to path (created if missing); returns its line number."""
    full = os.path.join(tmp, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    text = open(full, encoding="utf-8").read() if os.path.exists(full) else ""
    if text and not text.endswith("\n"):
        text += "\n"
    text += line + "\n"
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)
    return text.count("\n")


rc, out = run(ROOT)
tap.eq(rc, 0, "the_repository_has_no_violations")
if rc:
    tap.diag(out)

CASES = [
    ("entry_script_imports_an_entry_script", "bench/soak.py", "from link_eval import emit  # planted",
     "bench-imports"),
    ("entry_script_imports_an_entry_script_module", "bench/query_eval.py", "import query_overhead  # planted",
     "bench-imports"),
    ("library_imports_an_entry_script_in_a_function", "bench/benchlib.py",
     "def _planted():\n    import gold_stub  # noqa", "bench-imports"),
    ("doc_names_a_work_path", "bench/README.md", "D=%s/shared/datasets" % W, "machine-paths"),
    ("script_default_is_a_home_path", "bench/make_config.py", "DEFAULT = '%s/alice/data'" % H, "machine-paths"),
    ("c_file_names_a_root_path", "pipeline/db/schema.c", "/* see %s/notes.txt */" % R, "machine-paths"),
    ("doc_names_a_users_path", "README.md", "(%s/bob/text2sqld/build)" % U, "machine-paths"),
    ("shell_names_a_pytest_tmp_dir", "scripts/test.sh", "cp x %s/pytest-of-alice/pytest-3/" % T, "machine-paths"),
    ("doc_names_a_mkdtemp_dir", "tests/README.md", "log in %s/t2s-bench-k3j2x9ab/service.log" % T, "machine-paths"),
    ("new_file_names_a_work_path", "docs/notes.md", "build: meson setup build %s/main" % W, "machine-paths"),
]
for name, path, line, rule in CASES:
    tmp = copy_tree()
    try:
        no = plant(tmp, path, line)
        rc, out = run(tmp)
        tap.eq(rc, 1, "fails_on_" + name)
        tap.ok("%s:%d: %s:" % (path, no, rule) in out, name + "_is_reported_with_file_line_and_rule", diag=out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

# What is not a machine path: system paths, scratch paths a command creates,
# mktemp templates, relative paths that contain "work/", a library import.
tmp = copy_tree()
try:
    plant(tmp, "bench/README.md", "WordNet in /usr/share/wordnet, PostgreSQL in /usr/lib/postgresql/15/bin; "
          "meson setup %s/bench-build . ; mktemp -d %s/t2s-vi-XXXXXX; build-fuzz/fuzz/work/corpus; "
          "--config %s/spider-dev.json; ~/src; $HOME/x; /etc/ssl/certs" % (T, T, T))
    plant(tmp, "bench/soak.py", "import benchlib  # a library")
    rc, out = run(tmp)
    tap.eq(rc, 0, "passes_on_system_scratch_and_relative_paths_and_library_imports")
    if rc:
        tap.diag(out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

sys.exit(tap.done())
