#!/usr/bin/env python3
"""model_stub.py - a scripted stand-in for OpenAI-compatible model servers.

Tests start it in place of vLLM, llama.cpp, Ollama, TGI or TEI.  It speaks
the same protocol as those servers do for text2sqld:

  POST /v1/chat/completions   answers from the fixture rules (default: a fixed text)
  POST /v1/embeddings         answers from the rules, else deterministic hashed vectors
  GET  /v1/models             lists the models named in the rules and --model

and can be slow, fail, hang, trickle, cut a body short, send a huge one or
answer garbage, as the rules say.  Control
routes for tests:

  GET  /_stub/requests        every request received: method, path, headers
                              (Authorization value removed), auth flags, body, ts
  POST /_stub/rules           replace the rules: {"rules": [...]} or a bare list
  POST /_stub/reset           forget requests, restore the startup fixture

Usage: model_stub.py --port P [--host H] [--fixture FILE.json] [--dim N]
                     [--model NAME]... [--api-key KEY [--require-api-key]]
                     [--keep-requests N]
With --port 0 a free port is picked.  The first line on stdout is always
"LISTENING <port>".  The fixture format is described in README.md beside
this file.  Python 3 standard library only.

The server is one for every stub: what answers a chat request that no rule
answers is a pluggable answer source (ScriptedAnswers here: the fixture's
default_content; bench/gold_stub.py's GoldAnswers: the gold SQL of the
question asked; bench/gold_tables_stub.py's: its gold tables).  serve()
runs the server with a source; add_server_arguments() gives a command line
the options every stub shares.
"""

import argparse
import copy
import hashlib
import json
import math
import re
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HANG_MAX_S = 300.0


class ScriptedAnswers:
    """The answer source of the tests: a chat request no rule answers gets the
    fixture's default_content.  Other sources (bench/gold_stub.py) override
    chat() and the class attributes."""

    name = "model_stub"          # log prefix
    server_version = "model-stub/1"
    owned_by = "stub"            # /v1/models
    default_models = ["stub-model"]  # /v1/models when neither --model nor a rule names one
    lenient_paths = False        # also /chat/completions, /embeddings and /healthz (base URLs without /v1)
    streams = False              # "stream": true answered as server-sent events
    keep_requests = None         # default of --keep-requests (None: all)

    def chat(self, state, body, msgs, text):
        """The answer text of a chat request that no rule answered."""
        return state.default_content

    def stats(self):
        """The body of GET /_stub/stats, or None (no such route)."""
        return None

    def reset(self):
        """POST /_stub/reset: forget what the source logged."""


class StubState:
    """Rules and the request log, shared by all handler threads under a lock."""

    def __init__(self, fixture, dim, models, api_key, require_api_key, source=None):
        self.lock = threading.Lock()
        self.source = source or ScriptedAnswers()
        self.fixture = fixture
        self.dim = dim
        self.extra_models = models
        self.api_key = api_key
        self.require_api_key = require_api_key
        self.server = None  # --server KIND: only that server's routes
        self.keep_requests = None  # --keep-requests N: only the last N are kept (None: all)
        self.requests = []
        self.big_body_sent = []  # bytes of each body_bytes answer actually sent
        self.set_fixture(fixture)

    def set_fixture(self, fixture):
        """Install fixture's rules (each with fresh use counters)."""
        rules = fixture.get("rules", []) if isinstance(fixture, dict) else fixture
        self.rules = [{"rule": r, "uses": 0} for r in copy.deepcopy(rules)]
        if isinstance(fixture, dict):
            self.default_content = fixture.get("default_content", "stub reply")
            self.default_embedding = fixture.get("default_embedding", "hash")
        else:
            self.default_content = "stub reply"
            self.default_embedding = "hash"

    def take_rule(self, path, model, text):
        """The first live rule matching, with its use number (0-based)."""
        with self.lock:
            for entry in self.rules:
                rule = entry["rule"]
                m = rule.get("match", {})
                if "path" in m and m["path"] != path:
                    continue
                if "model" in m and m["model"] != model:
                    continue
                if "contains" in m and m["contains"] not in text:
                    continue
                if "regex" in m and not re.search(m["regex"], text):
                    continue
                respond = rule.get("respond", {})
                times = respond.get("times")
                if times is not None and entry["uses"] >= times:
                    continue
                use = entry["uses"]
                entry["uses"] += 1
                return respond, use
        return None, 0

    def models(self):
        names = list(self.extra_models)
        with self.lock:
            for entry in self.rules:
                name = entry["rule"].get("match", {}).get("model")
                if name and name not in names:
                    names.append(name)
        return names or list(self.source.default_models)


def hash_embedding(text, dim):
    """Deterministic L2-normalised vector from hashed lower-cased word tokens."""
    vec = [0.0] * dim
    for token in re.findall(r"[a-z0-9]+", text.lower()):
        h = hashlib.sha256(token.encode("utf-8")).digest()
        bucket = int.from_bytes(h[:4], "little") % dim
        vec[bucket] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0.0:
        vec[0] = 1.0
        return vec
    return [x / norm for x in vec]


def count_tokens(text):
    return len(text.split())


def message_text(msg):
    """A chat message's text: its content string, or its text parts joined by newlines."""
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(p["text"] for p in c if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


# Unversioned paths some clients use (a base URL without /v1), for sources with lenient_paths.
LENIENT_PATHS = {"/chat/completions": "/v1/chat/completions", "/embeddings": "/v1/embeddings",
                 "/healthz": "/health"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "model-stub/1"
    state = None  # set by main()

    def setup(self):
        super().setup()
        # Without this a keep-alive client sees 40 ms stalls (Nagle + delayed ACK).
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):  # quiet unless --verbose
        if getattr(self.server, "verbose", False):
            sys.stderr.write(self.state.source.name + ": " + (fmt % args) + "\n")

    def route(self):
        """The request path, unversioned paths mapped for lenient sources."""
        if self.state.source.lenient_paths:
            return LENIENT_PATHS.get(self.path, self.path)
        return self.path

    # ---- plumbing ----------------------------------------------------

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send_bytes(self, status, body, ctype="application/json", extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, status, obj, extra=None):
        self.send_bytes(status, json.dumps(obj).encode("utf-8"), extra=extra)

    def record(self, raw):
        auth = self.headers.get("Authorization")
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        entry = {
            "method": self.command,
            "path": self.path,
            "client": "%s:%d" % (self.client_address[0], self.client_address[1]),
            "headers": {k: v for k, v in self.headers.items() if k.lower() != "authorization"},
            "auth": auth is not None,
            "auth_matches": (auth == "Bearer " + self.state.api_key) if self.state.api_key else None,
            "body": body,
            "ts": time.time(),
        }
        with self.state.lock:
            self.state.requests.append(entry)
            keep = self.state.keep_requests
            if keep is not None and len(self.state.requests) > keep:
                del self.state.requests[:len(self.state.requests) - keep]
        return body

    def hang(self):
        """Answer nothing until the client gives up (or HANG_MAX_S passes)."""
        deadline = time.monotonic() + HANG_MAX_S
        sock = self.connection
        while time.monotonic() < deadline:
            readable, _, _ = select.select([sock], [], [], 0.2)
            if readable:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        break
                except OSError:
                    break
        self.close_connection = True

    # ---- routes ------------------------------------------------------

    def route_missing(self, method):
        """True (after a 404) when the --server kind has no such route."""
        served = SERVER_ROUTES.get(self.state.server)
        if served is None or self.path.startswith("/_stub/") or (method, self.path) in served:
            return False
        self.send_json(404, {"error": {"message": "no route " + self.path + " on " + self.state.server,
                                       "type": "not_found"}})
        return True

    def do_GET(self):
        if not self.path.startswith("/_stub/"):
            self.record(b"")
        if self.route_missing("GET"):
            return
        path = self.route()
        stats = self.state.source.stats() if path == "/_stub/stats" else None
        if path == "/_stub/requests":
            with self.state.lock:
                reqs = list(self.state.requests)
                sent = list(self.state.big_body_sent)
            self.send_json(200, {"requests": reqs, "big_body_sent": sent})
        elif stats is not None:
            self.send_json(200, stats)
        elif path == "/v1/models":
            if self.refuse_auth():
                return
            data = [{"id": m, "object": "model", "owned_by": self.state.source.owned_by} for m in self.state.models()]
            self.send_json(200, {"object": "list", "data": data})
        elif path == "/health":
            self.send_json(200, {"status": "ok"})
        else:
            self.send_json(404, {"error": {"message": "no route " + self.path, "type": "not_found"}})

    def do_POST(self):
        raw = self.read_body()
        if self.path == "/_stub/rules":
            try:
                fixture = json.loads(raw)
            except ValueError as e:
                self.send_json(400, {"error": {"message": "bad rules: %s" % e}})
                return
            with self.state.lock:
                self.state.set_fixture(fixture)
            self.send_json(200, {"ok": True})
            return
        if self.path == "/_stub/reset":
            with self.state.lock:
                self.state.requests = []
                self.state.big_body_sent = []
                self.state.set_fixture(self.state.fixture)
            self.state.source.reset()
            self.send_json(200, {"ok": True})
            return
        body = self.record(raw)
        if self.route_missing("POST") or self.refuse_auth():
            return
        if not isinstance(body, dict):
            self.send_json(400, {"error": {"message": "body is not a JSON object", "type": "invalid_request_error"}})
            return
        if self.route() == "/v1/chat/completions":
            self.chat(body)
        elif self.route() == "/v1/embeddings":
            self.embeddings(body)
        else:
            self.send_json(404, {"error": {"message": "no route " + self.path, "type": "not_found"}})

    def refuse_auth(self):
        st = self.state
        if st.api_key and st.require_api_key and \
                self.headers.get("Authorization") != "Bearer " + st.api_key:
            self.send_json(401, {"error": {"message": "invalid api key", "type": "auth_error"}})
            return True
        return False

    def send_head(self, status, length, extra=None):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length))
        for k, v in (extra or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.flush()

    def trickle(self, status, body, per_s, extra):
        """The head at once, then body at per_s bytes a second until the client goes away."""
        self.send_head(status, len(body), extra)
        pause = 1.0 / max(per_s, 1)
        for i in range(len(body)):
            try:
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
            except OSError:
                break
            time.sleep(pause)
        self.close_connection = True

    def big_body(self, status, size, extra):
        """A body of size bytes (a chat answer whose content never ends), streamed
        in 64 KiB chunks without holding it in memory, until the client goes away."""
        prefix = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
        self.send_head(status, size, extra)
        chunk = b"x" * 65536
        sent = 0
        try:
            self.wfile.write(prefix[:size])
            sent = min(len(prefix), size)
            while sent < size:
                n = min(len(chunk), size - sent)
                self.wfile.write(chunk[:n])
                sent += n
            self.wfile.flush()
        except OSError:
            pass
        with self.state.lock:
            self.state.big_body_sent.append(sent)
        self.close_connection = True

    def apply_common(self, respond):
        """delay, hang, close, trickle, body_bytes, truncate_bytes, raw_body,
        non-200 status.  True when the answer is sent."""
        if respond.get("delay_ms"):
            time.sleep(respond["delay_ms"] / 1000.0)
        if respond.get("hang"):
            self.hang()
            return True
        if respond.get("close"):
            self.close_connection = True  # no answer at all: the client sees the connection end
            return True
        status = respond.get("status", 200)
        extra = {}
        if "retry_after" in respond:
            extra["Retry-After"] = respond["retry_after"]
        if respond.get("body_bytes"):
            self.big_body(status, int(respond["body_bytes"]), extra)
            return True
        if "raw_body" in respond and respond.get("trickle_bytes_per_s"):
            self.trickle(status, respond["raw_body"].encode("utf-8"), float(respond["trickle_bytes_per_s"]), extra)
            return True
        if "raw_body" in respond and "truncate_bytes" in respond:
            body = respond["raw_body"].encode("utf-8")
            self.send_head(status, len(body), extra)
            self.wfile.write(body[:int(respond["truncate_bytes"])])
            self.wfile.flush()
            self.close_connection = True  # Content-Length promised more than was sent
            return True
        if "raw_body" in respond:
            self.send_bytes(status, respond["raw_body"].encode("utf-8"), extra=extra)
            return True
        if status != 200:
            msg = respond.get("content") or "stub error %d" % status
            self.send_json(status, {"error": {"message": msg, "type": "stub_error", "code": status}},
                           extra=extra)
            return True
        return False

    def chat(self, body):
        model = body.get("model", "")
        msgs = [m for m in (body.get("messages") or []) if isinstance(m, dict)]
        text = "\n".join(message_text(m) for m in msgs)
        respond, use = self.state.take_rule("/v1/chat/completions", model, text)
        respond = respond or {}
        if self.apply_common(respond):
            return
        if "sequence" in respond and respond["sequence"]:
            seq = respond["sequence"]
            content = seq[min(use, len(seq) - 1)]
        elif "content" in respond:
            content = respond["content"]
        else:
            content = self.state.source.chat(self.state, body, msgs, text)
        content = content * int(respond.get("repeat", 1))
        answer = {
            "id": "chatcmpl-stub-%d" % int(time.time() * 1e6),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": respond.get("finish_reason", "stop")}],
        }
        if body.get("logprobs") is True and respond.get("logprob", -0.05) is not None:
            # OpenAI's shape: one entry per answer token (here: per whitespace-separated word).
            lp = float(respond.get("logprob", -0.05))
            answer["choices"][0]["logprobs"] = {"content": [{"token": w, "logprob": lp, "bytes": None,
                                                             "top_logprobs": []} for w in content.split()]}
        usage = respond.get("usage", "auto")
        if usage == "auto":
            p, c = count_tokens(text), count_tokens(content)
            answer["usage"] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        elif usage is not None:
            answer["usage"] = usage
        if body.get("stream") and self.state.source.streams:
            self.stream(answer, content, model)
        else:
            self.send_json(200, answer)

    def stream(self, answer, text, model):
        """The answer as server-sent events (two chunks, then [DONE])."""
        head = {"id": answer["id"], "object": "chat.completion.chunk", "created": answer["created"], "model": model}
        chunks = [dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": text},
                                       "finish_reason": None}]),
                  dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": answer["choices"][0]["finish_reason"]}],
                       usage=answer.get("usage"))]
        body = "".join("data: %s\n\n" % json.dumps(c) for c in chunks) + "data: [DONE]\n\n"
        self.send_bytes(200, body.encode("utf-8"), ctype="text/event-stream")

    def embeddings(self, body):
        model = body.get("model", "")
        inputs = body.get("input", [])
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(s, str) for s in inputs):
            self.send_json(400, {"error": {"message": "input must be a string or a list of strings"}})
            return
        text = "\n".join(inputs)
        respond, _ = self.state.take_rule("/v1/embeddings", model, text)
        respond = respond or {}
        if self.apply_common(respond):
            return
        dim = int(respond.get("dim", self.state.dim))
        if "embeddings" in respond:
            vectors = respond["embeddings"]
        else:
            vectors = [hash_embedding(s, dim) for s in inputs]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        if respond.get("reverse"):
            data.reverse()
        if respond.get("no_index"):
            for d in data:
                del d["index"]
        p = sum(count_tokens(s) for s in inputs)
        answer = {"object": "list", "model": model, "data": data,
                  "usage": {"prompt_tokens": p, "total_tokens": p}}
        self.send_json(200, answer)


class StubServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    verbose = False

    def handle_error(self, request, client_address):
        """Clients that hang up (timeouts, oversized bodies) are expected."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)) and not self.verbose:
            return
        super().handle_error(request, client_address)


# The routes each real server offers (--server KIND), as far as text2sqld uses them: its
# OpenAI-compatible /v1 routes and its health route.  Without --server every route is served.
# TEI serves embeddings only and has no /v1/models; TGI's Messages API has chat but no
# embeddings and (in the versions this was written against) no /v1/models either.
SERVER_ROUTES = {
    "vllm": {("GET", "/v1/models"), ("POST", "/v1/chat/completions"), ("POST", "/v1/embeddings"),
             ("GET", "/health")},
    "llama.cpp": {("GET", "/v1/models"), ("POST", "/v1/chat/completions"), ("POST", "/v1/embeddings"),
                  ("GET", "/health")},
    "ollama": {("GET", "/v1/models"), ("POST", "/v1/chat/completions"), ("POST", "/v1/embeddings")},
    "tgi": {("POST", "/v1/chat/completions"), ("GET", "/health")},
    "tei": {("POST", "/v1/embeddings"), ("GET", "/health")},
}


def add_server_arguments(ap, default_dim=64):
    """The options every stub's command line has."""
    ap.add_argument("--port", type=int, required=True, help="0 picks a free port")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--fixture", help="rules (README.md): fault injection, scripted answers")
    ap.add_argument("--dim", type=int, default=default_dim, help="embedding dimension")
    ap.add_argument("--model", action="append", default=[])
    ap.add_argument("--api-key")
    ap.add_argument("--require-api-key", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--server", choices=sorted(SERVER_ROUTES),
                    help="serve only the routes of this server (404 for the others)")
    ap.add_argument("--keep-requests", type=int, default=None,
                    help="keep only the last N requests for /_stub/requests (long load runs; default: all)")


def serve(args, source, ready=None):
    """Runs the stub with answer source `source` and the options of
    add_server_arguments() until interrupted; "LISTENING <port>" first.
    ready(), when given, runs after that line (a startup message)."""
    fixture = {"rules": []}
    if args.fixture:
        with open(args.fixture, encoding="utf-8") as f:
            fixture = json.load(f)
    state = StubState(fixture, args.dim, args.model, args.api_key, args.require_api_key, source)
    state.server = args.server
    keep = args.keep_requests if args.keep_requests is not None else source.keep_requests
    state.keep_requests = None if keep is None else max(0, keep)
    handler = type("SourceHandler", (Handler,), {"state": state, "server_version": source.server_version})
    server = StubServer((args.host, args.port), handler)
    server.verbose = args.verbose
    sys.stdout.write("LISTENING %d\n" % server.server_address[1])
    sys.stdout.flush()
    if ready:
        ready()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def main():
    ap = argparse.ArgumentParser(description="OpenAI-compatible model server stub")
    add_server_arguments(ap)
    serve(ap.parse_args(), ScriptedAnswers())


if __name__ == "__main__":
    main()
