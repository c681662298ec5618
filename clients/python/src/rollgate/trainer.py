"""Client for rollgate's trainer protocol (``/v1/rl/*``; with auth on, batches need a runner or admin key and
weight updates, which swap the served model, an admin key).

Delivery is at-least-once: the gateway hands out the oldest batch nobody acknowledged, so a trainer that
crashes or disconnects gets the same batch again (:attr:`Delivery.delivery` 2, 3, ...). A batch leaves the
queue when it is acknowledged, by :meth:`TrainerClient.post_weights` (the batches it trained on), by
:meth:`TrainerClient.commit_weights` (the two-step update for native transfers) or by
:meth:`TrainerClient.ack` (e.g. an empty batch).

Example::

    trainer = TrainerClient("http://gw:8080", api_key=ADMIN_KEY)
    for delivery in trainer.batches():
        batch = delivery.batch
        ...  # train on batch.samples, save the new weights to /ckpt/7
        trainer.post_weights(7, batch_ids=[batch.batch_id], lora_path="/ckpt/7")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence, Union
from urllib.parse import quote

from ._http import Retry, RetryPolicy, client_from_env
from .batch import BATCH_CONTENT_TYPE, Batch, decode_binary, decode_json
from .errors import ProtocolError

__all__ = ["TrainerClient", "Delivery", "WeightsResult", "TrainerState", "MAX_POLL_S"]

#: The gateway's upper bound for one long poll.
MAX_POLL_S = 300.0

Scalar = Union[str, int, float, bool]


@dataclass(frozen=True)
class Delivery:
    """One hand-out of a batch.

    Attributes:
        batch: the decoded batch.
        delivery: 1 the first time the gateway hands this batch out, 2+ when it comes again because it was
            not acknowledged (a crashed or disconnected trainer, or a batch skipped on purpose).
        layout: ``"binary"`` or ``"json"``, the form it travelled in.
    """

    batch: Batch
    delivery: int
    layout: str

    @property
    def batch_id(self) -> str:
        return self.batch.batch_id

    @property
    def redelivered(self) -> bool:
        """True when this batch was handed out before and not acknowledged."""
        return self.delivery > 1


@dataclass(frozen=True)
class WeightsResult:
    """The gateway's answer to a weights post: the version now served, the batches it acknowledged and how
    long the swap took (pause, drain, load on every backend, resume)."""

    version: int
    acknowledged: list[str]
    sync_ms: float


@dataclass(frozen=True)
class TrainerState:
    """``GET /v1/rl/state``: the batch queue and the policy version.

    ``model_version`` is None while no ``rl`` algorithm is attached to the gateway.
    """

    queued: int
    delivered: int
    acknowledged: int
    redeliveries: int
    attached: bool
    model_version: int | None
    raw: Mapping[str, Any]


class TrainerClient:
    """Blocking client for the trainer protocol. One process (rank 0) should poll.

    Args:
        base_url: the gateway root, e.g. ``http://gw:8080`` (default ``$ROLLGATE_GATEWAY_URL``).
        api_key: admin key, or a runner key for a trainer that only reads batches (default ``$ROLLGATE_API_KEY``);
            not needed when the gateway runs without auth.
        binary: ask for the binary layout (compact, decoded without copies); False asks for JSON.
        use_numpy: decode into NumPy arrays (default: when NumPy is installed) or plain lists.
        timeout_s: client-side timeout of one call; a long poll waits its poll time on top of it.
        weights_timeout_s: timeout of a weights post, which waits for in-flight calls to drain and for every
            backend to load the weights.
        retry: retry policy for transport errors and retryable statuses.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        binary: bool = True,
        use_numpy: bool | None = None,
        timeout_s: float = 30.0,
        weights_timeout_s: float = 900.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._http = client_from_env(base_url, api_key=api_key, timeout_s=timeout_s, retry=retry)
        self.binary = binary
        self.use_numpy = use_numpy
        self.weights_timeout_s = weights_timeout_s

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def next_batch(self, timeout_s: float = 30.0) -> Delivery | None:
        """Long-polls for the oldest unacknowledged batch; None when none arrived within ``timeout_s``.

        The wait happens on the gateway (event-driven, no client-side polling loop); ``timeout_s`` is capped
        at :data:`MAX_POLL_S`.
        """
        wait_s = max(0.0, min(float(timeout_s), MAX_POLL_S))
        headers = {"accept": f"{BATCH_CONTENT_TYPE}, application/json"} if self.binary else None
        response = self._http.request(
            "GET",
            "/v1/rl/batches/next",
            query={"timeout_s": _number(wait_s)},
            headers=headers,
            timeout_s=self._http.timeout_s + wait_s,
            ok_statuses=(200, 204),
        )
        if response.status == 204:
            return None
        header_id = response.headers.get("x-rollgate-batch-id")
        delivery_header = response.headers.get("x-rollgate-delivery")
        if header_id is None or delivery_header is None or not delivery_header.isdigit():
            raise ProtocolError("a batch came without x-rollgate-batch-id / x-rollgate-delivery headers")
        content_type = response.headers.get("content-type", "")
        if content_type.startswith(BATCH_CONTENT_TYPE):
            batch = decode_binary(response.body, use_numpy=self.use_numpy)
            layout = "binary"
        else:
            batch = decode_json(response.body, use_numpy=self.use_numpy)
            layout = "json"
        if batch.batch_id != header_id:
            raise ProtocolError(f"x-rollgate-batch-id {header_id!r} differs from the body's {batch.batch_id!r}")
        return Delivery(batch=batch, delivery=int(delivery_header), layout=layout)

    def batches(
        self, *, poll_s: float = 30.0, stop_when_idle: bool = False, max_batches: int | None = None
    ) -> Iterator[Delivery]:
        """Yields deliveries as the gateway hands them out, long-polling ``poll_s`` at a time.

        A batch you neither acknowledge nor post weights for comes again on the next poll (``redelivered``).
        Stops after ``max_batches`` deliveries, or at the first empty poll when ``stop_when_idle``.
        """
        count = 0
        while max_batches is None or count < max_batches:
            delivery = self.next_batch(timeout_s=poll_s)
            if delivery is None:
                if stop_when_idle:
                    return
                continue
            count += 1
            yield delivery

    def ack(self, batch_id: str) -> list[str]:
        """Acknowledges a batch without new weights; returns the ids removed from the queue (empty when it was
        already acknowledged). Raises :class:`~rollgate.errors.NotFoundError` for an unknown id."""
        response = self._http.request("POST", f"/v1/rl/batches/{quote(batch_id, safe='')}/ack", json_body={})
        body = response.json()
        acknowledged = body.get("acknowledged") if isinstance(body, dict) else None
        if not isinstance(acknowledged, list):
            raise ProtocolError("ack answered without an acknowledged list")
        return [str(x) for x in acknowledged]

    def post_weights(
        self,
        version: int,
        *,
        batch_ids: Sequence[str] | None = None,
        timeout_s: float | None = None,
        **fields: Scalar,
    ) -> WeightsResult:
        """Publishes new weights: the gateway pauses, drains in-flight calls, runs its weight-load hook on every
        backend, bumps the pool's model version, resumes, then acknowledges ``batch_ids`` (all handed-out
        batches when None).

        ``fields`` (``lora_path=...``, ``lora_name=...``) reach the hook as ``${field}``. ``version`` must be
        greater than the current one (:class:`~rollgate.errors.ConflictError` otherwise).

        Not retried once the request may have reached the gateway: after a
        :class:`~rollgate.errors.TransportError`, :meth:`state` tells whether ``version`` is live.
        """
        body: dict[str, Any] = {"version": _version(version)}
        if batch_ids is not None:
            body["batch_ids"] = [str(x) for x in batch_ids]
        for name, value in fields.items():
            if not isinstance(value, (str, int, float, bool)):
                raise TypeError(f"weights field {name!r} must be a string, number or bool")
            body[name] = value
        response = self._http.request(
            "POST",
            "/v1/rl/weights",
            json_body=body,
            timeout_s=self.weights_timeout_s if timeout_s is None else timeout_s,
            retry=Retry.UNSENT,
        )
        raw = response.json()
        if not isinstance(raw, dict):
            raise ProtocolError("weights post answered without a JSON object")
        return WeightsResult(
            version=int(raw.get("version", version)),
            acknowledged=[str(x) for x in raw.get("acknowledged", [])],
            sync_ms=float(raw.get("sync_ms", 0.0)),
        )

    def prepare_weights(
        self, version: int, *, batch_ids: Sequence[str] | None = None, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Step 1 of a native (NCCL / CUDA IPC) transfer: the gateway holds new calls, frees the engines and
        answers which backends are ready (``{"status": "ready", "backends", "deadline_s", ...}``). Transfer the
        weights yourself, then :meth:`commit_weights` (or :meth:`abort_weights`) before the deadline.

        Idempotent on the gateway (a repeated prepare of the same version answers the same), so it is retried
        like a read. ``batch_ids`` are acknowledged at the commit.
        """
        body: dict[str, Any] = {"version": _version(version)}
        if batch_ids is not None:
            body["batch_ids"] = [str(x) for x in batch_ids]
        return self._object("/v1/rl/weights/prepare", body, timeout_s)

    def commit_weights(
        self, version: int, *, batch_ids: Sequence[str] | None = None, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Step 2: the engines finish the update, the pool's version is bumped, calls resume, and the batches
        (``batch_ids``, else those named at the prepare) are acknowledged. Idempotent, retried like a read."""
        body: dict[str, Any] = {"version": _version(version)}
        if batch_ids is not None:
            body["batch_ids"] = [str(x) for x in batch_ids]
        return self._object("/v1/rl/weights/commit", body, timeout_s)

    def abort_weights(self, reason: str | None = None) -> dict[str, Any]:
        """Abandons a prepared transfer: the gateway resumes on the old weights (``{"status": "aborted"}``, or
        ``"idle"`` when nothing was prepared). Idempotent."""
        return self._object("/v1/rl/weights/abort", {} if reason is None else {"reason": reason}, None)

    def _object(self, path: str, body: Mapping[str, Any], timeout_s: float | None) -> dict[str, Any]:
        raw = self._http.request(
            "POST", path, json_body=body, timeout_s=self.weights_timeout_s if timeout_s is None else timeout_s
        ).json()
        if not isinstance(raw, dict):
            raise ProtocolError(f"{path} answered without a JSON object")
        return raw

    def state(self) -> TrainerState:
        """The gateway's batch queue counters and the policy version."""
        raw = self._http.request("GET", "/v1/rl/state").json()
        if not isinstance(raw, dict):
            raise ProtocolError("state answered without a JSON object")
        version = raw.get("model_version")
        return TrainerState(
            queued=int(raw.get("queued", 0)),
            delivered=int(raw.get("delivered", 0)),
            acknowledged=int(raw.get("acknowledged", 0)),
            redeliveries=int(raw.get("redeliveries", 0)),
            attached=bool(raw.get("attached", False)),
            model_version=None if version is None else int(version),
            raw=raw,
        )

    def schema(self) -> dict[str, Any]:
        """The JSON schema of a batch and of the weights post, plus a description of the binary layout."""
        raw = self._http.request("GET", "/v1/rl/schema").json()
        if not isinstance(raw, dict):
            raise ProtocolError("schema answered without a JSON object")
        return raw


def _version(version: int) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"version must be a non-negative int, got {version!r}")
    return version


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)
