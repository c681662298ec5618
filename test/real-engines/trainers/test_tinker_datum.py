"""Rows as Tinker Datum objects, validated by the installed tinker package: its own Datum conversion, the proto
encoding its training client sends, and a loss run through its client-side custom-loss machinery."""

from __future__ import annotations

import dataclasses
import math
import unittest

import tinker
import torch
from tinker.lib.public_interfaces.custom_loss import check_loss_inputs, run_loss_handle, trace_loss
from tinker.proto.request_conv import forward_backward_request_to_proto
from tinker.types.forward_backward_input import ForwardBackwardInput
from tinker.types.forward_backward_request import ForwardBackwardRequest

from fixtures import routes_for, row, with_tool_output
from rollgate.adapters.tinker_datum import TESTED_TINKER_VERSION, to_datum, to_datums
from rollgate.rows import RowError

PROMPT = [1, 2, 3]


def _is_loss(logprobs: torch.Tensor, logprobs_old: torch.Tensor, advantages: torch.Tensor):
    """The importance-sampling objective, as a Tinker custom loss (read inputs: sampling logprobs, advantages)."""
    ratio = torch.exp(logprobs - logprobs_old)
    loss = -(ratio * advantages).sum()
    return loss, {"custom/tokens:sum": (advantages != 0).sum()}


class TinkerDatum(unittest.TestCase):
    def test_version_is_the_tested_one(self) -> None:
        self.assertEqual(tinker.__version__, TESTED_TINKER_VERSION)

    def test_tokens_shifted_by_one_and_tool_tokens_carry_no_advantage(self) -> None:
        r = with_tool_output("ro-1", PROMPT, advantage=2.0)
        d = to_datum(r)
        self.assertIsInstance(d, tinker.Datum)
        self.assertEqual(d.model_input.to_ints(), list(r.tokens[:-1]))
        self.assertEqual(d.loss_fn_inputs["target_tokens"].tolist(), list(r.tokens[1:]))
        self.assertEqual(d.loss_fn_inputs["target_tokens"].dtype, "int64")
        # target i predicts tokens[i + 1]: response token j is target len(prompt) - 1 + j
        adv = d.loss_fn_inputs["advantages"].tolist()
        self.assertEqual(adv, [0.0, 0.0] + [2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 2.0])
        lp = d.loss_fn_inputs["logprobs"].tolist()
        self.assertEqual(lp[2:], [-0.25, -0.5, 0.0, 0.0, 0.0, -0.75, -1.0])
        self.assertEqual(lp[:2], [0.0, 0.0])
        self.assertEqual(set(d.loss_fn_inputs), {"target_tokens", "logprobs", "advantages"})

    def test_cross_entropy_gets_weights_and_no_logprobs(self) -> None:
        r = with_tool_output("ro-1", PROMPT, logprobs=None)
        d = to_datum(r, loss_fn="cross_entropy")
        self.assertEqual(set(d.loss_fn_inputs), {"target_tokens", "weights"})
        self.assertEqual(d.loss_fn_inputs["weights"].tolist(), [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0])

    def test_the_training_clients_proto_encoding_takes_them(self) -> None:
        rows = [with_tool_output("ro-1", PROMPT), row("ro-2", [5, 6], [7, 8, 9], advantage=-0.5)]
        data = to_datums(rows)
        request = ForwardBackwardRequest(
            forward_backward_input=ForwardBackwardInput(data=data, loss_fn="importance_sampling"), model_id="m", seq_id=1
        )
        msg = forward_backward_request_to_proto(request)
        self.assertEqual(len(msg.data), 2)
        self.assertEqual(set(msg.data[1].loss_fn_inputs), {"target_tokens", "logprobs", "advantages"})
        self.assertGreater(msg.ByteSize(), 0)

    def test_tinkers_own_custom_loss_runs_on_them(self) -> None:
        rows = [with_tool_output("ro-1", PROMPT, advantage=1.5), row("ro-2", [5, 6], [7, 8, 9], advantage=-0.5)]
        data = to_datums(rows)
        handle = trace_loss(_is_loss, {"logprobs": 1, "logprobs_old": 1, "advantages": 1}, session_id="local")
        # A custom loss's first parameter is the policy's logprobs, so it reads the sampling logprobs (Tinker's RL
        # losses' "logprobs" input) under another name.
        renamed = [
            dataclasses.replace(d, loss_fn_inputs={**d.loss_fn_inputs, "logprobs_old": d.loss_fn_inputs["logprobs"]})
            for d in data
        ]
        check_loss_inputs(handle, renamed)
        # the new policy's logprobs equal to the sampling ones: ratio 1, loss = -(sum of advantages on policy tokens)
        current = [d.loss_fn_inputs["logprobs"].to_torch().float() for d in data]
        loss, metrics = run_loss_handle(handle, renamed, current)
        self.assertTrue(math.isclose(loss.item(), -(1.5 * 4 - 0.5 * 3), rel_tol=1e-6))
        self.assertEqual(metrics["custom/tokens:sum"], 7.0)

    def test_a_multi_row_rollout_gives_one_datum_per_row(self) -> None:
        rows = [row("ro-1", PROMPT, [4, 5], row_index=0), row("ro-1", [1, 2, 3, 4, 5, 6], [7], row_index=1)]
        data = to_datums(rows, advantages=[1.0, 1.0])
        self.assertEqual([d.model_input.length for d in data], [4, 6])

    def test_stale_tokens_masked_by_the_trainer_carry_no_advantage(self) -> None:
        r = row("ro-1", PROMPT, [4, 5, 6], token_versions=[2, 3, 3], advantage=1.0)
        d = to_datum(r.mask_stale(3))
        self.assertEqual(d.loss_fn_inputs["advantages"].tolist(), [0.0, 0.0, 0.0, 1.0, 1.0])

    def test_routes_present_or_absent_give_the_same_datum(self) -> None:
        r = row("ro-1", PROMPT, [4, 5])
        routed = dataclasses.replace(r, routed_experts=routes_for(r))
        a, b = to_datum(routed), to_datum(r)
        self.assertEqual(a.model_input.to_ints(), b.model_input.to_ints())
        self.assertEqual({k: v.tolist() for k, v in a.loss_fn_inputs.items()}, {k: v.tolist() for k, v in b.loss_fn_inputs.items()})

    def test_refusals(self) -> None:
        cases = [
            (row("ro-1", PROMPT, [4, 5], logprobs=None), {}, "no sampling logprobs"),
            (row("ro-1", PROMPT, [4, 5], status="failed"), {}, "not trainable"),
            (row("ro-1", PROMPT, [4, 5], drop_reason="timeout"), {}, "not trainable"),
            (row("ro-1", PROMPT, [], logprobs=None), {"loss_fn": "cross_entropy"}, "without response tokens"),
            (row("ro-1", [], [4, 5]), {}, "no prompt token"),
            (row("ro-1", PROMPT, [4, 5], advantage=None), {}, "no advantage"),
            (row("ro-1", PROMPT, [4, 5]), {"loss_fn": "sft"}, "unknown loss_fn"),
        ]
        for r, kw, message in cases:
            with self.subTest(message=message), self.assertRaisesRegex(RowError, message):
                to_datum(r, **kw)


if __name__ == "__main__":
    unittest.main()
