"""Rows through a TRL GRPOTrainer rollout_func, checked by the installed TRL itself: a real GRPOTrainer on the
real-engine suite's tiny Qwen3 model takes one training step on rows from the adapter, and the tensors its own
_generate_and_score_completions built from them (masks, logprobs, advantages) are compared with the rows."""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
import unittest
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")

import torch
import trl
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer

from fixtures import routes_for, row, tiny_model_dir, with_tool_output
from trl.experimental.async_grpo.async_rollout_worker import RolloutSample
from trl.experimental.async_grpo.packing import TreeRow

from rollgate.adapters.trl_grpo import (
    TESTED_TRL_VERSION,
    make_rollout_func,
    rollgate_reward,
    rollout_output,
    to_rollout_samples,
)
from rollgate.rows import Row, RowError


class Contract(unittest.TestCase):
    def test_version_is_the_tested_one(self) -> None:
        self.assertEqual(trl.__version__, TESTED_TRL_VERSION)

    def test_keys_and_values(self) -> None:
        rows = [with_tool_output("ro-1", [1, 2], reward=1.0), row("ro-2", [1, 2], [5, 6], logprobs=None, reward=0.0)]
        out = rollout_output(rows)
        self.assertEqual(out["prompt_ids"], [[1, 2], [1, 2]])
        self.assertEqual(out["completion_ids"], [[11, 12, 90, 91, 92, 13, 14], [5, 6]])
        self.assertEqual(out["env_mask"], [[1, 1, 0, 0, 0, 1, 1], [1, 1]])
        self.assertEqual(out["logprobs"][1], [None, None])  # marked missing, never invented
        self.assertEqual(out["rollgate_reward"], [1.0, 0.0])

    def test_refusals(self) -> None:
        cases = [
            ([row("ro-1", [1], [2], row_index=0), row("ro-1", [1, 2, 3], [4], row_index=1)], "several rows"),
            ([row("ro-1", [1], [2], status="failed")], "not trainable"),
            ([row("ro-1", [1], [2], drop_reason="aborted")], "not trainable"),
            ([row("ro-1", [1], [], logprobs=None)], "without response tokens"),
        ]
        for rows, message in cases:
            with self.subTest(message=message), self.assertRaisesRegex(RowError, message):
                rollout_output(rows)
        func = make_rollout_func(lambda prompts: [row("ro-1", [1], [2])])
        with self.assertRaisesRegex(RowError, "2 prompts but 1 rows"):
            func(["a", "b"], None)


class AsyncGrpo(unittest.TestCase):
    """RolloutSamples through async GRPO's own packer (TreeRow), which turns them into the loss's inputs."""

    @staticmethod
    def _queue_dict(sample: Any) -> dict[str, Any]:
        # The fields async GRPO's RolloutQueueDataset hands the packer for each RolloutSample.
        keys = ("input_ids", "completion_mask", "old_log_probs", "advantage", "group_id", "metrics")
        return {k: getattr(sample, k) for k in keys}

    def test_packed_targets_are_the_policy_tokens_with_their_logprobs(self) -> None:
        prompt = [1, 2, 3]
        rows = [
            with_tool_output("ro-1", prompt, advantage=1.5, group_id="g"),
            row("ro-2", prompt, [7, 8, 9], advantage=-0.5, group_id="g", token_versions=[2, 3, 3]).mask_stale(3),
            row("ro-3", [4, 5], [6], advantage=0.25, group_id="h"),
        ]
        samples = to_rollout_samples(rows)
        self.assertTrue(all(isinstance(s, RolloutSample) for s in samples))
        self.assertEqual([s.group_id for s in samples], [0, 0, 1])
        tree = TreeRow()
        for s in samples:
            tree.add(self._queue_dict(s))
        packed = tree.pack()
        # the shared prompt is forwarded once: fewer unique tokens than the three rows hold
        self.assertLess(packed["input_ids"].numel(), sum(len(r.tokens) for r in rows))
        by_sample: dict[int, list[tuple[int, float, float]]] = {}
        labels = packed["shift_labels"]
        for t, lp, adv, seg in zip(packed["token_index"].tolist(), packed["old_log_probs"].tolist(),
                                   packed["advantages"].tolist(), packed["segment_id"].tolist()):
            by_sample.setdefault(seg, []).append((int(labels[t]), lp, adv))
        self.assertEqual(by_sample[0], [(11, -0.25, 1.5), (12, -0.5, 1.5), (13, -0.75, 1.5), (14, -1.0, 1.5)])
        self.assertEqual([tok for tok, _, _ in by_sample[1]], [8, 9])  # token 7 is stale (version 2 < 3)
        self.assertEqual(by_sample[2], [(6, -0.5, 0.25)])

    def test_refusals(self) -> None:
        for r, message in [
            (row("ro-1", [1], [2], logprobs=None), "no logprobs"),
            (row("ro-1", [1], [2], advantage=None), "no advantage"),
            (row("ro-1", [1], [2], model_version=None), "no model_version"),
            (row("ro-1", [1], [2], status="failed"), "not trainable"),
        ]:
            with self.subTest(message=message), self.assertRaisesRegex(RowError, message):
                to_rollout_samples([r])


class CapturingTrainer(trl.GRPOTrainer):
    """Keeps what TRL built from the rollout_func's output, for the test to compare with the rows."""

    captured: list[dict[str, Any]]

    def _generate_and_score_completions(self, inputs: Any) -> dict[str, Any]:
        out = super()._generate_and_score_completions(inputs)
        self.captured.append({k: v.detach().clone() if torch.is_tensor(v) else v for k, v in out.items()})
        return out


class RealTrainerStep(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        torch.manual_seed(0)
        path = tiny_model_dir()
        cls.tokenizer = AutoTokenizer.from_pretrained(path)
        eos = cls.tokenizer.eos_token_id
        prompts = ["What is 2+2?", "Name a colour."]
        ids = {p: cls.tokenizer(p)["input_ids"] for p in prompts}
        # Two groups of two. Group 0: a two-turn rollout with tool output between (masked), and one without
        # logprobs. Group 1: a rollout with stale tokens the trainer masks, and one carrying routed experts.
        stale = row("ro-3", ids[prompts[1]], [31, 32, 33, eos], token_versions=[2, 3, 3, 3], reward=0.5, group_id="g1")
        routed = row("ro-4", ids[prompts[1]], [41, eos], reward=0.0, group_id="g1")
        cls.rows: dict[str, list[Row]] = {
            prompts[0]: [
                with_tool_output("ro-1", ids[prompts[0]], reward=1.0),
                row("ro-2", ids[prompts[0]], [21, 22, eos], logprobs=None, reward=0.0),
            ],
            prompts[1]: [stale.mask_stale(3), dataclasses.replace(routed, routed_experts=routes_for(routed))],
        }
        served: dict[str, int] = {}

        def fetch_rows(batch_prompts: list[Any]) -> list[Row]:
            # TRL repeats each prompt num_generations times in a row; hand out that prompt's group in order.
            out = []
            for p in batch_prompts:
                out.append(cls.rows[p][served.get(p, 0) % 2])
                served[p] = served.get(p, 0) + 1
            return out

        cls.prompts = prompts
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        cls.before = {n: p.detach().clone() for n, p in model.named_parameters()}
        cls.tmp = tempfile.TemporaryDirectory()
        args = trl.GRPOConfig(
            output_dir=cls.tmp.name, per_device_train_batch_size=4, num_generations=2, max_steps=1,
            learning_rate=1e-2, logging_steps=1, report_to=[], use_cpu=True, save_strategy="no", beta=0.0,
            max_completion_length=16, seed=0, dataloader_num_workers=0,
        )
        cls.trainer = CapturingTrainer(
            model=model, reward_funcs=[rollgate_reward], args=args, processing_class=cls.tokenizer,
            train_dataset=Dataset.from_dict({"prompt": prompts}), rollout_func=make_rollout_func(fetch_rows),
        )
        cls.trainer.captured = []
        cls.trainer.train()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def _by_rollout(self) -> dict[str, int]:
        """Which captured batch index holds which rollout (TRL may order prompts as its sampler likes)."""
        batch = self.trainer.captured[0]
        out = {}
        for i in range(batch["completion_ids"].shape[0]):
            ids = batch["completion_ids"][i][batch["completion_mask"][i].bool()].tolist()
            for rows in self.rows.values():
                for r in rows:
                    if list(r.response_ids) == ids:
                        out[r.rollout_id] = i
        return out

    def test_trl_took_every_row_token_exactly(self) -> None:
        self.assertEqual(len(self.trainer.captured), 1)
        self.assertEqual(sorted(self._by_rollout()), ["ro-1", "ro-2", "ro-3", "ro-4"])

    def test_tool_and_stale_tokens_are_out_of_the_loss_mask(self) -> None:
        batch, where = self.trainer.captured[0], self._by_rollout()
        loss_mask = batch["completion_mask"] * batch["tool_mask"]
        n1 = 7
        self.assertEqual(loss_mask[where["ro-1"]][:n1].tolist(), [1, 1, 0, 0, 0, 1, 1])
        self.assertEqual(loss_mask[where["ro-3"]][:4].tolist(), [0, 1, 1, 1])  # token 0 from version 2 < 3
        self.assertEqual(int(loss_mask.sum().item()), 4 + 3 + 3 + 2)

    def test_advantages_follow_rollgates_rewards(self) -> None:
        batch, where = self.trainer.captured[0], self._by_rollout()
        adv = batch["advantages"]
        self.assertGreater(adv[where["ro-1"]].item(), 0)  # reward 1 against 0 in its group
        self.assertLess(adv[where["ro-2"]].item(), 0)
        self.assertGreater(adv[where["ro-3"]].item(), 0)  # 0.5 against 0
        self.assertLess(adv[where["ro-4"]].item(), 0)

    def test_sampling_logprobs_as_served_and_missing_ones_marked(self) -> None:
        batch, where = self.trainer.captured[0], self._by_rollout()
        lp = batch["sampling_per_token_logps"]
        self.assertEqual(lp[where["ro-1"]][:7].tolist(), [-0.25, -0.5, 0.0, 0.0, 0.0, -0.75, -1.0])
        self.assertTrue(all(math.isnan(x) for x in lp[where["ro-2"]][:3].tolist()))

    def test_the_step_trained(self) -> None:
        losses = [h["loss"] for h in self.trainer.state.log_history if "loss" in h]
        self.assertTrue(losses and all(math.isfinite(x) for x in losses), self.trainer.state.log_history)
        changed = [n for n, p in self.trainer.model.named_parameters() if not torch.equal(p.detach(), self.before[n])]
        self.assertTrue(changed, "no parameter changed after the step")


if __name__ == "__main__":
    unittest.main()
