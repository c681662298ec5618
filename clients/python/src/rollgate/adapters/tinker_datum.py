"""Rows as Tinker ``Datum`` objects (checked against tinker 0.38.0).

A datum is the row's tokens shifted by one: ``model_input = tokens[:-1]`` and ``target_tokens = tokens[1:]``, so
position ``i`` predicts ``tokens[i + 1]``. Response token ``j`` is target ``prompt_len - 1 + j``. Per target:

===================  =================================================================================
``loss_fn_inputs``   value
===================  =================================================================================
``target_tokens``    ``tokens[1:]`` (int64)
``logprobs``         the row's sampling logprob on response targets, 0.0 on prompt targets (RL losses)
``advantages``       the advantage on policy targets (``loss_mask`` 1), 0.0 elsewhere (RL losses):
                     tool output and prompt tokens carry no gradient
``weights``          ``loss_mask`` on response targets, 0.0 on prompt targets (``cross_entropy`` only)
===================  =================================================================================

RL losses (``importance_sampling``, ``ppo``, ``cispo``, ``dro``, ``gspo``, ``stable_reinforce``) need the
sampling logprobs: a row without them is refused, never filled in. ``cross_entropy`` takes ``weights`` and no
logprobs. Refused with :class:`rollgate.rows.RowError` too: rows of failed or cancelled rollouts and rows with a
drop reason, rows without response tokens or without a prompt token (the first response token would have no
position predicting it), and RL rows without an advantage. A rollout with several rows gives several data.
Tinker's ``Datum`` has no routing field: routed experts are not passed on.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..rows import Row, RowError
from ._checks import refuse_empty, refuse_untrainable

__all__ = ["to_datum", "to_datums", "RL_LOSSES", "TESTED_TINKER_VERSION"]

TESTED_TINKER_VERSION = "0.38.0"
RL_LOSSES = frozenset({"importance_sampling", "ppo", "cispo", "dro", "gspo", "stable_reinforce"})
_NAME = "Tinker Datum"


def to_datum(row: Row, *, loss_fn: str = "importance_sampling", advantage: float | None = None) -> Any:
    """One ``tinker.Datum`` for ``row``, with the ``loss_fn_inputs`` ``loss_fn`` reads. ``advantage`` overrides the
    row's own (a batch row carries the gateway's group-normalized advantage; an exported row carries none)."""
    import tinker

    if loss_fn != "cross_entropy" and loss_fn not in RL_LOSSES:
        raise RowError(f"{_NAME}: unknown loss_fn {loss_fn!r} (cross_entropy or one of {sorted(RL_LOSSES)})")
    refuse_untrainable([row], _NAME)
    refuse_empty([row], _NAME)
    if row.prompt_len == 0:
        raise RowError(f"{_NAME}: row {row.rollout_id} has no prompt token, so its first response token is unpredicted")
    tokens = row.tokens
    p = row.prompt_len
    prompt_zeros = [0.0] * (p - 1)
    mask = prompt_zeros + [float(m) for m in row.loss_mask]
    inputs: dict[str, Any] = {"target_tokens": list(tokens[1:])}
    if loss_fn == "cross_entropy":
        inputs["weights"] = mask
    else:
        if row.logprobs is None:
            raise RowError(
                f"{_NAME}: row {row.rollout_id} has no sampling logprobs, which {loss_fn} needs "
                "(serve processed logprobs; see the gateway's logprobs docs)"
            )
        adv = row.advantage if advantage is None else advantage
        if adv is None:
            raise RowError(f"{_NAME}: row {row.rollout_id} has no advantage; pass advantage=")
        inputs["logprobs"] = prompt_zeros + list(row.logprobs)
        inputs["advantages"] = [float(adv) * m for m in mask]
    return tinker.Datum(model_input=tinker.ModelInput.from_ints(list(tokens[:-1])), loss_fn_inputs=inputs)


def to_datums(
    rows: Sequence[Row], *, loss_fn: str = "importance_sampling", advantages: Sequence[float] | None = None
) -> list[Any]:
    """One datum per row (``advantages``, when given, one per row)."""
    if advantages is not None and len(advantages) != len(rows):
        raise RowError(f"{_NAME}: {len(advantages)} advantages for {len(rows)} rows")
    return [
        to_datum(r, loss_fn=loss_fn, advantage=None if advantages is None else advantages[i])
        for i, r in enumerate(rows)
    ]
