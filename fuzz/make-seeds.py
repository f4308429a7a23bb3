#!/usr/bin/env python3
"""make-seeds.py - writes fuzz/corpus/<target>/ from the repository's own fixtures.

Usage: python3 fuzz/make-seeds.py   (from anywhere; rewrites the seed folders)

Seeds are real inputs, named by the SHA-1 of their content as libFuzzer
names its own corpus files:

  sqlite_guard   every SQLite statement of tests/corpus/hostile_sql.json, and
                 the ordinary queries below on the fuzz target's tables;
  sql_guard_pg   every PostgreSQL statement of tests/corpus/hostile_sql.json,
                 and every statement tests/unit/test_sql_guard_pg.c checks;
  sql_guard_mysql every MySQL statement of tests/corpus/hostile_sql.json, and
                 every statement tests/unit/test_sql_guard_mysql.c checks;
  reply          every model answer tests/unit/test_generate.c parses, the
                 describe answers of tests/unit/test_describe.c, link answers
                 as the link model gives them, and corpus statements as a
                 model writes them (fenced, labelled);
  request_json   one selector byte (0 /execute, 1 /link, 2 /generate and
                 /query) and a body as the integration tests send it;
  config         config/text2sqld.example.json, docker/text2sqld.json and a
                 few variants of the example.

Crash inputs found later are added by hand (named crash-<what>) and are
kept: this script only replaces the files it writes.
"""

import hashlib
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")

ORDINARY_SQLITE = [
    "SELECT count(*) FROM singer",
    "SELECT name, country, age FROM singer ORDER BY age DESC LIMIT 3",
    "SELECT country, count(*) FROM singer GROUP BY country HAVING count(*) > 1",
    "SELECT s.name, c.concert_name FROM singer AS s JOIN concert AS c ON c.singer_id = s.singer_id WHERE c.year = '2014'",
    "SELECT name FROM singer WHERE singer_id NOT IN (SELECT singer_id FROM concert)",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) SELECT sum(i) FROM n",
    "SELECT avg(age), min(age), max(age) FROM french",
    "SELECT hex(photo), typeof(photo) FROM singer",
    "SELECT * FROM pragma_table_info('singer')",
    "SELECT k, v FROM victim WHERE v LIKE 't%' UNION SELECT i, pad FROM big WHERE i < 3",
    "SELECT 9223372036854775807, -0.0, 1e308, NULL, x'00', 'caf\u00e9'",
]

C_STRING = r'"((?:[^"\\\n]|\\.)*)"'


def c_unescape(s):
    """The value of a C string literal's body (the escapes the tests use)."""
    return s.encode("latin-1", "backslashreplace").decode("unicode_escape")


def c_literals_after(path, call, index):
    """The index-th string argument of every call(...) in the C file at path (adjacent literals joined)."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    found = []
    for m in re.finditer(r"\b%s\(" % call, text):
        args = []
        pos = m.end()
        while len(args) <= index:
            lit = re.compile(r"\s*" + C_STRING + r"(?:\s*" + C_STRING + r")*\s*").match(text, pos)
            if not lit:
                break
            parts = re.findall(C_STRING, lit.group(0))
            args.append("".join(c_unescape(p) for p in parts))
            pos = lit.end()
            if text[pos:pos + 1] != ",":
                break
            pos += 1
        if len(args) > index:
            found.append(args[index])
    return found


def c_literal_runs(path, must_contain):
    """Every run of adjacent string literals in the C file at path whose value contains must_contain."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    runs = re.finditer(C_STRING + r"(?:\s*" + C_STRING + r")*", text)
    values = ("".join(c_unescape(p) for p in re.findall(C_STRING, m.group(0))) for m in runs)
    return [v for v in values if must_contain in v]


LINK_ANSWERS = [
    '["singer", "concert"]',
    'The tables needed are:\n["singer", "singer_in_concert", "concert"]',
    "singer\nconcert\n",
    "Singer, STADIUM, unknown_table, singer",
    '```json\n["stadium"]\n```',
    "[]",
]


def write(target, blobs):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if not f.startswith("crash-"):
            os.unlink(os.path.join(d, f))
    seen = set()
    for b in blobs:
        if isinstance(b, str):
            b = b.encode("utf-8")
        name = hashlib.sha1(b).hexdigest()
        if name in seen:
            continue
        seen.add(name)
        with open(os.path.join(d, name), "wb") as f:
            f.write(b)
    return len(seen)


def main():
    corpus = json.load(open(os.path.join(ROOT, "tests", "corpus", "hostile_sql.json"), encoding="utf-8"))
    sqlite_sql = [c["sql"] for c in corpus["sqlite"]]
    pg_sql = [c["sql"] for c in corpus["postgresql"]]
    pg_unit = c_literals_after("tests/unit/test_sql_guard_pg.c", "allow", 1) + \
        c_literals_after("tests/unit/test_sql_guard_pg.c", "reject", 1)
    answers = c_literals_after("tests/unit/test_generate.c", "expect_sql", 0)

    counts = {}
    counts["sqlite_guard"] = write("sqlite_guard", sqlite_sql + ORDINARY_SQLITE)
    counts["sql_guard_pg"] = write("sql_guard_pg", pg_sql + pg_unit)
    my_sql = [c["sql"].replace("{PAD}", "x" * 64) for c in corpus["mysql"]]
    my_unit = c_literals_after("tests/unit/test_sql_guard_mysql.c", "admits", 0) + \
        c_literals_after("tests/unit/test_sql_guard_mysql.c", "refuses", 0)
    counts["sql_guard_mysql"] = write("sql_guard_mysql", my_sql + my_unit)
    replies = list(answers) + LINK_ANSWERS + c_literal_runs("tests/unit/test_describe.c", '"columns')
    for i, sql in enumerate(sqlite_sql[::8] + ORDINARY_SQLITE):
        replies.append(["```sql\n%s\n```" % sql, "Here is the query:\n```SQL\n%s;\n```\nIt answers the question." % sql,
                        "SQLQuery: %s" % sql][i % 3])
    counts["reply"] = write("reply", replies)

    def body(selector, obj):
        return bytes([selector]) + json.dumps(obj).encode("utf-8")

    requests = [body(0, {"database": "fixture", "sql": sql}) for sql in sqlite_sql[::6]]
    requests += [
        body(0, {"database": "music", "sql": "SELECT 1", "max_rows": "x"}),
        body(0, {"database": "music", "sql": "SELECT 1", "max_rows": 0}),
        body(0, {"database": "music", "sql": "SELECT 1", "max_rows": 1.5}),
        body(0, {"database": "music", "sql": "SELECT id FROM singer", "max_rows": 100, "big_integers": "string"}),
        body(0, {"database": "music", "sql": "SELECT 1", "extra": True}),
        body(1, {"database": "concert_singer", "question": "How many singers are there?"}),
        body(1, {"database": "concert_singer", "question": "singers from France", "top_k": 5, "mode": "hybrid"}),
        body(1, {"database": "concert_singer", "question": "x", "mode": "llm"}),
        body(1, {"database": "concert_singer", "question": "x", "mode": "x"}),
        body(2, {"database": "concert_singer", "question": "List every singer",
                 "options": {"max_rows": 2, "candidates": 3}}),
        body(2, {"database": "concert_singer", "question": "How many concerts in 2014?",
                 "evidence": "year is text", "options": {"max_rounds": 0, "timeout_ms": 5000,
                                                          "big_integers": "number"}}),
        body(2, {"database": "concert_singer", "question": "and the oldest?",
                 "history": [{"question": "List every singer", "sql": "SELECT name FROM singer"}]}),
        body(2, {"database": "concert_singer", "question": "x", "history": [{"question": "q"}]}),
        body(2, {"database": "concert_singer", "question": "x", "options": {"candidates": 0}}),
        b"\x00{\"database\": \"a\", \"database\": \"b\", \"sql\": \"SELECT 1\"}",
        b"\x02{\"database\": \"a\", \"question\": \"nul \\u0000 inside\"}",
        b"\x01[1, 2, 3]",
    ]
    counts["request_json"] = write("request_json", requests)

    example = open(os.path.join(ROOT, "config", "text2sqld.example.json"), encoding="utf-8").read()
    docker = open(os.path.join(ROOT, "docker", "text2sqld.json"), encoding="utf-8").read()
    configs = [example, docker]
    cfg = json.loads(example)
    for key in list(cfg):
        if key.startswith("_"):
            continue
        variant = dict(cfg)
        del variant[key]
        configs.append(json.dumps(variant, indent=1))
    configs.append(json.dumps({"databases": [{"name": "pg", "engine": "postgresql",
                                               "url": "postgresql://reader@127.0.0.1:5432/shop"}]}))
    configs.append(json.dumps({"redis": {"url": "redis://:abc@"}, "listen": {"host": "not a host"}}))
    counts["config"] = write("config", configs)
    for k, v in sorted(counts.items()):
        print("%-14s %d seeds" % (k, v))


if __name__ == "__main__":
    main()
