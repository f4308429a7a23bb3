#!/usr/bin/env python3
"""replay_stub.py - a zero-latency OpenAI-compatible model server that answers
each text-to-SQL prompt with what a published system wrote for that question.

gold_stub.py answers the gold SQL, so text2sqld's validation, correction and
voting only ever meet right answers there.  This source replays real models'
predictions (../shared/datasets/spider-dev-predictions: each file a JSON list
of {index, db_id, question, sql}, index into Spider dev.json), right and wrong
as they were written.

Usage:
  replay_stub.py --port P [--host 127.0.0.1] [--predictions DIR] [--dataset DIR]
                 (--system NAME | --systems A,B,C) [--bare] [--keep-prompts] [--verbose]
                 [--fixture RULES.json] [the other options of tests/stub/model_stub.py]

--predictions DIR  the prediction files, one system per DIR/<system>.json
                   (default $T2S_DATASETS/spider-dev-predictions; $T2S_DATASETS
                   defaults to ../shared/datasets beside the repository)
--dataset DIR      the Spider dataset whose dev.json the indexes point into; its
                   questions are what prompts are matched against (default
                   $T2S_DATASETS/spider-dev)
--system NAME      answer every request with NAME's prediction
--systems A,B,...  ensemble: the k-th generation request about a question (first
                   round, candidates and correction turns alike, counted per
                   question from 0) gets system k mod n's prediction, so that
                   options.candidates = n asks n systems and a correction turn
                   gets a second opinion
The request's "model" overrides both when it names known systems ("codes-7b",
"codes-7b,c3-chatgpt"): one stub serves every configuration of a bench, each
text2sqld started with its own models.generate.model.  Counters are kept per
(model, database, question) and forgotten by POST /_stub/reset.

Which prompts are answered: a generation or debug prompt (text2sqld's generate
system message, a lite-sql "### Question" prompt, or any conversation with an
assistant turn) is matched to its question as gold_stub.py matches (GoldIndex
over dev.json: the question in the last user message, else anywhere in the
conversation) and answered with the system's SQL in a ```sql fence (--bare:
as is).  Other prompts (a link, describe or evidence model pointed here by
mistake) get "[]" and do not advance any counter.  A question without a
prediction gets `SELECT 'replay_stub: no prediction'`.

Routes are gold_stub.py's, that is tests/stub/model_stub.py's; GET /_stub/stats
is {"requests", "matched", "unmatched", "other_prompts", "by_system": {name: N},
"log": [{"prompt_tokens", "prompt_chars", "completion_tokens", "matched",
"kind" (generate|other), "db_id", "question", "index", "system", "k",
"handler_ms"[, "messages"]}]}.  The first line on stdout is "LISTENING <port>".
Python 3 standard library only.
"""

import argparse
import collections
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stublib  # noqa: E402
from stublib import DEFAULT_DATASET, DEFAULT_PREDICTIONS, Predictions, count_tokens, message_text, norm_ws  # noqa: E402

NO_PREDICTION_SQL = "SELECT 'replay_stub: no prediction'"
GENERATE_SYSTEM = "You write one correct read-only"  # pipeline/generate/prompt.c
LITE_SQL_START = "### Question"


def dev_indexes(dev_path):
    """{(db_id, question whitespace-collapsed): [dev index, ...]} of dev.json."""
    with open(dev_path, encoding="utf-8") as f:
        dev = json.load(f)
    out = collections.defaultdict(list)
    for i, q in enumerate(dev):
        out[(q["db_id"], norm_ws(q["question"]))].append(i)
    return out


def is_sql_prompt(msgs):
    """True for a generation or debug conversation, False for the other stages' prompts."""
    if any(m.get("role") == "assistant" for m in msgs):
        return True
    for m in msgs:
        text = message_text(m).lstrip()
        if m.get("role") == "system":
            return text.startswith(GENERATE_SYSTEM)
        if m.get("role") == "user":
            return text.startswith(LITE_SQL_START)
    return False


class ReplayAnswers(stublib.GoldAnswers):
    """model_stub.py's answer source replaying the systems' predictions."""

    name = "replay_stub"
    server_version = "replay-stub/1"
    owned_by = "replay-stub"

    def __init__(self, index, by_question, preds, systems, bare=False, keep_prompts=False):
        super().__init__(index, bare, keep_prompts)
        self.by_question = by_question
        self.preds = preds
        self.systems = systems
        self.default_models = [",".join(systems)]
        self.counters = collections.Counter()

    def pick(self, model, key):
        """(system, k) answering the next request about key under model."""
        systems = self.preds.parse_systems(model) if isinstance(model, str) else None
        systems = systems or self.systems
        with self.lock:
            k = self.counters[(",".join(systems),) + key]
            self.counters[(",".join(systems),) + key] += 1
        return systems[k % len(systems)], k

    def chat(self, state, body, msgs, text):
        t0 = time.perf_counter()
        entry = {"prompt_tokens": count_tokens(text), "prompt_chars": len(text), "matched": False,
                 "kind": "generate", "db_id": None, "question": None, "index": None, "system": None, "k": None}
        if not is_sql_prompt(msgs):
            entry["kind"] = "other"
            answer_text = "[]"
        else:
            users = [m for m in msgs if m.get("role") == "user"]
            hit = self.index.lookup(message_text(users[-1])) if users else None
            if hit is None:
                hit = self.index.lookup(text)
            sql = stublib.UNMATCHED_SQL
            if hit is not None:
                entry.update(matched=True, db_id=hit[0], question=hit[2])
                system, k = self.pick(body.get("model"), (hit[0], hit[2]))
                entry.update(system=system, k=k)
                sql = NO_PREDICTION_SQL
                for i in self.by_question.get((hit[0], hit[2]), ()):
                    if i in self.preds.sql[system]:
                        entry["index"] = i
                        sql = self.preds.sql[system][i]
                        break
            answer_text = sql if self.bare else "```sql\n%s\n```" % sql
        entry["completion_tokens"] = count_tokens(answer_text)
        entry["handler_ms"] = round((time.perf_counter() - t0) * 1000.0, 3)
        if self.keep_prompts:
            entry["messages"] = msgs
        with self.lock:
            self.log.append(entry)
        return answer_text

    def stats(self):
        out = super().stats()
        log = out["log"]
        out["other_prompts"] = sum(1 for e in log if e["kind"] == "other")
        out["unmatched"] = sum(1 for e in log if e["kind"] == "generate" and not e["matched"])
        out["by_system"] = dict(collections.Counter(e["system"] for e in log if e["system"]))
        return out

    def reset(self):
        super().reset()
        with self.lock:
            self.counters.clear()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    stublib.model_stub.add_server_arguments(ap)
    ap.add_argument("--predictions", default=DEFAULT_PREDICTIONS, help="directory of <system>.json prediction files")
    ap.add_argument("--dataset", default=DEFAULT_DATASET, help="Spider dataset directory (its dev.json)")
    ap.add_argument("--system", help="one system answers every request")
    ap.add_argument("--systems", help="comma-separated systems: the k-th request about a question gets system k")
    ap.add_argument("--bare", action="store_true", help="answer bare SQL instead of a ```sql fence")
    ap.add_argument("--keep-prompts", action="store_true", help="keep each request's messages in /_stub/stats")
    a = ap.parse_args()
    preds = Predictions(a.predictions)
    spec = a.systems or a.system
    if not spec:
        ap.error("give --system NAME or --systems A,B,...; known: " + ", ".join(preds.systems))
    systems = preds.parse_systems(spec)
    if systems is None or (a.system and len(systems) != 1):
        ap.error("unknown system in %r; known: %s" % (spec, ", ".join(preds.systems)))
    dev = os.path.join(a.dataset, "dev.json")
    index, _ = stublib.load_index([dev])
    source = ReplayAnswers(index, dev_indexes(dev), preds, systems, a.bare, a.keep_prompts)

    def ready():
        if a.verbose:
            sys.stderr.write("replay_stub: systems %s; %d systems, %d questions in %s\n"
                             % (",".join(systems), len(preds.sql), len(preds.questions), a.predictions))

    stublib.model_stub.serve(a, source, ready)


if __name__ == "__main__":
    main()
