"""Rows as miles ``Sample`` objects, and a custom generate function returning them (checked against miles-rl 0.0.2,
the radixark/miles package on PyPI).

===========================  ================================================================================
``Sample`` field             from the row
===========================  ================================================================================
``tokens``                   ``prompt_ids + response_ids``
``response_length``          ``len(response_ids)``
``loss_mask``                ``loss_mask``
``rollout_log_probs``        ``logprobs``, or None when the row has none (never invented)
``rollout_routed_experts``   the routes of ``tokens[:-1]`` (the positions the engine ran), int32
                             ``[T - 1, L, K]``, or None
``weight_versions``          one entry per run of one model version in the response (``version_segments``), so
                             ``oldest_weight_version`` is the row's oldest; ``model_version`` when the row has no
                             token versions
``status``                   ``COMPLETED``
``reward``                   ``reward``
``metadata``                 ``rollgate_rollout_id``, ``rollgate_group_id``, ``rollgate_row_index``
===========================  ================================================================================

Identity fields miles set on the sample it passes in (``index``, ``group_index``, ``prompt``, ``label``) are kept.
Refused with :class:`rollgate.rows.RowError`: rows of failed or cancelled rollouts or with a drop reason, and rows
without response tokens. A rollout with several rows gives several samples (miles takes a list from one generate).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, Callable, Sequence

from ..rows import Row, RowError
from ._checks import refuse_empty, refuse_untrainable

from miles.utils.types import Sample

__all__ = ["to_sample", "make_generate", "TESTED_MILES_VERSION"]

TESTED_MILES_VERSION = "0.0.2"
_NAME = "miles Sample"


def to_sample(row: Row, sample: Any = None) -> Any:
    """``row`` as a miles ``Sample``: filled into ``sample`` (miles's own, carrying the task's identity) or a new one.
    The result has passed ``Sample.validate``."""
    import numpy as np

    refuse_untrainable([row], _NAME)
    refuse_empty([row], _NAME)
    s = sample if sample is not None else Sample()
    s.tokens = list(row.tokens)
    s.response_length = row.response_len
    s.loss_mask = list(row.loss_mask)
    s.rollout_log_probs = None if row.logprobs is None else list(row.logprobs)
    s.rollout_routed_experts = (
        None if row.routed_experts is None else np.asarray(row.routed_experts[:-1], dtype=np.int32)
    )
    versions = [str(seg.version) for seg in row.version_segments()]
    if not versions and row.model_version is not None:
        versions = [str(row.model_version)]
    s.weight_versions = versions
    s.reward = row.reward
    s.status = Sample.Status.COMPLETED
    s.metadata = {
        **(s.metadata or {}),
        "rollgate_rollout_id": row.rollout_id,
        "rollgate_group_id": row.group_id,
        "rollgate_row_index": row.row_index,
    }
    try:
        s.validate()
    except AssertionError as error:
        raise RowError(f"{_NAME}: row {row.rollout_id}: {error}") from error
    return s


def make_generate(fetch_rows: Callable[[Any, dict[str, Any]], Any]) -> Callable[[Any], Any]:
    """A miles custom generate function (``--custom-generate-function-path`` names a module attribute holding it).
    ``fetch_rows(sample, sampling_params)`` (sync or async) returns the row, or the rows, of the rollout rollgate's
    runner ran for ``sample``'s task."""
    from miles.rollout.base_types import GenerateFnOutput

    async def generate(input: Any) -> Any:
        got = fetch_rows(input.sample, input.sampling_params)
        if inspect.isawaitable(got):
            got = await got
        rows: Sequence[Row] = [got] if isinstance(got, Row) else list(got)
        if not rows:
            raise RowError(f"{_NAME}: fetch_rows returned no row")
        samples = [to_sample(r, input.sample if i == 0 else copy.deepcopy(input.sample)) for i, r in enumerate(rows)]
        return GenerateFnOutput(samples=samples[0] if len(samples) == 1 else samples)

    return generate
