"""Rows as miles Samples, validated by the installed miles: Sample.validate, its dict round trip, and a custom
generate function loaded and called the way miles's rollout loads and calls one."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import unittest
from typing import Any

import numpy as np
from miles.rollout.base_types import GenerateFnInput, GenerateFnOutput
from miles.rollout.inference_rollout.compatibility import load_generate_function
from miles.utils.types import Sample

from fixtures import routes_for, row, with_tool_output
from rollgate.adapters.miles_sample import TESTED_MILES_VERSION, make_generate, to_sample
from rollgate.rows import Row, RowError

PROMPT = [1, 2, 3]
SERVED: dict[int, Any] = {}


def _fetch(sample: Any, sampling_params: dict[str, Any]) -> Any:
    return SERVED[sample.index]


# What --custom-generate-function-path names in this test: test_miles_sample.GENERATE
GENERATE = make_generate(_fetch)


class MilesSample(unittest.TestCase):
    def test_version_is_the_tested_one(self) -> None:
        self.assertEqual(importlib.metadata.version("miles-rl"), TESTED_MILES_VERSION)

    def test_fields_and_miles_validation(self) -> None:
        r = with_tool_output("ro-1", PROMPT, reward=1.0, token_versions=[3, 3, 3, 3, 3, 4, 4])
        s = to_sample(r)
        s.validate()
        self.assertEqual(s.tokens, list(r.tokens))
        self.assertEqual(s.response_length, 7)
        self.assertEqual(s.loss_mask, [1, 1, 0, 0, 0, 1, 1])
        self.assertEqual(s.rollout_log_probs, [-0.25, -0.5, 0.0, 0.0, 0.0, -0.75, -1.0])
        self.assertEqual(s.weight_versions, ["3", "4"])
        self.assertEqual(s.oldest_weight_version, 3)
        self.assertEqual(s.effective_response_length, 4)
        self.assertEqual(s.status, Sample.Status.COMPLETED)
        self.assertEqual(Sample.from_dict(s.to_dict()).tokens, s.tokens)

    def test_routes_cover_the_positions_the_engine_ran(self) -> None:
        r = row("ro-1", PROMPT, [4, 5])
        s = to_sample(dataclasses.replace(r, routed_experts=routes_for(r)))
        self.assertEqual(s.rollout_routed_experts.shape, (len(r.tokens) - 1, 2, 2))
        self.assertEqual(s.rollout_routed_experts.dtype, np.int32)
        self.assertIsNone(to_sample(r).rollout_routed_experts)

    def test_missing_logprobs_and_stale_tokens(self) -> None:
        s = to_sample(row("ro-1", PROMPT, [4, 5, 6], logprobs=None, token_versions=[2, 3, 3]).mask_stale(3))
        self.assertIsNone(s.rollout_log_probs)
        self.assertEqual(s.loss_mask, [0, 1, 1])
        s.validate()

    def test_refusals(self) -> None:
        for r, message in [
            (row("ro-1", PROMPT, [4], status="failed"), "not trainable"),
            (row("ro-1", PROMPT, [], logprobs=None), "without response tokens"),
        ]:
            with self.subTest(message=message), self.assertRaisesRegex(RowError, message):
                to_sample(r)

    def test_generate_function_loaded_and_called_as_miles_does(self) -> None:
        SERVED[3] = with_tool_output("ro-3", PROMPT, reward=0.5)
        SERVED[4] = [row("ro-4", PROMPT, [4, 5], row_index=0), row("ro-4", [1, 2, 3, 4, 5, 9], [6], row_index=1)]
        fn = load_generate_function("test_miles_sample.GENERATE")

        def call(index: int) -> Any:
            sample = Sample(index=index, group_index=1, prompt="task", label="x")
            out = asyncio.run(fn(GenerateFnInput(state=None, sample=sample, sampling_params={}, evaluation=False)))
            self.assertIsInstance(out, GenerateFnOutput)
            return out.samples

        one = call(3)
        self.assertEqual((one.index, one.group_index, one.label, one.reward), (3, 1, "x", 0.5))
        several = call(4)
        self.assertEqual([s.metadata["rollgate_row_index"] for s in several], [0, 1])
        self.assertEqual([s.index for s in several], [4, 4])
        self.assertIsNot(several[0], several[1])


if __name__ == "__main__":
    unittest.main()
