"""The canonical row: built from a batch and from export lines, its checks, version segments and stale masking.
Standard library only (the batch is decoded without NumPy)."""

from __future__ import annotations

import json
import unittest
from typing import Any

from rollgate import decode_json
from rollgate.adapters import _checks
from rollgate.rows import Row, RowError, VersionSegment, group_rows, row_from_export, rows_from_batch, rows_from_export


def _batch_json(**sample_overrides: Any) -> dict[str, Any]:
    sample = {
        "rollout_id": "ro-1", "group_id": "g", "prompt_ids": [1, 2, 3], "response_ids": [10, 11, 90, 91, 12],
        "response_mask": [1, 1, 0, 0, 1], "logprobs": [-0.5, -0.25, 0.0, 0.0, -1.0], "reward": 1.0,
        "advantage": 0.75, "model_version": 3, "sequence_ids": [7, 8], "token_versions": [3, 3, 4, 4, 4],
    }
    sample.update(sample_overrides)
    return {
        "batch_id": "b", "step": 0, "model_version": 4, "advantage_estimator": "grpo", "created_at": 1.0,
        "samples": [sample], "stats": {"rollouts": 1, "groups": 1, "mean_reward": 1.0, "dropped": {}},
    }


class FromBatch(unittest.TestCase):
    def test_every_field_comes_across(self) -> None:
        [row] = rows_from_batch(decode_json(_batch_json(), use_numpy=False))
        self.assertEqual(row.tokens, (1, 2, 3, 10, 11, 90, 91, 12))
        self.assertEqual((row.prompt_len, row.response_len, row.policy_tokens), (3, 5, 3))
        self.assertEqual(row.loss_mask, (1, 1, 0, 0, 1))
        self.assertEqual(row.logprobs, (-0.5, -0.25, 0.0, 0.0, -1.0))
        self.assertEqual((row.reward, row.advantage, row.model_version), (1.0, 0.75, 3))
        self.assertEqual((row.group_id, row.sequence_ids, row.row_index), ("g", (7, 8), 0))
        self.assertIsNone(row.temperature)
        self.assertIsNone(row.routed_experts)
        self.assertTrue(row.trainable)

    def test_numpy_arrays_become_tuples(self) -> None:
        try:
            import numpy  # noqa: F401
        except ImportError:
            self.skipTest("NumPy is not installed")
        [row] = rows_from_batch(decode_json(_batch_json()))
        self.assertEqual(row.response_ids, (10, 11, 90, 91, 12))
        self.assertIsInstance(row.logprobs, tuple)

    def test_fields_a_newer_gateway_sends_are_read(self) -> None:
        routes = [[[0, 1]]] * 8
        data = _batch_json(temperature=0.7, routed_experts=routes, attempt_id="at-1", status="succeeded", x=1)
        [row] = rows_from_batch(decode_json(data, use_numpy=False))
        self.assertEqual((row.temperature, row.attempt_id, row.status), (0.7, "at-1", "succeeded"))
        self.assertTrue(row.has_routes)
        self.assertEqual(dict(row.extra), {"x": 1})

    def test_missing_logprobs_stay_missing(self) -> None:
        [row] = rows_from_batch(decode_json(_batch_json(logprobs=None), use_numpy=False))
        self.assertFalse(row.has_logprobs)
        self.assertIsNone(row.logprobs)

    def test_row_index_counts_rows_of_one_rollout(self) -> None:
        data = _batch_json()
        data["samples"] = [dict(data["samples"][0]), dict(data["samples"][0], sequence_ids=[9])]
        rows = rows_from_batch(decode_json(data, use_numpy=False))
        self.assertEqual([r.row_index for r in rows], [0, 1])
        self.assertEqual([r.sequence_ids for r in group_rows(rows)["ro-1"]], [(7, 8), (9,)])


class FromExport(unittest.TestCase):
    LINE = {
        "rollout_id": "ro-9", "attempt_id": "at-9", "row_index": 1, "prompt_ids": [5, 6], "response_ids": [7, 8],
        "response_mask": [1, 1], "logprobs": [-0.1, -0.2], "reward": 0.5, "model_version": 2, "sequence_ids": [3],
        "is_drop": False,
    }

    def test_export_line(self) -> None:
        row = row_from_export(json.dumps(self.LINE), group_id="g9")
        self.assertEqual((row.rollout_id, row.attempt_id, row.row_index, row.group_id), ("ro-9", "at-9", 1, "g9"))
        self.assertEqual((row.reward, row.advantage, row.status, row.drop_reason), (0.5, None, None, None))

    def test_blank_lines_skipped_and_status_given(self) -> None:
        rows = rows_from_export([json.dumps(self.LINE), "", "\n"], status="failed")
        self.assertEqual(len(rows), 1)
        self.assertFalse(rows[0].trainable)

    def test_missing_field_is_refused(self) -> None:
        line = dict(self.LINE)
        del line["response_mask"]
        with self.assertRaisesRegex(RowError, "response_mask"):
            row_from_export(line)


class Checks(unittest.TestCase):
    def row(self, **kw: Any) -> Row:
        base: dict[str, Any] = dict(rollout_id="r", prompt_ids=[1], response_ids=[2, 3], loss_mask=[1, 1],
                                    logprobs=[-0.1, -0.2], reward=1.0)
        base.update(kw)
        return Row(**base)

    def test_misaligned_arrays_are_refused(self) -> None:
        for kw, word in [({"loss_mask": [1]}, "loss_mask"), ({"logprobs": [-0.1]}, "logprobs"),
                         ({"token_versions": [1]}, "token_versions"), ({"loss_mask": [1, 2]}, "0 and 1"),
                         ({"routed_experts": [[[0]]] * 2}, "routed_experts"), ({"response_ids": [2, 3.5]}, "integers"),
                         ({"logprobs": [float("nan"), -0.1]}, "finite"), ({"temperature": -1.0}, "temperature")]:
            with self.subTest(kw=kw), self.assertRaisesRegex(RowError, word):
                self.row(**kw)

    def test_failed_and_dropped_rows_are_not_trainable(self) -> None:
        self.assertFalse(self.row(status="failed").trainable)
        self.assertFalse(self.row(status="cancelled").trainable)
        self.assertFalse(self.row(drop_reason="timeout").trainable)
        self.assertTrue(self.row(status="succeeded").trainable)
        with self.assertRaisesRegex(RowError, "r \\(status failed"):
            _checks.refuse_untrainable([self.row(status="failed")], "x")

    def test_version_segments(self) -> None:
        row = self.row(response_ids=[2, 3, 4, 5], loss_mask=[1, 1, 0, 1], logprobs=None, token_versions=[1, 1, 2, 2])
        self.assertEqual(row.version_segments(), [VersionSegment(0, 2, 1), VersionSegment(2, 4, 2)])
        self.assertEqual(self.row().version_segments(), [])

    def test_mask_stale(self) -> None:
        row = self.row(response_ids=[2, 3, 4, 5], loss_mask=[1, 1, 0, 1], logprobs=None, token_versions=[1, 2, 1, 3])
        self.assertEqual(row.mask_stale(2).loss_mask, (0, 1, 0, 1))
        self.assertEqual(row.mask_stale(2).response_ids, row.response_ids)
        with self.assertRaisesRegex(RowError, "token_versions"):
            self.row().mask_stale(2)


if __name__ == "__main__":
    unittest.main()
