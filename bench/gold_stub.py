#!/usr/bin/env python3
"""gold_stub.py - a zero-latency OpenAI-compatible model server that answers
each text-to-SQL prompt with the gold SQL of the dataset question it is about.

With it the whole pipeline (linking, evidence, prompt, validation, execution)
can be measured without a real model: whatever text2sqld or a peer puts in the
prompt, the "model" answers perfectly, so what remains is the pipeline's own
cost and its prompt's coverage.

Usage:
  gold_stub.py --port P [--host 127.0.0.1] --questions FILE [--questions FILE ...]
               [--dataset DIR ...] [--bare] [--dim 64] [--model NAME] [--keep-prompts] [--verbose]
               [--fixture RULES.json] [the other options of tests/stub/model_stub.py]

The server is tests/stub/model_stub.py's (its rules, from --fixture or POST
/_stub/rules, answer first: slow, failing or garbage answers); this file is
its answer source GoldAnswers.

--questions FILE  a Spider/BIRD-format JSON list ({db_id, question[, question_syn],
                  query|SQL}); every question text (and question_syn) becomes known.
--dataset DIR     loads DIR/dev.json and DIR/train.json, those that exist.
--bare            answer the bare SQL instead of a ```sql fence (for peers that
                  execute the model's answer as is, like LangChain's SQL chain).

Routes:
  POST /v1/chat/completions  the gold SQL of the question found in the last user
                             message (see "Matching"); usage counts whitespace tokens
  POST /v1/embeddings        deterministic hashed vectors (the same function as
                             tests/stub/model_stub.py)
  GET  /v1/models            the --model names (default "gold-stub")
  GET  /_stub/stats          {"requests": N, "matched": N, "unmatched": N,
                              "log": [{"prompt_tokens", "prompt_chars",
                              "completion_tokens", "matched", "db_id", "question",
                              "handler_ms"[, "messages" with --keep-prompts]}]}
                             for every chat request since the last reset
  POST /_stub/reset          forget the log (and restore the startup rules)
  GET  /_stub/requests       model_stub.py's request log (empty unless --keep-requests N)
Unversioned /chat/completions and /embeddings and /healthz are served too.

Matching: the text searched is the last message whose role is "user", then,
when no known question is found there, all messages joined (a correction round
may ask about an earlier message), with runs of whitespace collapsed to one space.
Every known question (whitespace collapsed the same way) that occurs in it is a
candidate.  The candidate whose last occurrence ends latest wins, and among
those the longest: the question being asked comes after any example questions a
prompt may quote, and a question that is a suffix of another loses to the longer
one.  When one question text has several gold queries (Spider train repeats a
few questions across databases), the query with the fewest identifiers missing
from the prompt (the question itself left out), then the most present, wins.  Unmatched prompts get `SELECT 'gold_stub: no known question'`.

prompt_tokens is the number of whitespace-separated tokens of all message
contents joined by "\\n" (as tests/stub/model_stub.py counts), prompt_chars their
characters: the same count for every client, so prompts can be compared.

The first line on stdout is "LISTENING <port>".  HTTP/1.1 keep-alive,
TCP_NODELAY on every accepted socket.  Python 3 standard library only.
"""

import argparse
import json
import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "stub"))
import model_stub  # noqa: E402
from model_stub import count_tokens, message_text  # noqa: E402,F401 (count_tokens: for importers)

_WORD = re.compile(r"[A-Za-z0-9_]+")
SQL_WORDS = set("""select from where group by order having limit offset join inner left outer cross on as and
or not in like glob between count sum avg min max distinct desc asc union all intersect except is null
exists case when then else end cast t1 t2 t3 t4 t5""".split())
UNMATCHED_SQL = "SELECT 'gold_stub: no known question'"


def norm_ws(text):
    return " ".join(text.split())


class GoldIndex:
    """Known questions and their gold SQL, indexed by each question's rarest word."""

    def __init__(self):
        self.by_text = {}      # normalized question -> [(db_id, sql)]
        self.index = {}        # word -> [normalized question]

    def add_file(self, path):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        n = 0
        for q in data:
            sql = q.get("query", q.get("SQL"))
            if not isinstance(sql, str) or not isinstance(q.get("db_id"), str):
                continue
            for key in ("question", "question_syn"):
                text = q.get(key)
                if isinstance(text, str) and text.strip():
                    entries = self.by_text.setdefault(norm_ws(text), [])
                    if (q["db_id"], sql.strip()) not in entries:
                        entries.append((q["db_id"], sql.strip()))
                    n += 1
        return n

    def build(self):
        df = {}
        words = {}
        for text in self.by_text:
            ws = set(_WORD.findall(text)) or {text}
            words[text] = ws
            for w in ws:
                df[w] = df.get(w, 0) + 1
        self.index = {}
        for text, ws in words.items():
            rare = min(ws, key=lambda w: (df[w], w))
            self.index.setdefault(rare, []).append(text)

    def lookup(self, prompt):
        """(db_id, sql, question) of the question the prompt asks, or None."""
        text = norm_ws(prompt)
        best = None
        seen = set()
        for w in set(_WORD.findall(text)):
            for cand in self.index.get(w, ()):
                if cand in seen:
                    continue
                seen.add(cand)
                pos = text.rfind(cand)
                if pos < 0:
                    continue
                key = (pos + len(cand), len(cand))
                if best is None or key > best[0]:
                    best = (key, cand)
        if best is None:
            return None
        cand = best[1]
        entries = self.by_text[cand]
        if len(entries) == 1:
            return entries[0][0], entries[0][1], cand
        # Identifiers of each candidate query against the prompt without the
        # question itself: fewest missing first, then most present.
        pos = text.rfind(cand)
        rest = text[:pos] + " " + text[pos + len(cand):]
        prompt_words = {w.lower() for w in _WORD.findall(rest)}

        def score(e):
            ids = {w.lower() for w in _WORD.findall(e[1]) if not w.isdigit()} - SQL_WORDS
            return (e[0].lower() in prompt_words, -len(ids - prompt_words), len(ids & prompt_words))

        e = max(entries, key=score)
        return e[0], e[1], cand


class GoldAnswers(model_stub.ScriptedAnswers):
    """model_stub.py's answer source for a chat request no rule answers: the
    gold SQL of the known question the prompt asks, logged for /_stub/stats."""

    name = "gold_stub"
    server_version = "gold-stub/1"
    owned_by = "gold-stub"
    default_models = ["gold-stub"]
    lenient_paths = True
    streams = True
    keep_requests = 0  # the stats log is the record; model_stub's would grow for a whole run

    def __init__(self, index, bare=False, keep_prompts=False):
        self.index = index
        self.bare = bare
        self.keep_prompts = keep_prompts
        self.lock = threading.Lock()
        self.log = []

    def chat(self, state, body, msgs, text):
        t0 = time.perf_counter()
        users = [m for m in msgs if m.get("role") == "user"]
        hit = self.index.lookup(message_text(users[-1])) if users else None
        if hit is None:
            hit = self.index.lookup(text)
        answer_text = self.answer(hit)
        entry = {"prompt_tokens": count_tokens(text), "prompt_chars": len(text),
                 "completion_tokens": count_tokens(answer_text),
                 "matched": hit is not None, "db_id": hit[0] if hit else None,
                 "question": hit[2] if hit else None,
                 "handler_ms": round((time.perf_counter() - t0) * 1000.0, 3)}
        if self.keep_prompts:
            entry["messages"] = msgs
        with self.lock:
            self.log.append(entry)
        return answer_text

    def answer(self, hit):
        """The reply to a prompt about hit ((db_id, sql, question) or None)."""
        sql = hit[1] if hit else UNMATCHED_SQL
        return sql if self.bare else "```sql\n%s\n```" % sql

    def stats(self):
        with self.lock:
            log = list(self.log)
        matched = sum(1 for e in log if e["matched"])
        return {"requests": len(log), "matched": matched, "unmatched": len(log) - matched, "log": log}

    def reset(self):
        with self.lock:
            self.log = []


def add_gold_arguments(ap):
    """The options of gold_stub.py and gold_tables_stub.py beyond model_stub.py's."""
    model_stub.add_server_arguments(ap)
    ap.add_argument("--questions", action="append", default=[], help="Spider/BIRD JSON question file (repeatable)")
    ap.add_argument("--dataset", action="append", default=[], help="dataset directory: loads its dev.json/train.json")
    ap.add_argument("--keep-prompts", action="store_true", help="keep each request's messages in /_stub/stats")


def question_files(ap, a):
    """The question files of --questions and --dataset (exits when there are none)."""
    files = list(a.questions)
    for d in a.dataset:
        for name in ("dev.json", "train.json"):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                files.append(p)
    if not files:
        ap.error("no question files: give --questions FILE or --dataset DIR")
    return files


def load_index(files):
    """(GoldIndex of files, number of questions read)."""
    index = GoldIndex()
    total = sum(index.add_file(p) for p in files)
    index.build()
    return index, total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_gold_arguments(ap)
    ap.add_argument("--bare", action="store_true", help="answer bare SQL instead of a ```sql fence")
    a = ap.parse_args()
    files = question_files(ap, a)
    index, total = load_index(files)

    def ready():
        if a.verbose:
            sys.stderr.write("gold_stub: %d questions (%d distinct texts) from %s\n"
                             % (total, len(index.by_text), ", ".join(files)))

    model_stub.serve(a, GoldAnswers(index, a.bare, a.keep_prompts), ready)


if __name__ == "__main__":
    main()
