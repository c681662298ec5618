"""A minimal GRPO trainer in Python with NumPy, training rollgate's tiny test policy through the gateway.

The Python twin of the gateway's TypeScript reference trainer (``test/servers/reference-trainer.ts``). The
policy (``test/servers/tiny-policy.ts``) is a tabular softmax: one logit per action letter a..p for each
state ``"<task>|<turn>"``, where the task is the first user message and the turn counts assistant headers;
after an action the end token follows with probability 1. Rollgate hands out GRPO batches (advantages
already normalized per group), and for every generated token (mask 1) of every sample this trainer applies
the policy gradient

    theta[state] += lr * advantage * (onehot(action) - softmax(theta[state])) / samples

It recomputes each recorded logprob under the weights it last posted (the ones that produced the batch) and
reports the largest difference, writes the new weights to a JSON file, and posts
``{version, batch_ids, lora_path, lora_name}`` so the policy server loads them through the weight-load hook.

Run: ``python3 grpo_tiny_policy.py --gateway http://127.0.0.1:8080 --weights-dir /tmp/w --api-key KEY``.
It prints one line per batch and, at the end, ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from rollgate import Batch, TrainerClient

ACTIONS = "abcdefghijklmnop"
ACTION_IDS: tuple[int, ...] = tuple(ord(a) for a in ACTIONS)
# The stand-in's "chars" tokenizer: one id per code point, plus five special tokens after the last one.
SPECIAL_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|end|>")
SPECIAL_BASE = 0x110000
END_TOKEN_ID = SPECIAL_BASE + 4
_TASK = re.compile(r"^(?:<\|system\|>.*?<\|end\|>)?<\|user\|>(.*?)<\|end\|>", re.S)

Weights = dict[str, np.ndarray]


def detokenize(ids: Sequence[int]) -> str:
    return "".join(SPECIAL_TOKENS[i - SPECIAL_BASE] if i >= SPECIAL_BASE else chr(i) for i in ids)


def action_state(context: Sequence[int]) -> str | None:
    """The state key of the next token's decision, or None when the next token is the forced end token."""
    if context and context[-1] in ACTION_IDS:
        return None
    text = detokenize(context)
    match = _TASK.search(text)
    task = match.group(1) if match else ""
    return f"{task}|{len(text.split('<|assistant|>')) - 2}"


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max()
    return shifted - math.log(float(np.exp(shifted).sum()))


def next_token_distribution(weights: Mapping[str, np.ndarray], context: Sequence[int]) -> tuple[tuple[int, ...], np.ndarray]:
    """Candidate next tokens and their logprobs under ``weights`` (the policy itself)."""
    state = action_state(context)
    if state is None:
        return (END_TOKEN_ID,), np.zeros(1)
    logits = weights.get(state)
    return ACTION_IDS, log_softmax(np.zeros(len(ACTION_IDS)) if logits is None else np.asarray(logits, dtype=np.float64))


@dataclass
class StepResult:
    weights: Weights
    max_logprob_error: float
    tokens_checked: int


def policy_gradient_step(weights: Mapping[str, np.ndarray], batch: Batch, learning_rate: float) -> StepResult:
    """One policy-gradient step over every generated token of every sample."""
    theta: Weights = {k: np.array(v, dtype=np.float64) for k, v in weights.items()}
    max_error = 0.0
    checked = 0
    n = len(batch.samples)
    for sample in batch.samples:
        context = [int(x) for x in sample.prompt_ids]
        mask = [int(x) for x in sample.response_mask]
        recorded = None if sample.logprobs is None else [float(x) for x in sample.logprobs]
        for i, token in enumerate(int(x) for x in sample.response_ids):
            if mask[i] == 1:
                ids, logprobs = next_token_distribution(weights, context)
                k = ids.index(token) if token in ids else -1
                recomputed = float(logprobs[k]) if k >= 0 else -math.inf
                error = abs((recorded[i] if recorded is not None else math.nan) - recomputed)
                max_error = math.inf if math.isnan(error) else max(max_error, error)
                checked += 1
                state = action_state(context)
                if state is not None and k >= 0:
                    row = theta.setdefault(state, np.zeros(len(ACTION_IDS)))
                    onehot = np.zeros(len(ACTION_IDS))
                    onehot[k] = 1.0
                    row += learning_rate * sample.advantage * (onehot - np.exp(logprobs)) / n
            context.append(token)
    return StepResult(weights=theta, max_logprob_error=max_error, tokens_checked=checked)


@dataclass
class TrainOptions:
    gateway: str
    weights_dir: str
    learning_rate: float = 16.0
    max_batches: int = 30
    stop_at_reward: float | None = None
    api_key: str | None = None
    binary: bool = True
    # Simulates a crash: the first delivery of this step's batch is dropped unacknowledged (it must come back).
    crash_at_step: int | None = None
    log: Any = field(default=sys.stdout)


def train(options: TrainOptions) -> dict[str, Any]:
    trainer = TrainerClient(options.gateway, api_key=options.api_key, binary=options.binary)
    weights: Weights = {}
    version = 0
    max_error = 0.0
    checked = 0
    crashed: set[str] = set()
    trained: list[dict[str, Any]] = []
    for delivery in trainer.batches(poll_s=60):
        batch = delivery.batch
        if batch.step == options.crash_at_step and batch.batch_id not in crashed:
            crashed.add(batch.batch_id)
            print(f"step {batch.step} delivery {delivery.delivery}: dropped without ack (simulated crash)", file=options.log, flush=True)
            continue
        reward = batch.mean_reward if batch.mean_reward is not None else 0.0
        if len(batch) == 0:
            trainer.ack(batch.batch_id)  # every group had equal rewards: nothing to learn, no new weights
        else:
            step = policy_gradient_step(weights, batch, options.learning_rate)
            weights, max_error, checked = step.weights, max(max_error, step.max_logprob_error), checked + step.tokens_checked
            version += 1
            path = os.path.join(options.weights_dir, f"weights-v{version}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"theta": {k: v.tolist() for k, v in weights.items()}}, f)
            trainer.post_weights(version, batch_ids=[batch.batch_id], lora_path=path, lora_name="policy")
        trained.append({"batch_id": batch.batch_id, "step": batch.step, "delivery": delivery.delivery,
                        "layout": delivery.layout, "mean_reward": reward, "samples": len(batch), "version": version})
        print(f"step {batch.step} delivery {delivery.delivery} mean_reward {reward:.3f} samples {len(batch)} "
              f"version {version} max_logprob_error {max_error:.2e}", file=options.log, flush=True)
        if len(trained) >= options.max_batches or (options.stop_at_reward is not None and reward >= options.stop_at_reward):
            break
    # JSON has no infinity: None stands for "a recorded logprob was missing".
    return {"batches": trained, "version": version, "tokens_checked": checked,
            "max_logprob_error": max_error if math.isfinite(max_error) else None,
            "crashed": sorted(crashed)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gateway", required=True, help="gateway root URL")
    parser.add_argument("--weights-dir", required=True, help="folder the policy server can read weight files from")
    parser.add_argument("--api-key", default=os.environ.get("ROLLGATE_API_KEY"), help="admin key (auth on)")
    parser.add_argument("--learning-rate", type=float, default=16.0)
    parser.add_argument("--max-batches", type=int, default=30)
    parser.add_argument("--stop-at-reward", type=float, default=None)
    parser.add_argument("--layout", choices=("binary", "json"), default="binary")
    parser.add_argument("--crash-at-step", type=int, default=None)
    args = parser.parse_args(argv)
    result = train(TrainOptions(
        gateway=args.gateway, weights_dir=args.weights_dir, learning_rate=args.learning_rate,
        max_batches=args.max_batches, stop_at_reward=args.stop_at_reward, api_key=args.api_key,
        binary=args.layout == "binary", crash_at_step=args.crash_at_step,
    ))
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
