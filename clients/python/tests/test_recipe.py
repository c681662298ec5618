"""The GRPO recipe computes the same update as the gateway's TypeScript reference trainer, to the last bit
that float64 arithmetic in a different order allows (the fixture comes from `policyGradientStep`)."""

from __future__ import annotations

import unittest

from rollgate import decode_binary, decode_json

from . import fixture_json, fixtures, require_numpy


class SameUpdateAsTheReferenceTrainer(unittest.TestCase):
    def setUp(self) -> None:
        self.np = require_numpy()
        import grpo_tiny_policy

        self.recipe = grpo_tiny_policy
        self.fixture = fixture_json("policy-gradient.json")

    def test_policy_states_match(self) -> None:
        for case in self.fixture["states"]:
            with self.subTest(context=case["context"]):
                self.assertEqual(self.recipe.action_state(case["context"]), case["state"])

    def test_policy_gradient_step_matches(self) -> None:
        np = self.np
        weights = {k: np.asarray(v, dtype=np.float64) for k, v in self.fixture["weights_in"]["theta"].items()}
        batch = decode_json(self.fixture["batch"], use_numpy=True)
        step = self.recipe.policy_gradient_step(weights, batch, self.fixture["learning_rate"])
        expected = self.fixture["weights_out"]["theta"]
        self.assertEqual(sorted(step.weights), sorted(expected))
        for key, row in expected.items():
            np.testing.assert_allclose(step.weights[key], row, rtol=0, atol=1e-12, err_msg=key)
        self.assertEqual(step.tokens_checked, self.fixture["tokens_checked"])
        self.assertAlmostEqual(step.max_logprob_error, self.fixture["max_logprob_error"], places=12)
        # The input weights are left as they were (the recomputation uses the weights that made the batch).
        for key, row in self.fixture["weights_in"]["theta"].items():
            np.testing.assert_array_equal(weights[key], row)

    def test_the_binary_layout_gives_the_same_update_within_float32(self) -> None:
        np = self.np
        weights = {k: np.asarray(v) for k, v in self.fixture["weights_in"]["theta"].items()}
        binary = decode_binary((fixtures() / "policy-gradient.bin").read_bytes())
        step = self.recipe.policy_gradient_step(weights, binary, self.fixture["learning_rate"])
        for key, row in self.fixture["weights_out"]["theta"].items():
            np.testing.assert_allclose(step.weights[key], row, rtol=0, atol=1e-9)


if __name__ == "__main__":
    unittest.main()
