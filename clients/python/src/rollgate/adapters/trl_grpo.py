"""Rows as the output of a TRL ``GRPOTrainer`` ``rollout_func`` (checked against TRL 1.16.0).

TRL calls ``rollout_func(prompts, trainer)`` with this process's slice of prompts (each prompt already repeated
``num_generations`` times, in order) and expects a dict of per-completion lists, one entry per prompt:

==========================  ==================================================================================
key                         from the row
==========================  ==================================================================================
``prompt_ids``              ``prompt_ids``
``completion_ids``          ``response_ids`` (generated tokens and, between turns, tool output)
``logprobs``                ``logprobs``; a row without logprobs gets ``None`` per token, which TRL turns into
                            NaN and leaves out of its vLLM importance-sampling correction (never invented)
``env_mask``                ``loss_mask``: TRL's mask of model tokens (1) against environment/tool tokens (0),
                            multiplied into its loss mask
``rollgate_reward``         ``reward``, handed to reward functions; :func:`rollgate_reward` returns it
``rollgate_rollout_id``,    identity and version, handed to reward functions (and logged by TRL)
``rollgate_model_version``
==========================  ==================================================================================

TRL computes its own group advantages from the rewards its reward functions return, so pass
:func:`rollgate_reward` in ``reward_funcs`` to train on the rewards rollgate recorded.

Refused with :class:`rollgate.rows.RowError`: rows of failed or cancelled rollouts and rows with a drop reason,
rows without response tokens, a rollout with more than one row (TRL takes one completion per prompt), and a row
count that differs from the prompt count. TRL has no routing replay: routed experts are not passed on.

TRL's async GRPO (``trl.experimental.async_grpo``) takes ``RolloutSample`` objects from its rollout worker's queue
instead: :func:`to_rollout_samples` builds them from rows. Each covers the whole sequence: ``input_ids`` is
``tokens``, ``completion_mask`` is 0 on the prompt and ``loss_mask`` on the response, ``old_log_probs`` is 0.0 on the
prompt and the row's logprobs on the response, with the row's (the gateway's group-normalized) advantage. Rows
without logprobs, advantage or model version are refused (the async loss's ratio is taken against those logprobs),
as are untrainable rows and rows without response tokens. A rollout with several rows gives several samples.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

from ..rows import Row, RowError
from ._checks import refuse_empty, refuse_untrainable

__all__ = ["rollout_output", "make_rollout_func", "rollgate_reward", "to_rollout_samples", "TESTED_TRL_VERSION"]

TESTED_TRL_VERSION = "1.16.0"
_NAME = "TRL rollout_func"


def rollout_output(rows: Sequence[Row]) -> dict[str, list[Any]]:
    """The dict a ``rollout_func`` returns, one completion per row, in row order."""
    refuse_untrainable(rows, _NAME)
    refuse_empty(rows, _NAME)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.rollout_id] = counts.get(r.rollout_id, 0) + 1
    split = [rid for rid, n in counts.items() if n > 1]
    if split:
        raise RowError(
            f"{_NAME}: TRL takes one completion per prompt, but rollouts {', '.join(split[:5])} have several rows "
            "(turns that did not continue each other token-exactly); record them with faithful history so each "
            "rollout is one row, or train them with an adapter that takes several rows per rollout"
        )
    return {
        "prompt_ids": [list(r.prompt_ids) for r in rows],
        "completion_ids": [list(r.response_ids) for r in rows],
        "logprobs": [list(r.logprobs) if r.logprobs is not None else [None] * r.response_len for r in rows],
        "env_mask": [list(r.loss_mask) for r in rows],
        "rollgate_reward": [r.reward for r in rows],
        "rollgate_rollout_id": [r.rollout_id for r in rows],
        "rollgate_model_version": [r.model_version for r in rows],
    }


def make_rollout_func(fetch_rows: Callable[[list[Any]], Sequence[Row]]) -> Callable[[list[Any], Any], dict[str, list[Any]]]:
    """A ``rollout_func`` for ``GRPOTrainer(rollout_func=...)``. ``fetch_rows(prompts)`` returns one row per prompt,
    in prompt order (e.g. enqueue the prompts as tasks with :class:`rollgate.StoreClient`, wait for them, and read
    their rows). Fails at once if the installed TRL has no ``rollout_func``."""
    import trl

    if "rollout_func" not in inspect.signature(trl.GRPOTrainer.__init__).parameters:
        raise ImportError(f"TRL {trl.__version__} has no GRPOTrainer rollout_func (tested with {TESTED_TRL_VERSION})")

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        rows = list(fetch_rows(list(prompts)))
        if len(rows) != len(prompts):
            raise RowError(f"{_NAME}: {len(prompts)} prompts but {len(rows)} rows; TRL needs one row per prompt")
        return rollout_output(rows)

    return rollout_func


def rollgate_reward(completions: list[Any], rollgate_reward: list[float | None], **kwargs: Any) -> list[float | None]:
    """A TRL reward function returning the reward rollgate recorded for each completion (None: none recorded,
    which TRL treats as unscorable)."""
    if len(rollgate_reward) != len(completions):
        raise RowError(f"rollgate_reward: {len(rollgate_reward)} rewards for {len(completions)} completions")
    return [None if r is None else float(r) for r in rollgate_reward]


def to_rollout_samples(rows: Sequence[Row], *, advantages: Sequence[float] | None = None) -> list[Any]:
    """TRL async GRPO ``RolloutSample`` objects, one per row. ``group_id`` (an int there) numbers the rows' groups in
    order of first appearance; ``advantages``, when given, replaces the rows' own (one per row). ``prompt`` and
    ``completion`` (messages, only logged by TRL) are left empty: rows carry token ids, not messages."""
    import numpy as np
    from trl.experimental.async_grpo.async_rollout_worker import RolloutSample

    name = "TRL async GRPO RolloutSample"
    refuse_untrainable(rows, name)
    refuse_empty(rows, name)
    if advantages is not None and len(advantages) != len(rows):
        raise RowError(f"{name}: {len(advantages)} advantages for {len(rows)} rows")
    groups: dict[str | None, int] = {}
    out = []
    for i, r in enumerate(rows):
        adv = r.advantage if advantages is None else advantages[i]
        needed = (("logprobs", r.logprobs), ("advantage", adv), ("model_version", r.model_version))
        missing = [what for what, value in needed if value is None]
        if missing:
            raise RowError(f"{name}: row {r.rollout_id} has no {', '.join(missing)}")
        group = groups.setdefault(r.group_id if r.group_id is not None else f"rollout:{r.rollout_id}", len(groups))
        out.append(
            RolloutSample(
                prompt=[],
                completion=[],
                input_ids=np.asarray(r.tokens, dtype=np.int64),
                completion_mask=np.asarray((0,) * r.prompt_len + r.loss_mask, dtype=np.int64),
                old_log_probs=np.asarray((0.0,) * r.prompt_len + tuple(r.logprobs or ()), dtype=np.float32),
                advantage=float(adv),
                model_version=int(r.model_version),
                group_id=group,
                metrics={} if r.reward is None else {"reward": float(r.reward)},
            )
        )
    return out
