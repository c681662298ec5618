"""Recomputes, with a transformers forward pass over the same safetensors vLLM serves, the logprob of every sampled
token of the given rows: what a trainer computes as the current policy's logprobs. The real-engine suite compares
them with the logprobs rollgate recorded from vLLM (processed_logprobs: after temperature).

stdin:  {"model_dir": str, "rows": [{"prompt_ids": [int], "response_ids": [int], "temperature": float,
                                    "lora_dir": str (optional: the row was served by this LoRA adapter)}]}
stdout: {"logprobs": [[float, ...] per row, one per response id]}
"""

import json
import sys

import torch
from transformers import AutoModelForCausalLM


def load(model_dir: str, lora_dir: str | None):
    """The base weights, with a LoRA adapter merged in (W + alpha/r * B @ A) when the row was served by one."""
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    if lora_dir is not None:
        from safetensors.torch import load_file

        config = json.load(open(f"{lora_dir}/adapter_config.json"))
        scale = config["lora_alpha"] / config["r"]
        tensors = load_file(f"{lora_dir}/adapter_model.safetensors")
        modules = dict(model.named_modules())
        for key, a in tensors.items():
            if not key.endswith(".lora_A.weight"):
                continue
            prefix = key[: -len(".lora_A.weight")]
            b = tensors[f"{prefix}.lora_B.weight"]
            module = modules[prefix[len("base_model.model.") :]]
            with torch.no_grad():
                module.weight += scale * (b @ a)
    model.eval()
    return model


def main() -> None:
    request = json.load(sys.stdin)
    torch.manual_seed(0)
    models = {}
    out = []
    with torch.no_grad():
        for row in request["rows"]:
            lora = row.get("lora_dir")
            if lora not in models:
                models[lora] = load(request["model_dir"], lora)
            model = models[lora]
            prompt, response = row["prompt_ids"], row["response_ids"]
            ids = torch.tensor([prompt + response], dtype=torch.long)
            logits = model(ids).logits[0].to(torch.float64)
            # The logits at position i predict token i + 1: the response's tokens are predicted from the positions
            # before them.
            start = len(prompt) - 1
            step = logits[start : start + len(response)] / float(row.get("temperature", 1.0))
            logprobs = torch.log_softmax(step, dim=-1)
            picked = logprobs.gather(1, torch.tensor(response, dtype=torch.long).unsqueeze(1)).squeeze(1)
            out.append(picked.tolist())
    json.dump({"logprobs": out}, sys.stdout)


if __name__ == "__main__":
    main()
