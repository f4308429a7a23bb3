#!/usr/bin/env python3
"""make_config.py - write a text2sqld config that registers benchmark databases.

Usage:
  make_config.py [--port 8090] [--host 127.0.0.1] [--db-dir DIR] [--sqlite NAME=PATH ...]
                 [--redis URL] [--extra JSON] [--out FILE]

--db-dir DIR   registers every DIR/<name>/<name>.sqlite (the Spider layout) as <name>.
--sqlite N=P   registers one SQLite file P as database N (repeatable).
--redis URL    adds {"redis": {"url": URL}}; without it the config has no Redis.
--extra JSON   a JSON object merged into the top level (e.g. models or linking settings).

Paths are made absolute. Prints the config (or writes --out and prints its path).
"""

import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8090)
    ap.add_argument("--db-dir", action="append", default=[])
    ap.add_argument("--sqlite", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--redis")
    ap.add_argument("--extra")
    ap.add_argument("--out")
    a = ap.parse_args()

    dbs = []
    for d in a.db_dir:
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name, name + ".sqlite")
            if os.path.isfile(p):
                dbs.append({"name": name, "url": "sqlite://" + os.path.abspath(p)})
    for spec in a.sqlite:
        name, sep, path = spec.partition("=")
        if not sep or not name or not os.path.isfile(path):
            ap.error("--sqlite %r: expected NAME=PATH to an existing file" % spec)
        dbs.append({"name": name, "url": "sqlite://" + os.path.abspath(path)})
    if not dbs:
        ap.error("no databases: give --db-dir and/or --sqlite")
    cfg = {"listen": {"host": a.host, "port": a.port}, "databases": dbs}
    if a.redis:
        cfg["redis"] = {"url": a.redis}
    if a.extra:
        cfg.update(json.loads(a.extra))
    text = json.dumps(cfg, indent=2) + "\n"
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
        print(a.out)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
