#!/usr/bin/env python3
"""check-repo.py - rules on the repository's files beside the C layering of
check-layers.py.

Prints one line per violation, `file:line: rule: detail`, and exits 1 when
there is any (0 when the repository is clean).  CI runs it through
tests/tools/test_check_repo.py, which also proves that it fails on planted
violations.  Rules:

  bench-imports  A bench/ script imports only the bench libraries.  An entry
                 script is a bench/*.py with `if __name__ == "__main__"` (run
                 from the command line); a library is any other bench/*.py
                 (benchlib.py, spiderlib.py, ...; bench/README.md's file map).
                 No bench/*.py imports an entry script, at the top or inside a
                 function: what two scripts share lives in a library.
  machine-paths  No tracked text file names a path of a particular machine:
                 an absolute path under /work, /root, /home or /Users, or a
                 /tmp path that only one machine or user has (a pytest-of-USER,
                 bash_jobs, systemd-private or tmux-UID directory, a mkdtemp or
                 mktemp name with its random letters).  Paths relative to the
                 repository, $VARIABLES with defaults and scratch paths a
                 command creates itself (/tmp/bench-build) are fine, and so are
                 system paths (/usr/share/wordnet, /usr/lib/postgresql, /etc).
                 ALLOWED lists the few paths that name no machine (a path inside
                 a container image), each with its reason.

The files are `git ls-files` of the root; outside a git checkout, every file
under the root except hidden folders, node_modules and build folders (those
holding build.ninja or meson-private).  Binary files (a NUL byte) are skipped.

usage: check-repo.py [--root DIR]
"""

import ast
import os
import re
import subprocess
import sys

# An absolute path under a home or machine-specific root: the slash starts a
# token (not the tail of a relative path like build-fuzz/fuzz/work/).
MACHINE_PATH = re.compile(r"(?<![\w.~/$}\-])/(?:work|root|home|Users)/[^\s\"'`)<>,;:]*")
# /tmp paths that exist on one machine only.
USER_TMP = re.compile(r"(?<![\w.~/$}\-])/tmp/(?:pytest-of-\w+|bash_jobs[\w.]*|systemd-private-\w+|tmux-\d+"
                      r"|tmp[a-z0-9_]{8}(?![\w])|tmp\.[A-Za-z0-9]{10}(?![\w])"
                      r"|[\w.-]*[-_](?=[a-z0-9_]{0,7}\d)(?=[a-z0-9_]{0,7}[a-z])[a-z0-9_]{8}(?![\w.-]))")
# (file, path): paths that name no machine, and why (written in pieces, so
# that this file names none).
ALLOWED = {
    ("docker/README.md", "/" + "root/.npmrc"): "inside the build container: npm's config of the image's root user",
}
SKIP_DIRS = ("node_modules",)


def tracked_files(root):
    """Repository-relative paths: git ls-files, else a walk (see the module comment)."""
    try:
        p = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, timeout=60)
        if p.returncode == 0 and os.path.exists(os.path.join(root, ".git")):
            return sorted(n for n in p.stdout.decode("utf-8", "replace").split("\0") if n)
    except (OSError, subprocess.SubprocessError):
        pass
    out = []
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS
                   and not os.path.exists(os.path.join(dirpath, d, "build.ninja"))
                   and not os.path.isdir(os.path.join(dirpath, d, "meson-private"))]
        out += [os.path.relpath(os.path.join(dirpath, n), root) for n in names]
    return sorted(out)


def read_text(root, path):
    """The file's text, or None when it is binary, missing or a link to a folder."""
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        return None
    with open(full, "rb") as f:
        data = f.read()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def check_machine_paths(root, files, report):
    for path in files:
        text = read_text(root, path)
        if text is None:
            continue
        for no, line in enumerate(text.split("\n"), 1):
            for rx in (MACHINE_PATH, USER_TMP):
                for m in rx.finditer(line):
                    found = m.group(0).rstrip(".")
                    if (path, found) in ALLOWED:
                        continue
                    report(path, no, "machine-paths", "%s names a path of one machine: use a path relative to "
                           "the repository, an environment variable with a default, or $D in docs" % found)


def bench_entry_scripts(root):
    """{module name: parsed tree} of bench/*.py, and the set of entry scripts among them."""
    bench = os.path.join(root, "bench")
    trees, entries = {}, set()
    if not os.path.isdir(bench):
        return trees, entries
    for name in sorted(os.listdir(bench)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(bench, name), encoding="utf-8") as f:
            tree = ast.parse(f.read(), name)
        mod = name[:-3]
        trees[mod] = tree
        for node in tree.body:
            if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                    and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"
                    and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in node.test.comparators)):
                entries.add(mod)
    return trees, entries


def check_bench_imports(root, report):
    trees, entries = bench_entry_scripts(root)
    for mod, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name in entries and name != mod:
                    kind = "entry script" if mod in entries else "library"
                    report("bench/%s.py" % mod, node.lineno, "bench-imports",
                           "the %s imports the entry script bench/%s.py: move what they share into a bench "
                           "library" % (kind, name))


def main(argv):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    if len(argv) == 3 and argv[1] == "--root":
        root = argv[2]
    elif len(argv) != 1:
        sys.stderr.write("usage: check-repo.py [--root DIR]\n")
        return 2
    root = os.path.abspath(root)
    found = []

    def report(path, line, rule, detail):
        found.append("%s:%d: %s: %s" % (path, line, rule, detail))

    files = tracked_files(root)
    check_bench_imports(root, report)
    check_machine_paths(root, files, report)
    for line in found:
        print(line)
    if found:
        print("check-repo: %d violation(s)" % len(found))
        return 1
    print("check-repo: %d files, no violations" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
