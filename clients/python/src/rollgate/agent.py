"""Helper for agents that ``rollgate runner`` launches as processes.

The runner starts one process per attempt with its task and endpoints in the environment::

    OPENAI_BASE_URL        <gateway>/rollout/<rid>/attempt/<aid>/v1 (every call is recorded on the attempt)
    OPENAI_API_KEY         a key valid for this rollout (or the placeholder "rollgate" without auth)
    ROLLGATE_TASK          the rollout's input, as JSON
    ROLLGATE_REWARD_URL    POST {"value": x} here, with Authorization: Bearer $OPENAI_API_KEY
    ROLLGATE_ROLLOUT_ID, ROLLGATE_ATTEMPT_ID, ROLLGATE_WORKER_ID, ROLLGATE_GATEWAY_URL
    ROLLGATE_MODEL, ROLLGATE_MODE, ROLLGATE_RESOURCES (JSON)   when known

Example (standard library only)::

    from rollgate.agent import AgentContext

    ctx = AgentContext.from_env()
    reply = ctx.chat_text([{"role": "user", "content": ctx.task["question"]}])
    ctx.post_reward(1.0 if ctx.task["answer"] in reply else 0.0)

Any OpenAI client works as well: it reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` by itself.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from ._http import HttpClient, Retry, RetryPolicy
from .errors import AgentEnvironmentError, ProtocolError

__all__ = ["AgentContext"]

_REQUIRED = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ROLLGATE_TASK", "ROLLGATE_REWARD_URL")


def _json_env(env: Mapping[str, str], name: str) -> Any:
    raw = env.get(name)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError as error:
        raise AgentEnvironmentError(f"{name} is not valid JSON: {error}") from error


def _split(url: str) -> tuple[str, str]:
    """Origin and path of an absolute URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AgentEnvironmentError(f"not an http(s) URL: {url!r}")
    return f"{parts.scheme}://{parts.netloc}", parts.path + (f"?{parts.query}" if parts.query else "")


@dataclass(frozen=True)
class AgentContext:
    """What the runner told this attempt's process. Build it with :meth:`from_env`."""

    task: Any
    openai_base_url: str
    api_key: str
    reward_url: str
    rollout_id: str | None = None
    attempt_id: str | None = None
    worker_id: str | None = None
    gateway_url: str | None = None
    model: str | None = None
    mode: str | None = None
    resources: Any = None
    timeout_s: float = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, timeout_s: float = 120.0) -> AgentContext:
        """Reads the runner's variables from ``env`` (default ``os.environ``).

        Raises:
            AgentEnvironmentError: a required variable is missing (the process was not started by a runner)
                or a JSON variable does not parse.
        """
        source = os.environ if env is None else env
        missing = [name for name in _REQUIRED if not source.get(name)]
        if missing:
            raise AgentEnvironmentError(
                f"missing {', '.join(missing)}: run this agent under `rollgate runner ... -- <command>`"
            )
        return cls(
            task=_json_env(source, "ROLLGATE_TASK"),
            openai_base_url=source["OPENAI_BASE_URL"].rstrip("/"),
            api_key=source["OPENAI_API_KEY"],
            reward_url=source["ROLLGATE_REWARD_URL"],
            rollout_id=source.get("ROLLGATE_ROLLOUT_ID"),
            attempt_id=source.get("ROLLGATE_ATTEMPT_ID"),
            worker_id=source.get("ROLLGATE_WORKER_ID"),
            gateway_url=source.get("ROLLGATE_GATEWAY_URL"),
            model=source.get("ROLLGATE_MODEL") or None,
            mode=source.get("ROLLGATE_MODE") or None,
            resources=_json_env(source, "ROLLGATE_RESOURCES"),
            timeout_s=timeout_s,
        )

    def _client(self, url: str) -> tuple[HttpClient, str]:
        origin, path = _split(url)
        return HttpClient(origin, api_key=self.api_key, timeout_s=self.timeout_s, retry=self.retry), path

    def post_reward(self, value: float, *, name: str | None = None) -> None:
        """Posts this attempt's reward. Retried only when the gateway surely did not record it, so a reward is
        never stored twice; raises :class:`~rollgate.errors.RollgateError` when it could not be posted."""
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"reward must be a finite number, got {value!r}")
        body: dict[str, Any] = {"value": number}
        if name is not None:
            body["name"] = name
        client, path = self._client(self.reward_url)
        client.request("POST", path, json_body=body, retry=Retry.UNSENT)

    def chat(
        self, messages: Sequence[Mapping[str, Any]], *, model: str | None = None, **params: Any
    ) -> dict[str, Any]:
        """One non-streaming ``/chat/completions`` call through the attempt's recorded route; returns the
        response JSON. ``params`` go into the request body as given (``max_tokens``, ``temperature``, ...).

        The model defaults to ``ROLLGATE_MODEL``. Like the OpenAI SDKs, a call the gateway refused before
        forwarding it (paused for a weight swap, no backend) is retried; one that may have reached the
        engine is not, so a retry never records a call twice.
        """
        chosen = model or self.model
        if not chosen:
            raise AgentEnvironmentError("no model: pass model=... or run the runner with --model")
        client, path = self._client(self.openai_base_url)
        body = {"model": chosen, "messages": [dict(m) for m in messages], **params}
        raw = client.request("POST", path + "/chat/completions", json_body=body, retry=Retry.UNSENT).json()
        if not isinstance(raw, dict):
            raise ProtocolError("chat completion answered without a JSON object")
        return raw

    def chat_text(
        self, messages: Sequence[Mapping[str, Any]], *, model: str | None = None, **params: Any
    ) -> str:
        """Like :meth:`chat`, returning the first choice's message text ("" when it has none)."""
        raw = self.chat(messages, model=model, **params)
        choices = raw.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProtocolError("chat completion answered without choices")
        message = choices[0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return content if isinstance(content, str) else ""
