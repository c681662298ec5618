"""The one HTTP transport every client here uses: timeouts on every call, retries with backoff, error mapping.

Retry rules (why they differ per call):

* ``Retry.ALWAYS`` is for calls that are safe to repeat (GETs, acks, enqueues sent with an idempotency key):
  they are retried on any transport error and on the statuses of :attr:`RetryPolicy.statuses` (408, 429 and
  5xx by default).
* ``Retry.UNSENT`` is for calls that must not run twice (a reward adds a span, a weights post loads
  weights): they are retried only when the gateway surely did nothing, i.e. the connection could not be
  opened, or it answered 429 (paused) or 503 (refused before doing anything).
"""

from __future__ import annotations

import enum
import http.client
import json
import logging
import os
import random
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import urlencode, urlsplit

from .errors import RequestTimeoutError, TransportError, error_from_response

__all__ = ["RetryPolicy", "Retry", "HttpClient", "Response"]

_log = logging.getLogger("rollgate")

#: What the gateway refuses before doing any work (paused for a weight swap; no backend / store down).
_UNPROCESSED_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    """How failed calls are retried.

    Attributes:
        max_attempts: tries in all, the first included (1 = never retry).
        initial_backoff_s: wait before the second try; doubled (``multiplier``) each further try.
        max_backoff_s: cap of one wait, also applied to the gateway's ``retry-after`` hint.
        multiplier: growth factor between waits.
        jitter: +/- fraction of random spread on each wait, so many trainers or agents do not retry in step.
        statuses: HTTP statuses retried for calls that are safe to repeat.
    """

    max_attempts: int = 4
    initial_backoff_s: float = 0.25
    max_backoff_s: float = 8.0
    multiplier: float = 2.0
    jitter: float = 0.2
    statuses: frozenset[int] = field(default_factory=lambda: frozenset({408, 429, 500, 502, 503, 504}))

    def delay_s(self, attempt: int, retry_after_s: float | None = None) -> float:
        """Wait before try ``attempt + 1`` (``attempt`` counts from 1)."""
        base = min(self.max_backoff_s, self.initial_backoff_s * self.multiplier ** (attempt - 1))
        spread = base * self.jitter * (2 * random.random() - 1)
        delay = max(0.0, base + spread)
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, self.max_backoff_s))
        return delay


class Retry(enum.Enum):
    """Which failures of one call may be retried (see the module docstring)."""

    ALWAYS = "always"
    UNSENT = "unsent"


@dataclass(frozen=True)
class Response:
    """A successful response. ``headers`` has lower-case names."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON (None for an empty body)."""
        if not self.body:
            return None
        return json.loads(self.body.decode("utf-8"))


class _NotSent(Exception):
    """The connection could not be opened: the request never reached the gateway."""


def client_from_env(
    base_url: str | None,
    *,
    api_key: str | None,
    timeout_s: float,
    retry: "RetryPolicy | None",
) -> "HttpClient":
    """An HttpClient for the gateway at ``base_url`` (default ``$ROLLGATE_GATEWAY_URL``), authenticated with
    ``api_key`` (default ``$ROLLGATE_API_KEY``): the one place the clients read those variables."""
    url = base_url or os.environ.get("ROLLGATE_GATEWAY_URL")
    if not url:
        raise ValueError("base_url is required (or set ROLLGATE_GATEWAY_URL)")
    key = api_key if api_key is not None else os.environ.get("ROLLGATE_API_KEY")
    return HttpClient(url, api_key=key, timeout_s=timeout_s, retry=retry)


class HttpClient:
    """A small blocking HTTP client bound to one base URL.

    One connection per call: a trainer makes one call per step, and a fresh connection never trips over a
    keep-alive socket the gateway already closed. No per-call state is kept on the instance, so threads may
    share one.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        retry: RetryPolicy | None = None,
        user_agent: str = "rollgate-python/0.1",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self.base_url = f"{parts.scheme}://{parts.netloc}{self._prefix}"
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.retry = retry if retry is not None else RetryPolicy()
        self._user_agent = user_agent
        self._sleep = sleep

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        retry: Retry = Retry.ALWAYS,
        ok_statuses: Sequence[int] = (200, 201, 204),
    ) -> Response:
        """Sends one request (retrying as ``retry`` allows) and returns the response.

        Raises:
            APIError: a subclass per status, for any status outside ``ok_statuses`` (after retries).
            RequestTimeoutError: no response within ``timeout_s`` (after retries).
            TransportError: the connection failed (after retries).
        """
        target = self._prefix + path
        if query:
            pairs = {k: v for k, v in query.items() if v is not None}
            if pairs:
                target += "?" + urlencode(pairs, doseq=True)
        body = None if json_body is None else json.dumps(json_body).encode("utf-8")
        sent_headers = {"user-agent": self._user_agent, "accept": "application/json"}
        if body is not None:
            sent_headers["content-type"] = "application/json"
        if self.api_key:
            sent_headers["authorization"] = f"Bearer {self.api_key}"
        if headers:
            sent_headers.update({k.lower(): v for k, v in headers.items()})
        timeout = self.timeout_s if timeout_s is None else timeout_s
        policy = self.retry
        attempt = 0
        while True:
            attempt += 1
            last = attempt >= policy.max_attempts
            try:
                status, response_headers, data = self._once(method, target, body, sent_headers, timeout)
            except _NotSent as error:
                cause = error.__cause__
                if last:
                    raise TransportError(f"{method} {path}: cannot connect to {self.base_url}: {cause}") from cause
                self._wait(attempt, None, f"{method} {path}: connect failed ({cause})")
                continue
            except socket.timeout as error:
                if last or retry is not Retry.ALWAYS:
                    raise RequestTimeoutError(f"{method} {path}: no response within {timeout} s") from error
                self._wait(attempt, None, f"{method} {path}: timed out")
                continue
            except (OSError, http.client.HTTPException) as error:
                if last or retry is not Retry.ALWAYS:
                    raise TransportError(f"{method} {path}: connection failed: {error!r}") from error
                self._wait(attempt, None, f"{method} {path}: connection failed ({error!r})")
                continue
            if status in ok_statuses:
                return Response(status=status, headers=response_headers, body=data)
            error = error_from_response(status, data, response_headers)
            retryable = status in policy.statuses if retry is Retry.ALWAYS else status in _UNPROCESSED_STATUSES
            if last or not retryable:
                raise error
            self._wait(attempt, error.retry_after_s, f"{method} {path}: HTTP {status}")

    def _wait(self, attempt: int, retry_after_s: float | None, why: str) -> None:
        delay = self.retry.delay_s(attempt, retry_after_s)
        _log.debug("retrying in %.2f s: %s", delay, why)
        self._sleep(delay)

    def _once(
        self, method: str, target: str, body: bytes | None, headers: Mapping[str, str], timeout: float
    ) -> tuple[int, dict[str, str], bytes]:
        conn: http.client.HTTPConnection
        if self._https:
            conn = http.client.HTTPSConnection(
                self._host, self._port, timeout=timeout, context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        try:
            try:
                conn.connect()
            except OSError as error:
                # Includes a connect timeout: nothing was sent either way.
                raise _NotSent() from error
            conn.request(method, target, body=body, headers=dict(headers))
            response = conn.getresponse()
            data = response.read()
            response_headers = {name.lower(): value for name, value in response.getheaders()}
            return response.status, response_headers, data
        finally:
            conn.close()
