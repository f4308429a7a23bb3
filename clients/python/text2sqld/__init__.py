"""text2sqld - a Python client for the text2sqld service (standard library only).

    from text2sqld import Client, ProblemError

    t2s = Client("http://127.0.0.1:8080", api_key="...")
    answer = t2s.query("concert_singer", "How many singers are there?")
    print(answer.sql, answer.rows, answer.confidence, answer.explanation)
"""

from .client import Client, CsvRows
from .errors import PROBLEM_PREFIX, ProblemError, Text2SqlError, TransportError
from .models import (MODELS, Answer, Column, Correction, DatabaseSchema, DatabaseSummary, DescribedColumn,
                     DescribedTable, DescribeResult, DescriptionOverride, DescriptionOverrides, EvidenceItem,
                     EvidenceResult, EvidenceValue, Event, Example, ExampleDeleted, ExampleList, ExecuteResult,
                     Feedback, FeedbackList, ForeignKey, LinkResult, Options, RefreshResult, SimilarExample, Table,
                     ValidationCheck, ValueProbe, decode)

__version__ = "0.1.0"

__all__ = ["Client", "CsvRows", "ProblemError", "TransportError", "Text2SqlError", "PROBLEM_PREFIX", "Options", "Event", "decode",
           "MODELS"] + [m.__name__ for m in MODELS]
