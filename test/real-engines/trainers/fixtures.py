"""Rows for the trainer adapters' tests: the edge cases every adapter is checked on."""

from __future__ import annotations

import os
from typing import Any

from rollgate.rows import Row


def tiny_model_dir() -> str:
    """The real-engine suite's tiny Qwen3 model (random weights, the real tokenizer), made by env/setup.sh."""
    path = os.environ.get("ROLLGATE_TINY_MODEL_DIR", "")
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise RuntimeError(f"ROLLGATE_TINY_MODEL_DIR={path!r} holds no model: run test/real-engines/env/setup.sh")
    return path


def row(rollout_id: str, prompt: list[int], response: list[int], **kw: Any) -> Row:
    fields: dict[str, Any] = {
        "rollout_id": rollout_id,
        "group_id": kw.pop("group_id", "g0"),
        "prompt_ids": prompt,
        "response_ids": response,
        "loss_mask": kw.pop("loss_mask", [1] * len(response)),
        "logprobs": kw.pop("logprobs", [-0.5 - 0.125 * i for i in range(len(response))]),
        "reward": kw.pop("reward", 1.0),
        "advantage": kw.pop("advantage", 0.5),
        "model_version": kw.pop("model_version", 3),
        "sequence_ids": kw.pop("sequence_ids", [1]),
    }
    fields.update(kw)
    return Row(**fields)


def with_tool_output(rollout_id: str, prompt: list[int], **kw: Any) -> Row:
    """Two turns with tool output between them: generated [11, 12], tool [90, 91, 92], generated [13, 14]."""
    kw.setdefault("logprobs", [-0.25, -0.5, 0.0, 0.0, 0.0, -0.75, -1.0])
    return row(rollout_id, prompt, [11, 12, 90, 91, 92, 13, 14], loss_mask=[1, 1, 0, 0, 0, 1, 1], **kw)


def routes_for(r: Row, layers: int = 2, k: int = 2) -> list[list[list[int]]]:
    return [[[(t + layer + j) % 8 for j in range(k)] for layer in range(layers)] for t in range(len(r.tokens))]
