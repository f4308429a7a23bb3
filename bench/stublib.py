"""The answer sources the bench model stubs (gold_stub.py, gold_tables_stub.py,
replay_stub.py) give tests/stub/model_stub.py's server, and the predictions
replay_eval.py reads (Python 3 standard library only).

- GoldIndex: every question text of Spider/BIRD question files and its gold
  SQL; finds the question a prompt is about (gold_stub.py's help: "Matching").
- GoldAnswers: model_stub's answer source answering that gold SQL, with the
  per-request log of /_stub/stats.
- add_gold_arguments(), question_files(), load_index(): the stubs' options and
  the index they load.
- Predictions: published systems' predictions, one <system>.json per system
  (DEFAULT_PREDICTIONS, the Spider dev questions they index: DEFAULT_DATASET).
- model_stub, count_tokens, message_text: tests/stub/model_stub.py's server
  and helpers, for the stubs.
"""

import json
import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "stub"))
import benchlib  # noqa: E402
import model_stub  # noqa: E402
from model_stub import count_tokens, message_text  # noqa: E402,F401 (for the stubs)


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


DEFAULT_PREDICTIONS = os.path.join(benchlib.DATASETS, "spider-dev-predictions")
DEFAULT_DATASET = os.path.join(benchlib.DATASETS, "spider-dev")


class Predictions:
    """The systems' predictions: sql[system][dev index], and each index's (db_id, question)."""

    def __init__(self, directory):
        self.directory = directory
        self.sql = {}
        self.questions = {}
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".json"):
                continue
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                entries = json.load(f)
            system = name[:-len(".json")]
            self.sql[system] = {e["index"]: e["sql"] for e in entries}
            for e in entries:
                self.questions[e["index"]] = (e["db_id"], e["question"])

    @property
    def systems(self):
        return sorted(self.sql)

    def databases(self):
        return sorted({db for db, _ in self.questions.values()})

    def parse_systems(self, spec):
        """The list of systems named by "a,b,c", or None when one is unknown."""
        names = [s.strip() for s in spec.split(",") if s.strip()]
        return names if names and all(s in self.sql for s in names) else None
