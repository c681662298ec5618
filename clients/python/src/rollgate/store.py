"""Client for the store API (``/v1/agl/*``) for scripts: enqueue tasks, read rollouts and spans, post rewards,
wait for rollouts to finish.

Objects come back as the gateway's JSON (dicts), so new fields need no client update. Enqueues are sent with
an ``Idempotency-Key`` (a fresh one per call unless you pass yours), which makes them safe to retry: a retry
returns the first request's rollouts instead of enqueueing them twice.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, Mapping, Sequence, TypeVar
from urllib.parse import quote

from ._http import Retry, RetryPolicy, client_from_env
from .errors import ProtocolError

__all__ = ["StoreClient", "Page", "ROLLOUT_TERMINAL_STATUSES"]

T = TypeVar("T")

#: Statuses after which a rollout no longer changes.
ROLLOUT_TERMINAL_STATUSES = frozenset({"succeeded", "failed", "cancelled"})

#: Rollouts one enqueue request may carry, and ids one wait may name (the gateway's per-request limits,
#: docs/input-limits.md); the client splits larger ones.
MAX_ENQUEUE = 5_000
MAX_WAIT_IDS = 10_000

#: One server-side wait at most this long, so a dead connection is noticed within it.
_WAIT_CHUNK_S = 30.0


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a query: ``total`` counts every match before paging; ``limit`` -1 means no limit."""

    items: list[T]
    total: int
    limit: int
    offset: int


#: The gateway's largest page per list (docs/store.md); a query for more (or for everything) reads several pages.
_MAX_PAGE = {"rollouts": 1000, "attempts": 1000, "spans": 500}


def _follow_pages(
    fetch: Callable[[int, int], Page[dict[str, Any]]], *, page_size: int, limit: int | None, offset: int | None
) -> Page[dict[str, Any]]:
    """``limit`` None or -1 means every match, as in the store contract; the gateway serves at most ``page_size``
    per request, so the pages are read one after another with ``offset``."""
    wanted = -1 if limit is None else limit
    start = offset or 0
    if 0 < wanted <= page_size:
        return fetch(wanted, start)
    items: list[dict[str, Any]] = []
    total = 0
    while True:
        size = page_size if wanted == -1 else min(page_size, wanted - len(items))
        page = fetch(size, start + len(items))
        items.extend(page.items)
        total = page.total
        # An empty page ends it even if ``total`` says more: rows deleted meanwhile would otherwise loop for ever.
        if (wanted != -1 and len(items) >= wanted) or not page.items or start + len(items) >= total:
            break
    return Page(items=items, total=total, limit=wanted, offset=start)


def _q(value: str) -> str:
    return quote(value, safe="")


def _page(raw: Any) -> Page[dict[str, Any]]:
    if not isinstance(raw, dict) or not isinstance(raw.get("items"), list):
        raise ProtocolError("query answered without an items list")
    return Page(
        items=list(raw["items"]),
        total=int(raw.get("total", len(raw["items"]))),
        limit=int(raw.get("limit", -1)),
        offset=int(raw.get("offset", 0)),
    )


class StoreClient:
    """Blocking client for the store API.

    Args:
        base_url: the gateway root (default ``$ROLLGATE_GATEWAY_URL``).
        api_key: runner or admin key when auth is on (default ``$ROLLGATE_API_KEY``).
        timeout_s: client-side timeout of one call (long polls add their wait on top).
        retry: retry policy for transport errors and retryable statuses.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._http = client_from_env(base_url, api_key=api_key, timeout_s=timeout_s, retry=retry)

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def health(self) -> bool:
        """True when the store API answers."""
        raw = self._http.request("GET", "/v1/agl/health").json()
        return isinstance(raw, dict) and raw.get("status") == "ok"

    # --- tasks -----------------------------------------------------------------------------------------------

    def enqueue(
        self,
        inputs: Iterable[Any],
        *,
        mode: str | None = None,
        config: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        resources_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> list[dict[str, Any]]:
        """Enqueues one rollout per input (any JSON value); returns the created rollouts in order.

        ``mode`` is ``train``/``val``/``test``; ``config`` takes ``timeout_seconds``, ``max_attempts``,
        ``retry_condition``. A retry with the same ``idempotency_key`` returns the same rollouts.
        """
        base: dict[str, Any] = {}
        if mode is not None:
            base["mode"] = mode
        if config is not None:
            base["config"] = dict(config)
        if metadata is not None:
            base["metadata"] = dict(metadata)
        if resources_id is not None:
            base["resources_id"] = resources_id
        return self.enqueue_requests([{"input": value, **base} for value in inputs], idempotency_key=idempotency_key)

    def enqueue_requests(
        self, requests: Sequence[Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> list[dict[str, Any]]:
        """Enqueues rollouts given as full request objects (``{"input", "mode", "config", "metadata",
        "rollout_id", "resources_id"}``).

        The gateway takes at most ``MAX_ENQUEUE`` rollouts per request (docs/input-limits.md); more go as several
        requests, in order, the n-th under the key ``<key>/<n>``, so a retry with the same key stores nothing twice.
        """
        key = idempotency_key or f"py-{uuid.uuid4().hex}"
        bodies = [dict(r) for r in requests]
        created: list[dict[str, Any]] = []
        for n, start in enumerate(range(0, max(len(bodies), 1), MAX_ENQUEUE)):
            raw = self._http.request(
                "POST",
                "/v1/agl/queues/rollouts/enqueue",
                json_body={"rollouts": bodies[start : start + MAX_ENQUEUE]},
                headers={"idempotency-key": key if n == 0 else f"{key}/{n}"},
            ).json()
            if not isinstance(raw, list):
                raise ProtocolError("enqueue answered without a list")
            created.extend(raw)
        return created

    def dequeue(
        self, *, worker_id: str | None = None, limit: int = 1, wait_s: float = 0.0
    ) -> list[dict[str, Any]]:
        """Claims up to ``limit`` queued rollouts (each with its new attempt), waiting up to ``wait_s`` (at most
        60) on the gateway for one to arrive. Not retried after it may have reached the gateway: a claim that
        was made but whose answer was lost is expired by the store's watchdog."""
        wait_ms = int(max(0.0, min(wait_s, 60.0)) * 1000)
        body: dict[str, Any] = {"limit": limit, "wait_ms": wait_ms}
        if worker_id is not None:
            body["worker_id"] = worker_id
        response = self._http.request(
            "POST",
            "/v1/agl/queues/rollouts/dequeue",
            json_body=body,
            timeout_s=self._http.timeout_s + wait_ms / 1000,
            retry=Retry.UNSENT,
            ok_statuses=(200, 204),
        )
        raw = response.json()
        return raw if isinstance(raw, list) else []

    # --- rollouts and attempts -------------------------------------------------------------------------------

    def get_rollout(self, rollout_id: str) -> dict[str, Any] | None:
        """The rollout (with its latest attempt), or None when there is none with this id."""
        raw = self._http.request("GET", f"/v1/agl/rollouts/{_q(rollout_id)}").json()
        return raw if isinstance(raw, dict) else None

    def query_rollouts(
        self,
        *,
        status_in: Sequence[str] | None = None,
        rollout_ids: Sequence[str] | None = None,
        rollout_id_contains: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        sort_by: str | None = None,
        sort_order: str | None = None,
    ) -> Page[dict[str, Any]]:
        """Rollouts matching every given filter; every match unless ``limit`` is given (read page by page)."""
        filters = {
            "status_in": list(status_in) if status_in is not None else None,
            "rollout_id_in": list(rollout_ids) if rollout_ids is not None else None,
            "rollout_id_contains": rollout_id_contains,
            "sort_by": sort_by,
            "sort_order": sort_order,
        }

        def fetch(page_limit: int, page_offset: int) -> Page[dict[str, Any]]:
            body = {**filters, "limit": page_limit, "offset": page_offset}
            raw = self._http.request(
                "POST", "/v1/agl/rollouts/search", json_body={k: v for k, v in body.items() if v is not None}
            ).json()
            return _page(raw)

        return _follow_pages(fetch, page_size=_MAX_PAGE["rollouts"], limit=limit, offset=offset)

    def update_rollout(self, rollout_id: str, **fields: Any) -> dict[str, Any]:
        """Updates a rollout (e.g. ``status="cancelled"``, ``metadata={...}``); a key set to None clears it."""
        raw = self._http.request("POST", f"/v1/agl/rollouts/{_q(rollout_id)}", json_body=fields).json()
        if not isinstance(raw, dict):
            raise ProtocolError("update answered without a rollout")
        return raw

    def query_attempts(self, rollout_id: str) -> Page[dict[str, Any]]:
        """The rollout's attempts, oldest first (all of them, read page by page)."""

        def fetch(page_limit: int, page_offset: int) -> Page[dict[str, Any]]:
            path = f"/v1/agl/rollouts/{_q(rollout_id)}/attempts?limit={page_limit}&offset={page_offset}"
            return _page(self._http.request("GET", path).json())

        return _follow_pages(fetch, page_size=_MAX_PAGE["attempts"], limit=None, offset=None)

    def latest_attempt(self, rollout_id: str) -> dict[str, Any] | None:
        raw = self._http.request("GET", f"/v1/agl/rollouts/{_q(rollout_id)}/attempts/latest").json()
        return raw if isinstance(raw, dict) else None

    def update_attempt(self, rollout_id: str, attempt_id: str, **fields: Any) -> dict[str, Any]:
        """Updates an attempt (e.g. ``status="succeeded"``); the rollout's status follows its latest attempt."""
        raw = self._http.request(
            "POST", f"/v1/agl/rollouts/{_q(rollout_id)}/attempts/{_q(attempt_id)}", json_body=fields
        ).json()
        if not isinstance(raw, dict):
            raise ProtocolError("update answered without an attempt")
        return raw

    # --- spans and rewards -----------------------------------------------------------------------------------

    def query_spans(
        self,
        rollout_id: str,
        *,
        attempt_id: str | None = None,
        name: str | None = None,
        name_contains: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> Page[dict[str, Any]]:
        """The rollout's spans (LLM calls, rewards, agent spans) in sequence order; all unless ``limit`` is given."""
        filters = {"rollout_id": rollout_id, "attempt_id": attempt_id, "name": name, "name_contains": name_contains}

        def fetch(page_limit: int, page_offset: int) -> Page[dict[str, Any]]:
            body = {**filters, "limit": page_limit, "offset": page_offset}
            raw = self._http.request(
                "POST", "/v1/agl/spans/search", json_body={k: v for k, v in body.items() if v is not None}
            ).json()
            return _page(raw)

        return _follow_pages(fetch, page_size=_MAX_PAGE["spans"], limit=limit, offset=offset)

    def post_reward(
        self, rollout_id: str, value: float, *, attempt_id: str = "latest", name: str | None = None
    ) -> dict[str, Any]:
        """Records a reward for an attempt (its latest one by default); returns the reward span.

        Retried only when the gateway surely did not store it, so a retry never records the reward twice.
        """
        body: dict[str, Any] = {"value": float(value)}
        if name is not None:
            body["name"] = name
        raw = self._http.request(
            "POST",
            f"/v1/agl/rollouts/{_q(rollout_id)}/attempts/{_q(attempt_id)}/reward",
            json_body=body,
            retry=Retry.UNSENT,
        ).json()
        if not isinstance(raw, dict):
            raise ProtocolError("reward answered without a span")
        return raw

    # --- waiting ---------------------------------------------------------------------------------------------

    def wait_for_rollouts(
        self, rollout_ids: Sequence[str], *, timeout_s: float | None = None
    ) -> list[dict[str, Any]]:
        """Waits until every rollout in ``rollout_ids`` is finished, or ``timeout_s`` passes (None: no limit);
        returns the finished ones.

        Each wait is a server-side long poll of at most 30 s, so progress needs no client-side polling and a
        dead connection is noticed.
        """
        ids = list(dict.fromkeys(rollout_ids))
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        finished: dict[str, dict[str, Any]] = {}
        while True:
            # One wait names at most MAX_WAIT_IDS rollouts (docs/input-limits.md): the first ones still open.
            waiting = [i for i in ids if i not in finished][:MAX_WAIT_IDS]
            left = _WAIT_CHUNK_S if deadline is None else max(0.0, min(_WAIT_CHUNK_S, deadline - time.monotonic()))
            raw = self._http.request(
                "POST",
                "/v1/agl/waits/rollouts",
                json_body={"rollout_ids": waiting, "timeout": left},
                timeout_s=self._http.timeout_s + left,
            ).json()
            for r in raw if isinstance(raw, list) else []:
                if isinstance(r, dict) and isinstance(r.get("rollout_id"), str):
                    finished[r["rollout_id"]] = r
            if all(i in finished for i in ids) or (deadline is not None and time.monotonic() >= deadline):
                return [finished[i] for i in ids if i in finished]

    def statistics(self) -> dict[str, Any]:
        """Store-wide counters."""
        raw = self._http.request("GET", "/v1/agl/statistics").json()
        return raw if isinstance(raw, dict) else {}
