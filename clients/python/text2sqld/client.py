"""client.py - Client: the text2sqld REST API (/v1) over urllib.

One method per operation of openapi/openapi.json; each returns the answer
decoded into its dataclass (models.py) and raises ProblemError for an error
status, TransportError when no answer could be read.  Thread-safe: a Client
holds no connection (one per call).
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Union

from . import models
from .errors import ProblemError, TransportError
from .models import (Answer, DatabaseSchema, DatabaseSummary, DescribeResult, DescriptionOverrides, EvidenceResult,
                     Event, Example, ExampleDeleted, ExampleList, ExecuteResult, Feedback, FeedbackList, LinkResult,
                     Options, RefreshResult, decode)

__all__ = ["Client", "CsvRows"]

History = Sequence[Mapping[str, str]]  # [{"question": ..., "sql": ...}], oldest first


class CsvRows(NamedTuple):
    """An answer's rows as CSV (execute_csv, query_csv): text (RFC 4180, CRLF records, the header
    record first), and truncated_by: "max_rows" or "max_bytes" when a cap cut the rows, else None.
    ``csv.reader(io.StringIO(rows.text))`` reads it back."""
    text: str
    truncated_by: Optional[str] = None


class Client:
    """A client of one text2sqld service.

    base_url is the service's address, with the path prefix of a gateway when
    there is one (``https://gw.example/t2s``): the client adds ``/v1``.
    api_key is sent as ``Authorization: Bearer``; timeout (seconds) bounds
    each call's connection and every read (a /query may take as long as its
    ``options.timeout_ms``: give it more).
    """

    # The OpenAPI document's operationId of each method (the /v1 API's; /mcp is for MCP clients).
    OPERATIONS = {
        "listDatabases": "databases", "getDatabase": "database", "refreshDatabase": "refresh",
        "executeSql": "execute", "linkSchema": "link", "describeSchema": "describe", "gatherEvidence": "evidence",
        "generateSql": "generate", "querySql": "query", "querySqlStream": "stream",
        "listDescriptionOverrides": "descriptions", "putDescriptionOverrides": "set_descriptions",
        "listExamples": "examples", "getExample": "example", "addExample": "add_example",
        "deleteExample": "delete_example", "addFeedback": "feedback", "listFeedback": "feedback_list",
        "getFeedback": "feedback_get", "getHealth": "health", "getReadiness": "ready",
    }

    def __init__(self, base_url: str, api_key: Optional[str] = None, timeout: float = 120.0,
                 headers: Optional[Mapping[str, str]] = None):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.headers = dict(headers or {})

    # ------------------------------------------------------------------ databases

    def databases(self) -> List[DatabaseSummary]:
        """GET /v1/databases: the databases this key may use."""
        body = self._call("GET", "/databases")
        return [decode(DatabaseSummary, d) for d in body.get("databases", [])]

    def database(self, name: str) -> DatabaseSchema:
        """GET /v1/databases/{name}: its schema (tables, columns, keys, samples)."""
        return decode(DatabaseSchema, self._call("GET", "/databases/" + _seg(name)))

    def refresh(self, name: str) -> RefreshResult:
        """POST /v1/databases/{name}/refresh (admin): introspect again."""
        return decode(RefreshResult, self._call("POST", "/databases/%s/refresh" % _seg(name)))

    # ------------------------------------------------------------------ the stages

    def execute(self, database: str, sql: str, max_rows: Optional[int] = None,
                big_integers: Optional[str] = None) -> ExecuteResult:
        """POST /v1/execute: one read-only statement's rows."""
        return decode(ExecuteResult, self._call("POST", "/execute", _body(
            database=database, sql=sql, max_rows=max_rows, big_integers=big_integers)))

    def execute_csv(self, database: str, sql: str, max_rows: Optional[int] = None) -> CsvRows:
        """POST /v1/execute answered as CSV (Accept: text/csv): RFC 4180 text, a header record then
        one record per row; ``truncated_by`` says which cap cut the rows (None: all of them)."""
        return self._csv("/execute", _body(database=database, sql=sql, max_rows=max_rows))

    def query_csv(self, database: str, question: str, evidence: Optional[str] = None,
                  history: Optional[History] = None, options: Union[Options, Mapping[str, Any], None] = None,
                  fresh: bool = False) -> CsvRows:
        """POST /v1/query answered as CSV: the rows of the answer's statement (a statement that did
        not run raises ProblemError ``no-rows``; the JSON answer says why)."""
        return self._csv("/query", _ask(database, question, evidence, history, options), fresh=fresh)

    def link(self, database: str, question: str, evidence: Optional[str] = None, top_k: Optional[int] = None,
             mode: Optional[str] = None, features: Optional[bool] = None) -> LinkResult:
        """POST /v1/link: the tables, columns and joins the question needs."""
        return decode(LinkResult, self._call("POST", "/link", _body(
            database=database, question=question, evidence=evidence, top_k=top_k, mode=mode, features=features)))

    def describe(self, database: str, tables: Optional[Sequence[str]] = None) -> DescribeResult:
        """POST /v1/describe: a description of each table and column."""
        return decode(DescribeResult, self._call("POST", "/describe", _body(
            database=database, tables=list(tables) if tables is not None else None)))

    def evidence(self, database: str, question: str, evidence: Optional[str] = None) -> EvidenceResult:
        """POST /v1/evidence: the values, synonyms and examples a question refers to."""
        return decode(EvidenceResult, self._call("POST", "/evidence", _body(
            database=database, question=question, evidence=evidence)))

    def generate(self, database: str, question: str, evidence: Optional[str] = None,
                 history: Optional[History] = None, options: Union[Options, Mapping[str, Any], None] = None,
                 fresh: bool = False) -> Answer:
        """POST /v1/generate: the SQL for a question, checked, without its rows.
        fresh=True asks past the answer cache (Cache-Control: no-cache)."""
        return decode(Answer, self._call("POST", "/generate", _ask(database, question, evidence, history, options),
                                         fresh=fresh))

    def query(self, database: str, question: str, evidence: Optional[str] = None,
              history: Optional[History] = None, options: Union[Options, Mapping[str, Any], None] = None,
              fresh: bool = False) -> Answer:
        """POST /v1/query: the SQL for a question, its explanation, confidence and rows."""
        return decode(Answer, self._call("POST", "/query", _ask(database, question, evidence, history, options),
                                         fresh=fresh))

    def stream(self, database: str, question: str, evidence: Optional[str] = None,
               history: Optional[History] = None, options: Union[Options, Mapping[str, Any], None] = None,
               fresh: bool = False) -> Iterator[Event]:
        """POST /v1/query/stream: yields each stage's Event as the service sends it;
        the last is ``result`` (``event.answer``) or ``error`` (``event.problem``).
        A problem found before the stream starts is raised as ProblemError."""
        resp = self._open("POST", "/query/stream", _ask(database, question, evidence, history, options),
                          accept="text/event-stream", fresh=fresh)
        with resp:
            yield from _events(resp)

    # ------------------------------------------------------------------ descriptions, examples, feedback

    def descriptions(self, name: str) -> DescriptionOverrides:
        """GET /v1/databases/{name}/descriptions: the stored description overrides."""
        return decode(DescriptionOverrides, self._call("GET", "/databases/%s/descriptions" % _seg(name)))

    def set_descriptions(self, name: str, descriptions: Sequence[Mapping[str, Any]]) -> DescriptionOverrides:
        """PUT /v1/databases/{name}/descriptions (admin): [{table, column?, text}] (text None removes one)."""
        return decode(DescriptionOverrides, self._call("PUT", "/databases/%s/descriptions" % _seg(name),
                                                       {"descriptions": [dict(d) for d in descriptions]}))

    def examples(self, name: str, limit: Optional[int] = None, offset: Optional[int] = None) -> ExampleList:
        """GET /v1/databases/{name}/examples: one page of the stored examples."""
        return decode(ExampleList, self._call("GET", "/databases/%s/examples%s" % (
            _seg(name), _query(limit=limit, offset=offset))))

    def example(self, name: str, example_id: int) -> Example:
        """GET /v1/databases/{name}/examples/{id}."""
        return decode(Example, self._call("GET", "/databases/%s/examples/%d" % (_seg(name), int(example_id))))

    def add_example(self, name: str, question: str, sql: str) -> Example:
        """POST /v1/databases/{name}/examples (admin): store a question and its SQL."""
        return decode(Example, self._call("POST", "/databases/%s/examples" % _seg(name),
                                          {"question": question, "sql": sql}))

    def delete_example(self, name: str, example_id: int) -> ExampleDeleted:
        """DELETE /v1/databases/{name}/examples/{id} (admin)."""
        return decode(ExampleDeleted, self._call("DELETE", "/databases/%s/examples/%d" % (_seg(name),
                                                                                          int(example_id))))

    def feedback(self, database: str, question: str, sql: str, correct: bool, note: Optional[str] = None) -> Feedback:
        """POST /v1/feedback: a verdict on an answer (correct: true stores it as an example; needs admin)."""
        return decode(Feedback, self._call("POST", "/feedback", _body(
            database=database, question=question, sql=sql, correct=correct, note=note)))

    def feedback_list(self, database: Optional[str] = None, correct: Optional[bool] = None,
                      limit: Optional[int] = None, offset: Optional[int] = None) -> FeedbackList:
        """GET /v1/feedback (admin): one page of the stored verdicts."""
        return decode(FeedbackList, self._call("GET", "/feedback" + _query(
            database=database, correct=None if correct is None else ("true" if correct else "false"),
            limit=limit, offset=offset)))

    def feedback_get(self, feedback_id: int) -> Feedback:
        """GET /v1/feedback/{id}."""
        return decode(Feedback, self._call("GET", "/feedback/%d" % int(feedback_id)))

    # ------------------------------------------------------------------ operations (no /v1, no key needed)

    def health(self) -> Dict[str, Any]:
        """GET /healthz."""
        return self._call("GET", "/healthz", versioned=False)

    def ready(self) -> Dict[str, Any]:
        """GET /readyz: the readiness report (a 503 report is returned too, not raised)."""
        try:
            return self._call("GET", "/readyz", versioned=False)
        except ProblemError as e:
            if e.status == 503 and "checks" in e.extensions:
                return e.extensions
            raise

    # ------------------------------------------------------------------ HTTP

    def _open(self, method: str, path: str, body: Any = None, accept: str = "application/json",
              fresh: bool = False, versioned: bool = True):
        url = self.base_url + ("/v1" if versioned else "") + path
        headers = dict(self.headers)
        headers["Accept"] = accept
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        if fresh:
            headers["Cache-Control"] = "no-cache"
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            raise _problem(e) from None
        except (urllib.error.URLError, socket.timeout, OSError) as e:
            raise TransportError("%s %s: %s" % (method, url, getattr(e, "reason", e))) from e

    def _csv(self, path: str, body: Any, fresh: bool = False) -> CsvRows:
        resp = self._open("POST", path, body, accept="text/csv", fresh=fresh)
        with resp:
            try:
                raw = resp.read()
            except (socket.timeout, OSError) as e:
                raise TransportError("POST %s: %s" % (path, e)) from e
            truncated_by = resp.headers.get("X-Truncated-By")
        return CsvRows(text=raw.decode("utf-8"), truncated_by=truncated_by)

    def _call(self, method: str, path: str, body: Any = None, fresh: bool = False, versioned: bool = True) -> Any:
        resp = self._open(method, path, body, fresh=fresh, versioned=versioned)
        with resp:
            try:
                raw = resp.read()
            except (socket.timeout, OSError) as e:
                raise TransportError("%s %s: %s" % (method, path, e)) from e
        try:
            return json.loads(raw.decode("utf-8")) if raw else None
        except ValueError as e:
            raise TransportError("%s %s: the answer is not JSON: %s" % (method, path, e)) from e


def _problem(e: urllib.error.HTTPError) -> ProblemError:
    try:
        raw = e.read()
    except OSError:
        raw = b""
    finally:
        e.close()
    text = raw.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except ValueError:
        body = text
    retry = e.headers.get("Retry-After") if e.headers else None
    return ProblemError.from_body(body, e.code, e.reason if isinstance(e.reason, str) else "",
                                  int(retry) if retry and retry.isdigit() else None)


def _events(resp) -> Iterator[Event]:
    """The server-sent events of resp (text/event-stream, read line by line)."""
    name, data, event_id = "message", [], None
    for raw in resp:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                text = "\n".join(data)
                try:
                    value = json.loads(text)
                except ValueError:
                    value = text
                yield Event(name, value, event_id)
            name, data = "message", []
            continue
        if line.startswith(":"):
            continue
        fname, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if fname == "event":
            name = value
        elif fname == "data":
            data.append(value)
        elif fname == "id":
            event_id = value


def _seg(name: str) -> str:
    return urllib.parse.quote(str(name), safe="")


def _body(**fields) -> Dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _query(**args) -> str:
    args = {k: v for k, v in args.items() if v is not None}
    return "?" + urllib.parse.urlencode(args) if args else ""


def _ask(database, question, evidence, history, options) -> Dict[str, Any]:
    if isinstance(options, models.Options):
        options = options.to_dict()
    return _body(database=database, question=question, evidence=evidence,
                 history=[dict(h) for h in history] if history is not None else None,
                 options=dict(options) if options is not None else None)
