"""verl and TRL layouts of a batch: padding sides, masks, broadcast advantages."""

from __future__ import annotations

import unittest
from typing import Any

from rollgate import decode_json
from rollgate.layouts import to_torch, to_trl, to_verl

from . import require_numpy


def _batch(with_logprobs: bool = True) -> Any:
    def sample(prompt: list[int], response: list[int], mask: list[int], adv: float, reward: float) -> dict[str, Any]:
        return {
            "rollout_id": f"ro-{len(prompt)}", "group_id": "g", "prompt_ids": prompt, "response_ids": response,
            "response_mask": mask, "logprobs": [-0.5 * m for m in mask] if with_logprobs else None,
            "reward": reward, "advantage": adv, "model_version": 3, "sequence_ids": [1],
        }

    return decode_json({
        "batch_id": "b", "step": 0, "model_version": 3, "advantage_estimator": "grpo", "created_at": 1.0,
        "samples": [
            sample([1, 2, 3], [10, 11, 90, 91, 12], [1, 1, 0, 0, 1], 1.5, 1.0),  # two turns, tool output between
            sample([4], [13], [1], -0.5, 0.0),
        ],
        "stats": {"rollouts": 2, "groups": 1, "mean_reward": 0.5, "dropped": {}},
    })


class Verl(unittest.TestCase):
    def setUp(self) -> None:
        self.np = require_numpy()

    def test_left_padded_prompts_right_padded_responses(self) -> None:
        np = self.np
        out = to_verl(_batch(), pad_token_id=0)
        self.assertEqual(out["prompts"].tolist(), [[1, 2, 3], [0, 0, 4]])
        self.assertEqual(out["responses"].tolist(), [[10, 11, 90, 91, 12], [13, 0, 0, 0, 0]])
        self.assertEqual(out["input_ids"].tolist()[1], [0, 0, 4, 13, 0, 0, 0, 0])
        self.assertEqual(out["attention_mask"].tolist()[1], [0, 0, 1, 1, 0, 0, 0, 0])
        self.assertEqual(out["attention_mask"].tolist()[0], [1] * 8)
        self.assertEqual(out["position_ids"].tolist()[1], [0, 0, 0, 1, 1, 1, 1, 1])
        self.assertEqual(out["response_mask"].tolist(), [[1, 1, 0, 0, 1], [1, 0, 0, 0, 0]])
        np.testing.assert_allclose(out["advantages"], [[1.5, 1.5, 0, 0, 1.5], [-0.5, 0, 0, 0, 0]])
        np.testing.assert_allclose(out["returns"], out["advantages"])
        np.testing.assert_allclose(out["old_log_probs"], [[-0.5, -0.5, 0, 0, -0.5], [-0.5, 0, 0, 0, 0]])
        np.testing.assert_allclose(out["rollout_log_probs"], out["old_log_probs"])
        np.testing.assert_allclose(out["token_level_rewards"], [[0, 0, 0, 0, 1.0], [0, 0, 0, 0, 0]])
        self.assertEqual(out["old_log_probs"].dtype, np.float32)

    def test_fixed_widths_and_no_silent_truncation(self) -> None:
        out = to_verl(_batch(), max_prompt_len=6, max_response_len=8)
        self.assertEqual(out["input_ids"].shape, (2, 14))
        with self.assertRaisesRegex(ValueError, "max_response_len"):
            to_verl(_batch(), max_response_len=4)

    def test_logprob_keys_are_left_out_when_a_sample_has_none(self) -> None:
        out = to_verl(_batch(with_logprobs=False))
        self.assertNotIn("old_log_probs", out)
        self.assertNotIn("rollout_log_probs", out)


class Trl(unittest.TestCase):
    def test_grpo_inputs(self) -> None:
        np = require_numpy()
        out = to_trl(_batch(), pad_token_id=7)
        self.assertEqual(out["prompt_ids"].tolist(), [[1, 2, 3], [7, 7, 4]])
        self.assertEqual(out["prompt_mask"].tolist(), [[1, 1, 1], [0, 0, 1]])
        self.assertEqual(out["completion_mask"].tolist(), [[1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
        self.assertEqual(out["tool_mask"].tolist(), [[1, 1, 0, 0, 1], [1, 0, 0, 0, 0]])
        np.testing.assert_allclose(out["advantages"], [1.5, -0.5])
        self.assertEqual(int(out["num_items_in_batch"]), 4)
        np.testing.assert_allclose(out["sampling_per_token_logps"], out["old_per_token_logps"])


class Torch(unittest.TestCase):
    def test_conversion_when_pytorch_is_installed(self) -> None:
        require_numpy()
        try:
            import torch
        except ImportError:
            with self.assertRaisesRegex(ImportError, "needs PyTorch"):
                to_torch({})
            return
        tensors = to_torch(to_verl(_batch()))
        self.assertEqual(tensors["input_ids"].dtype, torch.long)
        self.assertEqual(tensors["advantages"].dtype, torch.float32)


if __name__ == "__main__":
    unittest.main()
