"""Rows as verl ``AgentLoopOutput`` objects, and an ``AgentLoopBase`` whose ``run`` returns one (checked against
verl 0.9.1).

================================  =========================================================================
``AgentLoopOutput`` field         from the row
================================  =========================================================================
``prompt_ids``, ``response_ids``  the same
``response_mask``                 ``loss_mask`` (verl: 1 for LLM-generated tokens, 0 for tool responses)
``response_logprobs``             ``logprobs``, or None when the row has none (never invented)
``routed_experts``                ``routed_experts`` as an int16 NumPy array ``[T, L, K]`` over prompt and
                                  response tokens (what verl's router replay indexes), or None
``reward_score``                  ``reward``
``num_turns``                     1 (the user turn) + the runs of generated and of tool tokens
``extra_fields``                  ``rollgate_rollout_id``, ``rollgate_group_id``, ``rollgate_model_version``,
                                  ``rollgate_token_versions``
================================  =========================================================================

verl collates a batch's logprobs and routes only if its first output has them, so give it rows that all have them
or all lack them: :func:`to_agent_loop_outputs` refuses a mix. Refused with :class:`rollgate.rows.RowError` too:
rows of failed or cancelled rollouts or with a drop reason, and rows without response tokens. A rollout with
several rows gives several outputs. verl recomputes advantages from ``reward_score``; the row's ``advantage`` is not
used.
"""

from __future__ import annotations

import inspect
from typing import Any, Sequence

from ..rows import Row, RowError
from ._checks import refuse_empty, refuse_untrainable

# Imported at module level (unlike numpy) because RollgateAgentLoop subclasses verl's base.
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput

__all__ = ["to_agent_loop_output", "to_agent_loop_outputs", "RollgateAgentLoop", "TESTED_VERL_VERSION"]

TESTED_VERL_VERSION = "0.9.1"
_NAME = "verl AgentLoopOutput"


def _turns(mask: Sequence[int]) -> int:
    runs = sum(1 for i, m in enumerate(mask) if i == 0 or mask[i - 1] != m)
    return 1 + runs


def to_agent_loop_output(row: Row) -> Any:
    """One ``AgentLoopOutput`` for ``row``."""
    import numpy as np

    refuse_untrainable([row], _NAME)
    refuse_empty([row], _NAME)
    routes = None
    if row.routed_experts is not None:
        routes = np.asarray(row.routed_experts, dtype=np.int16)
        if routes.ndim != 3:
            raise RowError(f"{_NAME}: row {row.rollout_id} routed_experts must be [tokens, layers, top_k]")
    return AgentLoopOutput(
        prompt_ids=list(row.prompt_ids),
        response_ids=list(row.response_ids),
        response_mask=list(row.loss_mask),
        response_logprobs=None if row.logprobs is None else list(row.logprobs),
        routed_experts=routes,
        reward_score=row.reward,
        num_turns=_turns(row.loss_mask),
        metrics=AgentLoopMetrics(),
        extra_fields={
            "rollgate_rollout_id": row.rollout_id,
            "rollgate_group_id": row.group_id,
            "rollgate_model_version": row.model_version,
            "rollgate_token_versions": None if row.token_versions is None else list(row.token_versions),
        },
    )


def to_agent_loop_outputs(rows: Sequence[Row]) -> list[Any]:
    """One output per row; refuses rows that verl could not collate into one batch."""
    for what, has in (("logprobs", lambda r: r.has_logprobs), ("routed_experts", lambda r: r.has_routes)):
        if len({has(r) for r in rows}) > 1:
            missing = [r.rollout_id for r in rows if not has(r)]
            raise RowError(
                f"{_NAME}: verl collates {what} only when every output has them; rows without: {', '.join(missing[:5])}"
            )
    return [to_agent_loop_output(r) for r in rows]


class RollgateAgentLoop(AgentLoopBase):
    """An agent loop whose trajectory comes from rollgate: subclass it, implement ``fetch_row`` (sync or async;
    it gets verl's sampling params and the dataset row's fields, and returns the :class:`Row` of a rollout that
    rollgate's runner ran for that task), and register it with ``@register("rollgate")``."""

    def fetch_row(self, sampling_params: dict[str, Any], **kwargs: Any) -> Row:
        raise NotImplementedError("RollgateAgentLoop.fetch_row returns the row of a rollout for this task")

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        row = self.fetch_row(sampling_params, **kwargs)
        if inspect.isawaitable(row):
            row = await row
        if not isinstance(row, Row):
            raise RowError(f"{_NAME}: fetch_row returned {type(row).__name__}, not a rollgate Row")
        return to_agent_loop_output(row)
