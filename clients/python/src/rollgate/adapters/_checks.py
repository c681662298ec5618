"""Refusals shared by the adapters: rows no trainer should receive, named with the reason."""

from __future__ import annotations

from typing import Sequence

from ..rows import Row, RowError


def refuse_untrainable(rows: Sequence[Row], trainer: str) -> None:
    """Raises :class:`RowError` naming every row of a failed or cancelled rollout, or one with a drop reason: such a
    row is no sample of the policy, and a trainer that got it would learn from an infrastructure failure."""
    bad = [f"{r.rollout_id} (status {r.status}, drop reason {r.drop_reason})" for r in rows if not r.trainable]
    if bad:
        raise RowError(f"{trainer}: {len(bad)} rows are not trainable, leave them out first: " + ", ".join(bad[:5]))


def refuse_empty(rows: Sequence[Row], trainer: str) -> None:
    empty = [r.rollout_id for r in rows if r.response_len == 0]
    if empty:
        raise RowError(f"{trainer}: rows without response tokens: " + ", ".join(empty[:5]))
