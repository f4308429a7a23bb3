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
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from stublib import GoldAnswers, add_gold_arguments, load_index, model_stub, question_files  # noqa: E402


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
