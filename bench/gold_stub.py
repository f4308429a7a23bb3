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
  POST /_stub/reset          forget the log

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
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "stub"))
from model_stub import count_tokens, hash_embedding  # noqa: E402

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


class State:
    def __init__(self, index, bare, dim, models, keep_prompts=False):
        self.index = index
        self.keep_prompts = keep_prompts
        self.bare = bare
        self.dim = dim
        self.models = models or ["gold-stub"]
        self.lock = threading.Lock()
        self.log = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "gold-stub/1"
    state = None

    def setup(self):
        super().setup()
        # Without this a keep-alive client sees 40 ms stalls (Nagle + delayed ACK).
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):
        if getattr(self.server, "verbose", False):
            sys.stderr.write("gold_stub: " + (fmt % args) + "\n")

    def send_json(self, status, obj):
        body = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/v1/models":
            self.send_json(200, {"object": "list",
                                 "data": [{"id": m, "object": "model", "owned_by": "gold-stub"} for m in self.state.models]})
        elif self.path == "/_stub/stats":
            with self.state.lock:
                log = list(self.state.log)
            matched = sum(1 for e in log if e["matched"])
            self.send_json(200, {"requests": len(log), "matched": matched, "unmatched": len(log) - matched, "log": log})
        elif self.path in ("/health", "/healthz"):
            self.send_json(200, {"status": "ok"})
        else:
            self.send_json(404, {"error": {"message": "no route " + self.path, "type": "not_found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if self.path == "/_stub/reset":
            with self.state.lock:
                self.state.log = []
            self.send_json(200, {"ok": True})
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self.send_json(400, {"error": {"message": "body is not a JSON object", "type": "invalid_request_error"}})
            return
        if self.path in ("/v1/chat/completions", "/chat/completions"):
            self.chat(body)
        elif self.path in ("/v1/embeddings", "/embeddings"):
            self.embeddings(body)
        else:
            self.send_json(404, {"error": {"message": "no route " + self.path, "type": "not_found"}})

    def chat(self, body):
        t0 = time.perf_counter()
        msgs = [m for m in (body.get("messages") or []) if isinstance(m, dict)]

        def content(m):
            c = m.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):  # content parts
                return "\n".join(p.get("text", "") for p in c if isinstance(p, dict) and isinstance(p.get("text"), str))
            return ""

        all_text = "\n".join(content(m) for m in msgs)
        users = [m for m in msgs if m.get("role") == "user"]
        hit = self.state.index.lookup(content(users[-1])) if users else None
        if hit is None:
            hit = self.state.index.lookup(all_text)
        answer_text = self.answer(hit)
        p, c = count_tokens(all_text), count_tokens(answer_text)
        model = body.get("model", "")
        answer = {
            "id": "chatcmpl-gold-%d" % int(time.time() * 1e6),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer_text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
        }
        entry = {"prompt_tokens": p, "prompt_chars": len(all_text), "completion_tokens": c,
                 "matched": hit is not None, "db_id": hit[0] if hit else None,
                 "question": hit[2] if hit else None,
                 "handler_ms": round((time.perf_counter() - t0) * 1000.0, 3)}
        if self.state.keep_prompts:
            entry["messages"] = msgs
        with self.state.lock:
            self.state.log.append(entry)
        if body.get("stream"):
            self.stream(answer, answer_text, model)
        else:
            self.send_json(200, answer)

    def answer(self, hit):
        """The reply to a prompt about hit ((db_id, sql, question) or None)."""
        sql = hit[1] if hit else UNMATCHED_SQL
        return sql if self.state.bare else "```sql\n%s\n```" % sql

    def stream(self, answer, text, model):
        """Server-sent events for clients that ask for stream=true."""
        chunks = [
            {"id": answer["id"], "object": "chat.completion.chunk", "created": answer["created"], "model": model,
             "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
            {"id": answer["id"], "object": "chat.completion.chunk", "created": answer["created"], "model": model,
             "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": answer["usage"]},
        ]
        body = "".join("data: %s\n\n" % json.dumps(c) for c in chunks) + "data: [DONE]\n\n"
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def embeddings(self, body):
        inputs = body.get("input", [])
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(s, str) for s in inputs):
            self.send_json(400, {"error": {"message": "input must be a string or a list of strings"}})
            return
        data = [{"object": "embedding", "index": i, "embedding": hash_embedding(s, self.state.dim)}
                for i, s in enumerate(inputs)]
        p = sum(count_tokens(s) for s in inputs)
        self.send_json(200, {"object": "list", "model": body.get("model", ""), "data": data,
                             "usage": {"prompt_tokens": p, "total_tokens": p}})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    verbose = False

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)) and not self.verbose:
            return
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True, help="0 picks a free port")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--questions", action="append", default=[], help="Spider/BIRD JSON question file (repeatable)")
    ap.add_argument("--dataset", action="append", default=[], help="dataset directory: loads its dev.json/train.json")
    ap.add_argument("--bare", action="store_true", help="answer bare SQL instead of a ```sql fence")
    ap.add_argument("--dim", type=int, default=64, help="embedding dimension")
    ap.add_argument("--model", action="append", default=[])
    ap.add_argument("--keep-prompts", action="store_true", help="keep each request's messages in /_stub/stats")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()

    files = list(a.questions)
    for d in a.dataset:
        for name in ("dev.json", "train.json"):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                files.append(p)
    if not files:
        ap.error("no question files: give --questions FILE or --dataset DIR")
    index = GoldIndex()
    total = 0
    for p in files:
        total += index.add_file(p)
    index.build()
    Handler.state = State(index, a.bare, a.dim, a.model, a.keep_prompts)
    server = Server((a.host, a.port), Handler)
    server.verbose = a.verbose
    sys.stdout.write("LISTENING %d\n" % server.server_address[1])
    sys.stdout.flush()
    if a.verbose:
        sys.stderr.write("gold_stub: %d questions (%d distinct texts) from %s\n" % (total, len(index.by_text), ", ".join(files)))
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
