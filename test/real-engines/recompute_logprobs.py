"""Recomputes, with a transformers forward pass over the same safetensors vLLM serves, the logprob of every sampled
token of the given rows: what a trainer computes as the current policy's logprobs. The real-engine suite compares
them with the logprobs rollgate recorded from vLLM (processed_logprobs: after temperature).

stdin:  {"model_dir": str, "rows": [{"prompt_ids": [int], "response_ids": [int], "temperature": float,
                                    "lora_dir": str (optional: the row was served by this LoRA adapter),
                                    "segments": [{"end": int, "lora_dir": str | null}] (optional, see below)}]}
stdout: {"logprobs": [[float, ...] per row, one per response id]}

`segments` replays a generation whose weights changed while it ran (a keep-mode swap: the engine froze the request,
loaded new weights and went on with the KV cache it had). Segment k's weights sampled the response tokens up to
`end` (exclusive) from where the previous segment ended. The forward step that samples token i reads the KV of every
earlier position and writes the KV of position len(prompt) + i - 1, so the replay runs the first segment's weights
over the ids up to its switch point, then the next segment's weights over the following ids with that cache.
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


def picked_logprobs(logits, tokens, temperature: float) -> list:
    logprobs = torch.log_softmax(logits.to(torch.float64) / temperature, dim=-1)
    return logprobs.gather(1, torch.tensor(tokens, dtype=torch.long).unsqueeze(1)).squeeze(1).tolist()


def replay(models, prompt: list, response: list, segments: list, temperature: float) -> list:
    """Logprobs of a response whose weights changed mid-generation, with the KV cache each step really had."""
    from transformers import DynamicCache

    ids = prompt + response
    cache = DynamicCache()
    out: list = []
    # Positions [done, stop) are fed to the segment's weights; their logits sample tokens [done - P + 1, stop - P + 1).
    done = 0
    for segment in segments:
        end = int(segment["end"])
        if end <= len(out):
            continue
        stop = len(prompt) + end - 1
        model = models[segment.get("lora_dir")]
        chunk = torch.tensor([ids[done:stop]], dtype=torch.long)
        result = model(chunk, past_key_values=cache, use_cache=True)
        cache = result.past_key_values
        first = len(prompt) - 1 - done  # index in this chunk of the position that samples token len(out)
        logits = result.logits[0][max(first, 0) :]
        out.extend(picked_logprobs(logits, response[len(out) : end], temperature))
        done = stop
    return out


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
            prompt, response = row["prompt_ids"], row["response_ids"]
            temperature = float(row.get("temperature", 1.0))
            if row.get("segments"):
                for segment in row["segments"]:
                    if segment.get("lora_dir") not in models:
                        models[segment.get("lora_dir")] = load(request["model_dir"], segment.get("lora_dir"))
                out.append(replay(models, prompt, response, row["segments"], temperature))
                continue
            model = models[lora]
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
