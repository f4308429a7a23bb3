"""errors.py - what the client raises.

ProblemError: the service answered with an error status; it carries the
RFC 9457 problem body's members (type, title, status, detail, instance, and
every other member in ``extensions``: request_id, sql, validation, ...).
TransportError: no answer at all (connection refused, timeout, a body that
is not what the protocol says).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

PROBLEM_PREFIX = "urn:text2sqld:problem:"


class Text2SqlError(Exception):
    """The base of the client's errors."""


class TransportError(Text2SqlError):
    """The service could not be reached, or its answer could not be read."""


class ProblemError(Text2SqlError):
    """An RFC 9457 problem answered by the service (any 4xx or 5xx status).

    ``type`` is a URN such as ``urn:text2sqld:problem:not-found`` (``slug`` is
    its last part, ``not-found``); switch on it, not on ``title`` or
    ``detail``.  ``extensions`` holds the members beyond the five of RFC 9457
    (``request_id`` is also an attribute of its own), e.g. ``sql`` and
    ``validation`` of a ``generation-failed`` problem.
    """

    # The members of the problem body the client reads as attributes (the OpenAPI Problem schema's).
    FIELDS = ("type", "title", "status", "detail", "instance", "request_id")

    def __init__(self, type: str, title: str, status: int, detail: str, instance: Optional[str] = None,
                 request_id: Optional[str] = None, extensions: Optional[Dict[str, Any]] = None,
                 retry_after: Optional[int] = None):
        super().__init__("%s %s: %s" % (status, type, detail))
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.instance = instance
        self.request_id = request_id
        self.extensions = dict(extensions or {})
        self.retry_after = retry_after  # seconds, from the Retry-After header (429, 503), when sent

    @property
    def slug(self) -> str:
        return self.type[len(PROBLEM_PREFIX):] if self.type.startswith(PROBLEM_PREFIX) else self.type

    @classmethod
    def from_body(cls, body: Any, status: int, reason: str = "", retry_after: Optional[int] = None) -> "ProblemError":
        """The problem of a body (parsed JSON or None); one made from the status line when it is not a problem."""
        if isinstance(body, dict) and isinstance(body.get("type"), str) and isinstance(body.get("title"), str):
            rest = {k: v for k, v in body.items() if k not in cls.FIELDS}
            return cls(body["type"], body["title"], int(body.get("status") or status), str(body.get("detail", "")),
                       body.get("instance"), body.get("request_id"), rest, retry_after)
        text = body if isinstance(body, str) else ""
        rest = body if isinstance(body, dict) else None  # a JSON answer that is not a problem (a 503 /readyz report)
        return cls("about:blank", reason or "HTTP error", status, text[:500], extensions=rest, retry_after=retry_after)

    def to_dict(self) -> Dict[str, Any]:
        """The problem body again."""
        d = {k: getattr(self, k) for k in self.FIELDS if getattr(self, k) is not None}
        d.update(self.extensions)
        return d
