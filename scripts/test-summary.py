#!/usr/bin/env python3
"""test-summary.py - one closing line for CI from meson's test logs.

Usage: scripts/test-summary.py [BUILD/meson-logs/testlog.json ...]
       (default: build/meson-logs/testlog.json)

`meson test` writes one JSON object per test program and line to
meson-logs/testlog.json (meson 1.0: "name", "result", "returncode",
"stdout", "stderr" when non-empty, "duration", "command", "env"; "result" is
OK, SKIP, FAIL, ERROR, TIMEOUT, INTERRUPT, EXPECTEDFAIL or UNEXPECTEDPASS).
This script counts individual checks, not programs:

  - every top-level TAP line in a test's stdout counts once: "ok N - x" as
    passed, "ok N - x # SKIP why" as skipped, "not ok N - x" as failed,
    "not ok ... # TODO" as skipped (a known, expected failure);
    "Bail out!" counts as one failure;
  - a test whose result is FAIL, ERROR, TIMEOUT, INTERRUPT or UNEXPECTEDPASS
    but printed no failing TAP line (a crash after its last check, a
    sanitizer leak report at exit, a timeout, a non-TAP test such as a fuzz
    target's run) counts as one extra failure, named with its result, exit
    status and the first sanitizer or libFuzzer error line of its stderr if any;
  - a test without TAP lines counts as one check: OK passed, SKIP skipped
    (so does a TAP plan "1..0 # SKIP"); EXPECTEDFAIL counts as passed
    whatever its output.

It prints the failing checks, one a line, then as the LAST line exactly
"N passed, N failed" (", N skipped" appended only when N > 0). Exit status 1
when anything failed, when no check passed or failed (nothing ran), or when a
log is missing or unreadable; 0 otherwise.
"""

import json
import os
import re
import sys

TAP_LINE = re.compile(r"^(not )?ok\b\s*(\d+)?\s*(?:-\s*)?(.*)$")
DIRECTIVE = re.compile(r"(?<!\\)#\s*(SKIP|TODO)\b", re.IGNORECASE)
FAILING_RESULTS = {"FAIL", "ERROR", "TIMEOUT", "INTERRUPT", "UNEXPECTEDPASS"}
SANITIZER = re.compile(r"(ERROR: (Address|Leak|Memory|Thread)Sanitizer[^\n]*|ERROR: libFuzzer[^\n]*|"
                       r"[^\n]*runtime error:[^\n]*|SUMMARY: [A-Za-z]+Sanitizer[^\n]*)")


class Totals:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.failures = []  # printable lines

    def fail(self, text):
        self.failed += 1
        self.failures.append(text)


def count_test(rec, label, totals):
    """Adds one testlog.json record's checks to totals."""
    name = label + str(rec.get("name", "?"))
    result = str(rec.get("result", "")).upper()
    stdout = rec.get("stdout") or ""
    if result == "EXPECTEDFAIL":
        totals.passed += 1
        return
    tap_lines = 0
    tap_failures = 0
    whole_skip = False
    for line in stdout.splitlines():
        if line.startswith("Bail out!"):
            tap_lines += 1
            tap_failures += 1
            totals.fail("%s: %s" % (name, line.strip()))
            continue
        if re.match(r"^1\.\.0\b.*#\s*skip", line, re.IGNORECASE):
            whole_skip = True
            continue
        m = TAP_LINE.match(line)
        if not m:
            continue
        tap_lines += 1
        failed = m.group(1) is not None
        d = DIRECTIVE.search(m.group(3) or "")
        directive = d.group(1).upper() if d else None
        if directive == "SKIP":
            totals.skipped += 1
        elif directive == "TODO":
            if failed:
                totals.skipped += 1
            else:
                totals.passed += 1
        elif failed:
            tap_failures += 1
            totals.fail("%s: %s" % (name, line.strip()))
        else:
            totals.passed += 1
    if result in FAILING_RESULTS:
        if tap_failures == 0:
            why = result
            rc = rec.get("returncode")
            if isinstance(rc, int) and rc != 0:
                why += ", killed by signal %d" % -rc if rc < 0 else ", exit status %d" % rc
            m = SANITIZER.search(rec.get("stderr") or "") or SANITIZER.search(stdout)
            if m:
                why += ": " + m.group(0).strip()[:200]
            totals.fail("%s (%s)" % (name, why))
        return
    if tap_lines == 0:
        if result == "SKIP" or whole_skip:
            totals.skipped += 1
        elif result == "OK":
            totals.passed += 1
        else:
            totals.fail("%s (result %s)" % (name, result or "missing"))


def read_log(path, label, totals):
    """Counts every record of one testlog.json; returns False if unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    totals.fail("%s:%d (unreadable testlog line)" % (path, n))
                    continue
                count_test(rec, label, totals)
    except OSError as e:
        print("test-summary: cannot read %s: %s" % (path, e.strerror or e))
        return False
    return True


def build_label(path):
    """'build-asan/' for build-asan/meson-logs/testlog.json."""
    parent = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    return os.path.basename(parent) + "/"


def main(argv):
    paths = argv[1:] or ["build/meson-logs/testlog.json"]
    totals = Totals()
    readable = True
    for p in paths:
        label = build_label(p) if len(paths) > 1 else ""
        readable = read_log(p, label, totals) and readable
    for line in totals.failures:
        print("FAILED " + line)
    summary = "%d passed, %d failed" % (totals.passed, totals.failed)
    if totals.skipped:
        summary += ", %d skipped" % totals.skipped
    sys.stdout.flush()
    print(summary)
    if totals.failed or not readable or totals.passed + totals.failed == 0:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
