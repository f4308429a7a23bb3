"""models.py - the service's answers as dataclasses.

Each class names the OpenAPI schema it reads (``__schema__``, in
openapi/openapi.json's components; tests/integration/test_python_client.py
checks that its fields are exactly that schema's properties, with matching
types).  Decoding tolerates change: a member the class does not know goes
to ``extra`` (a dict), and a member the answer lacks is None.  Nested
objects that have a class of their own are decoded into it (``_nested``);
the others stay plain dicts and lists.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type, TypeVar

T = TypeVar("T")

JSON = Any  # a value of a row: int, float, str, bool, None (or a list or dict for JSON columns)


def decode(cls: Type[T], data: Any) -> T:
    """data (a parsed JSON object) as cls; members cls lacks go to .extra."""
    if not isinstance(data, dict):
        raise TypeError("%s: expected a JSON object, got %s" % (cls.__name__, type(data).__name__))
    names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    nested = getattr(cls, "_nested", {})
    kwargs, extra = {}, {}
    for key, value in data.items():
        if key not in names:
            extra[key] = value
        elif key in nested and isinstance(value, list):
            kwargs[key] = [decode(nested[key], v) if isinstance(v, dict) else v for v in value]
        elif key in nested and isinstance(value, dict):
            kwargs[key] = decode(nested[key], value)
        else:
            kwargs[key] = value
    obj = cls(**kwargs)
    obj.extra = extra
    return obj


def _extra():
    return field(default_factory=dict, repr=False, compare=False)


@dataclass
class DatabaseSummary:
    __schema__ = "DatabaseSummary"
    name: Optional[str] = None
    engine: Optional[str] = None
    status: Optional[str] = None
    tables: Optional[int] = None
    schema_hash: Optional[str] = None
    introspected_at: Optional[str] = None
    error: Optional[str] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class ForeignKey:
    __schema__ = "ForeignKey"
    columns: Optional[List[str]] = None
    references: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class Column:
    __schema__ = "Column"
    name: Optional[str] = None
    type: Optional[str] = None
    nullable: Optional[bool] = None
    primary_key: Optional[bool] = None
    comment: Optional[str] = None
    samples: Optional[List[str]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class Table:
    __schema__ = "Table"
    _nested = {"columns": Column, "foreign_keys": ForeignKey}
    schema: Optional[str] = None
    name: Optional[str] = None
    qualified_name: Optional[str] = None
    kind: Optional[str] = None
    comment: Optional[str] = None
    row_count: Optional[int] = None
    row_count_estimated: Optional[bool] = None
    columns: Optional[List[Column]] = None
    primary_key: Optional[List[str]] = None
    foreign_keys: Optional[List[ForeignKey]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class DatabaseSchema:
    __schema__ = "DatabaseSchema"
    _nested = {"tables": Table}
    name: Optional[str] = None
    engine: Optional[str] = None
    schema_hash: Optional[str] = None
    introspected_at: Optional[str] = None
    introspection_ms: Optional[float] = None
    tables: Optional[List[Table]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class RefreshResult:
    __schema__ = "RefreshResult"
    name: Optional[str] = None
    schema_hash: Optional[str] = None
    previous_schema_hash: Optional[str] = None
    changed: Optional[bool] = None
    tables: Optional[int] = None
    introspection_ms: Optional[float] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class ExecuteResult:
    __schema__ = "ExecuteResult"
    columns: Optional[List[str]] = None
    column_types: Optional[List[Optional[str]]] = None
    rows: Optional[List[List[JSON]]] = None
    row_count: Optional[int] = None
    truncated: Optional[bool] = None
    truncated_by: Optional[str] = None
    elapsed_ms: Optional[float] = None
    limits: Optional[Dict[str, Any]] = None
    chart: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class ValidationCheck:
    __schema__ = "ValidationCheck"
    level: Optional[int] = None
    check: Optional[str] = None
    ok: Optional[bool] = None
    severity: Optional[str] = None
    detail: Optional[str] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class Correction:
    __schema__ = "Correction"
    round: Optional[int] = None
    check: Optional[str] = None
    level: Optional[int] = None
    error: Optional[str] = None
    sql: Optional[str] = None
    ok: Optional[bool] = None
    repair: Optional[str] = None
    chosen: Optional[bool] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class Answer:
    """The answer of /query (with rows) and /generate (without): the SQL, its
    explanation, checks and confidence, and for /query the rows."""
    __schema__ = ("GenerateResult", "QueryResult")
    _nested = {"validation": ValidationCheck, "corrections": Correction}
    database: Optional[str] = None
    question: Optional[str] = None
    sql: Optional[str] = None
    dialect: Optional[str] = None
    ok: Optional[bool] = None
    score: Optional[int] = None
    explanation: Optional[str] = None
    confidence: Optional[float] = None
    confidence_band: Optional[str] = None
    chart: Optional[Dict[str, Any]] = None
    generator: Optional[str] = None
    validation: Optional[List[ValidationCheck]] = None
    corrections: Optional[List[Correction]] = None
    cached: Optional[bool] = None
    budget_exhausted: Optional[str] = None
    example: Optional[Dict[str, Any]] = None
    candidates: Optional[List[Dict[str, Any]]] = None
    trace: Optional[Dict[str, Any]] = None
    columns: Optional[List[str]] = None
    column_types: Optional[List[Optional[str]]] = None
    rows: Optional[List[List[JSON]]] = None
    row_count: Optional[int] = None
    truncated: Optional[bool] = None
    truncated_by: Optional[str] = None
    elapsed_ms: Optional[float] = None
    limits: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class LinkResult:
    __schema__ = "LinkResult"
    database: Optional[str] = None
    question: Optional[str] = None
    user_evidence: Optional[str] = None
    mode: Optional[str] = None
    schema_hash: Optional[str] = None
    tables: Optional[List[Dict[str, Any]]] = None
    columns: Optional[List[Dict[str, Any]]] = None
    joins: Optional[List[Dict[str, Any]]] = None
    alternative_joins: Optional[List[Dict[str, Any]]] = None
    disconnected: Optional[List[str]] = None
    unknown_tables: Optional[List[str]] = None
    model_calls: Optional[int] = None
    tokens: Optional[Dict[str, Any]] = None
    timings_ms: Optional[Dict[str, Any]] = None
    index: Optional[Dict[str, Any]] = None
    fallback: Optional[str] = None
    fallbacks: Optional[List[Dict[str, Any]]] = None
    column_budget: Optional[Dict[str, Any]] = None
    relevance: Optional[Dict[str, Any]] = None
    candidates: Optional[List[Dict[str, Any]]] = None
    table_candidates: Optional[List[Dict[str, Any]]] = None
    fill: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class DescribedColumn:
    __schema__ = "DescribedColumn"
    name: Optional[str] = None
    description: Optional[str] = None
    source: Optional[str] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class DescribedTable:
    __schema__ = "DescribedTable"
    _nested = {"columns": DescribedColumn}
    name: Optional[str] = None
    description: Optional[str] = None
    source: Optional[str] = None
    columns: Optional[List[DescribedColumn]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class DescribeResult:
    __schema__ = "DescribeResult"
    _nested = {"tables": DescribedTable}
    database: Optional[str] = None
    schema_hash: Optional[str] = None
    tables: Optional[List[DescribedTable]] = None
    model_calls: Optional[int] = None
    model_errors: Optional[int] = None
    cache_hits: Optional[int] = None
    tokens: Optional[Dict[str, Any]] = None
    errors: Optional[List[str]] = None
    timings_ms: Optional[Dict[str, Any]] = None
    warning: Optional[str] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class DescriptionOverride:
    __schema__ = "DescriptionOverride"
    table: Optional[str] = None
    column: Optional[str] = None
    text: Optional[str] = None
    updated_at: Optional[str] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class DescriptionOverrides:
    __schema__ = "DescriptionOverrides"
    _nested = {"overrides": DescriptionOverride}
    database: Optional[str] = None
    overrides: Optional[List[DescriptionOverride]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class ValueProbe:
    __schema__ = "ValueProbe"
    sql: Optional[str] = None
    params: Optional[List[str]] = None
    how: Optional[str] = None
    rows: Optional[List[str]] = None
    elapsed_ms: Optional[float] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class EvidenceValue:
    __schema__ = "EvidenceValue"
    _nested = {"probe": ValueProbe}
    table: Optional[str] = None
    column: Optional[str] = None
    value: Optional[str] = None
    matched: Optional[str] = None
    score: Optional[float] = None
    source: Optional[str] = None
    probe: Optional[ValueProbe] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class EvidenceItem:
    __schema__ = "EvidenceItem"
    kind: Optional[str] = None
    text: Optional[str] = None
    source: Optional[str] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class SimilarExample:
    __schema__ = "SimilarExample"
    id: Optional[int] = None
    question: Optional[str] = None
    sql: Optional[str] = None
    score: Optional[float] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class EvidenceResult:
    __schema__ = "EvidenceResult"
    _nested = {"values": EvidenceValue, "evidence": EvidenceItem, "examples": SimilarExample}
    database: Optional[str] = None
    question: Optional[str] = None
    user_evidence: Optional[str] = None
    schema_hash: Optional[str] = None
    values: Optional[List[EvidenceValue]] = None
    evidence: Optional[List[EvidenceItem]] = None
    examples: Optional[List[SimilarExample]] = None
    partial: Optional[bool] = None
    value_index: Optional[str] = None
    value_index_stats: Optional[Dict[str, Any]] = None
    probes: Optional[int] = None
    model_calls: Optional[int] = None
    tokens: Optional[Dict[str, Any]] = None
    timings_ms: Optional[Dict[str, Any]] = None
    fallbacks: Optional[List[Dict[str, Any]]] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class Example:
    __schema__ = "Example"
    id: Optional[int] = None
    question: Optional[str] = None
    sql: Optional[str] = None
    created_at: Optional[str] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class ExampleList:
    __schema__ = "ExampleList"
    _nested = {"examples": Example}
    database: Optional[str] = None
    examples: Optional[List[Example]] = None
    total: Optional[int] = None
    limit: Optional[int] = None
    offset: Optional[int] = None
    truncated: Optional[bool] = None
    next_offset: Optional[int] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class ExampleDeleted:
    __schema__ = "ExampleDeleted"
    database: Optional[str] = None
    id: Optional[int] = None
    deleted: Optional[bool] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class Feedback:
    __schema__ = "Feedback"
    id: Optional[int] = None
    database: Optional[str] = None
    question: Optional[str] = None
    sql: Optional[str] = None
    correct: Optional[bool] = None
    note: Optional[str] = None
    example_id: Optional[int] = None
    created_at: Optional[str] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class FeedbackList:
    __schema__ = "FeedbackList"
    _nested = {"feedback": Feedback}
    feedback: Optional[List[Feedback]] = None
    total: Optional[int] = None
    limit: Optional[int] = None
    offset: Optional[int] = None
    truncated: Optional[bool] = None
    next_offset: Optional[int] = None
    extra: Dict[str, Any] = _extra()


@dataclass
class Event:
    """One server-sent event of POST /v1/query/stream: ``event`` is the stage
    (link, evidence, ..., then ``result`` or ``error``) and ``data`` its JSON."""
    event: str
    data: Any
    id: Optional[str] = None

    @property
    def answer(self) -> Optional[Answer]:
        """The Answer of a ``result`` event, else None."""
        return decode(Answer, self.data) if self.event == "result" and isinstance(self.data, dict) else None

    @property
    def problem(self):
        """The ProblemError of an ``error`` event, else None."""
        from .errors import ProblemError
        if self.event != "error":
            return None
        return ProblemError.from_body(self.data, int((self.data or {}).get("status") or 500))


@dataclass
class Options:
    """``options`` of /query and /generate; None means the service's default."""
    max_rounds: Optional[int] = None
    candidates: Optional[int] = None
    max_rows: Optional[int] = None
    timeout_ms: Optional[int] = None
    big_integers: Optional[str] = None
    generator: Optional[str] = None
    min_confidence: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


# Every class read from an answer, for the test that checks them against the OpenAPI document.
MODELS = (DatabaseSummary, ForeignKey, Column, Table, DatabaseSchema, RefreshResult, ExecuteResult, ValidationCheck,
          Correction, Answer, LinkResult, DescribedColumn, DescribedTable, DescribeResult, DescriptionOverride,
          DescriptionOverrides, ValueProbe, EvidenceValue, EvidenceItem, SimilarExample, EvidenceResult, Example,
          ExampleList, ExampleDeleted, Feedback, FeedbackList)
