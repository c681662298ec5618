"""Rows as verl AgentLoopOutput objects, validated by the installed verl: its pydantic model, and its agent-loop
worker's own post-processing (padding, masks, logprobs, routes, reward) and collation into a DataProto batch, run
on the outputs the adapter built. Also a RollgateAgentLoop subclass run as verl runs an agent loop."""

from __future__ import annotations

import asyncio
import dataclasses
import unittest
from typing import Any

import numpy as np
import torch
import verl
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, AgentLoopWorker

from fixtures import routes_for, row, tiny_model_dir, with_tool_output
from rollgate.adapters.verl_agent_loop import (
    TESTED_VERL_VERSION,
    RollgateAgentLoop,
    to_agent_loop_output,
    to_agent_loop_outputs,
)
from rollgate.rows import Row, RowError

PROMPT_LEN, RESPONSE_LEN = 8, 10


def _worker() -> Any:
    """verl's AgentLoopWorker with only what its post-processing reads: the tokenizer and the rollout lengths. Its
    constructor also wires inference servers and reward workers, which post-processing does not touch."""
    worker = object.__new__(AgentLoopWorker)
    worker.tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir())
    worker.processor = None
    worker.mm_processor_kwargs = {}
    worker.reward_loop_worker_handles = None
    worker.distillation_enabled = False
    worker.rollout_config = OmegaConf.create({"prompt_length": PROMPT_LEN, "response_length": RESPONSE_LEN})
    return worker


def _collate(outputs: list[Any]) -> Any:
    worker = _worker()

    async def run() -> Any:
        raw_prompt = [{"role": "user", "content": "task"}]
        internal = [await worker._agent_loop_postprocess(o, False, raw_prompt=raw_prompt) for o in outputs]
        return worker._postprocess(internal)

    return asyncio.run(run())


class VerlAgentLoopOutput(unittest.TestCase):
    def test_version_is_the_tested_one(self) -> None:
        self.assertEqual(verl.__version__, TESTED_VERL_VERSION)

    def test_fields(self) -> None:
        r = with_tool_output("ro-1", [1, 2, 3], reward=1.0, token_versions=[3] * 7)
        out = to_agent_loop_output(r)
        self.assertIsInstance(out, AgentLoopOutput)
        self.assertEqual(out.response_mask, [1, 1, 0, 0, 0, 1, 1])
        self.assertEqual(out.num_turns, 4)  # user, assistant, tool, assistant
        self.assertEqual(out.reward_score, 1.0)
        self.assertEqual(out.extra_fields["rollgate_token_versions"], [3] * 7)
        AgentLoopOutput.model_validate(out.model_dump())  # verl's own model accepts its own dump

    def test_verl_pads_and_collates_a_batch_with_routes(self) -> None:
        a = with_tool_output("ro-1", [1, 2, 3], reward=1.0)
        b = row("ro-2", [5, 6], [7, 8], reward=0.0)
        rows = [dataclasses.replace(r, routed_experts=routes_for(r)) for r in (a, b)]
        batch = _collate(to_agent_loop_outputs(rows))
        t = batch.batch
        self.assertEqual(tuple(t["responses"].shape), (2, RESPONSE_LEN))
        # prompts left-padded, responses right-padded, masks and logprobs aligned with the response ids
        self.assertEqual(t["prompts"][0, -3:].tolist(), [1, 2, 3])
        self.assertEqual(t["responses"][0, :7].tolist(), [11, 12, 90, 91, 92, 13, 14])
        self.assertEqual(t["response_mask"][0].tolist(), [1, 1, 0, 0, 0, 1, 1, 0, 0, 0])
        self.assertEqual(t["response_mask"][1].tolist(), [1, 1] + [0] * 8)
        self.assertEqual(t["rollout_log_probs"][0, :7].tolist(), [-0.25, -0.5, 0.0, 0.0, 0.0, -0.75, -1.0])
        # the reward on the last real response token
        self.assertEqual(t["rm_scores"][0].nonzero().flatten().tolist(), [6])
        # routes placed at each token's absolute position (after the prompt's left padding)
        routes = t["routed_experts"]
        self.assertEqual(tuple(routes.shape), (2, PROMPT_LEN + RESPONSE_LEN, 2, 2))
        self.assertEqual(routes.dtype, torch.int16)
        start = PROMPT_LEN - 3
        expected = torch.tensor(np.asarray(routes_for(rows[0]), dtype=np.int16))
        self.assertTrue(torch.equal(routes[0, start : start + 10], expected))
        self.assertEqual(list(batch.non_tensor_batch["rollgate_rollout_id"]), ["ro-1", "ro-2"])

    def test_rows_without_logprobs_collate_without_them(self) -> None:
        rows = [row("ro-1", [1, 2], [3, 4], logprobs=None), row("ro-2", [1, 2], [5], logprobs=None)]
        batch = _collate(to_agent_loop_outputs(rows))
        self.assertNotIn("rollout_log_probs", batch.batch.keys())

    def test_a_multi_row_rollout_with_stale_tokens(self) -> None:
        first = row("ro-1", [1, 2], [3, 4], row_index=0, token_versions=[2, 3])
        second = row("ro-1", [1, 2, 3, 4, 9], [5, 6], row_index=1, token_versions=[3, 3])
        batch = _collate(to_agent_loop_outputs([first.mask_stale(3), second.mask_stale(3)]))
        self.assertEqual(batch.batch["response_mask"][:, :2].tolist(), [[0, 1], [1, 1]])
        self.assertEqual(list(batch.non_tensor_batch["rollgate_rollout_id"]), ["ro-1", "ro-1"])

    def test_refusals(self) -> None:
        mixed = [row("ro-1", [1], [2]), row("ro-2", [1], [3], logprobs=None)]
        with self.assertRaisesRegex(RowError, "logprobs only when every output"):
            to_agent_loop_outputs(mixed)
        r = row("ro-1", [1], [2])
        with self.assertRaisesRegex(RowError, "routed_experts only when every output"):
            to_agent_loop_outputs([r, dataclasses.replace(r, rollout_id="ro-2", routed_experts=routes_for(r))])
        with self.assertRaisesRegex(RowError, "not trainable"):
            to_agent_loop_output(row("ro-1", [1], [2], status="cancelled"))
        with self.assertRaisesRegex(RowError, "without response tokens"):
            to_agent_loop_output(row("ro-1", [1], [], logprobs=None))

    def test_a_rollgate_agent_loop_runs_as_verl_runs_one(self) -> None:
        served = with_tool_output("ro-7", [1, 2, 3])

        class Loop(RollgateAgentLoop):
            async def fetch_row(self, sampling_params: dict[str, Any], **kwargs: Any) -> Row:
                assert kwargs["index"] == 7 and sampling_params["temperature"] == 1.0
                return served

        loop = object.__new__(Loop)  # verl's constructor wires inference servers the loop does not call
        out = asyncio.run(loop.run({"temperature": 1.0}, index=7))
        self.assertIsInstance(out, AgentLoopOutput)
        self.assertEqual(out.response_ids, list(served.response_ids))


if __name__ == "__main__":
    unittest.main()
