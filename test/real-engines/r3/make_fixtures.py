"""Routed-expert (R3) response fixtures made with the engines' own encoding code.

vLLM's current form is made by vLLM's own `numpy2base64` (vllm.utils.serial_utils), exactly what its chat and
completions servers put in `choices[].routed_experts`; its older forms (0.21's nested int16 lists with a top-level
`prompt_routed_experts`; the raw-bytes variant) and SGLang's `sgl_ext.routed_experts` (base64 of the int32 array's
bytes, flat [tokens, layers, top_k]) are written from their documented formats with numpy. The routes are
deterministic, so the committed JSON is reproducible: the real-engine suite re-runs this script with the installed
vLLM and compares.

Usage: python make_fixtures.py [out.json]   (stdout when no path is given)
"""

import base64
import json
import sys

import numpy as np

try:
    from vllm.utils.serial_utils import numpy2base64
    import vllm

    VLLM = vllm.__version__
except ImportError:  # the unit fixtures can still be read; regenerating them needs vLLM
    numpy2base64 = None
    VLLM = None

LAYERS = 3
TOP_K = 2


def routes(tokens, experts, seed):
    """Deterministic expert ids: distinct within a (token, layer), below `experts`."""
    rows = tokens - 1
    out = np.zeros((rows, LAYERS, TOP_K), dtype=np.int64)
    for t in range(rows):
        for layer in range(LAYERS):
            first = (seed * 97 + t * 53 + layer * 31) % experts
            out[t, layer, 0] = first
            out[t, layer, 1] = (first + 1 + (t + layer) % (experts - 1)) % experts
    return out


def chat_body(prompt_ids, ids, choice_extra, top_extra=None):
    body = {
        "id": "chatcmpl-r3",
        "object": "chat.completion",
        "model": "tiny-moe",
        "prompt_token_ids": prompt_ids,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok"},
                "finish_reason": "stop",
                "token_ids": ids,
                **choice_extra,
            }
        ],
        "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": len(ids), "total_tokens": len(prompt_ids) + len(ids)},
    }
    if top_extra:
        body.update(top_extra)
    return body


def main():
    prompt_ids = list(range(100, 112))
    ids = [7, 8, 9, 10, 11]
    tokens = len(prompt_ids) + len(ids)
    cases = []
    if numpy2base64 is None:
        raise SystemExit("vLLM is not installed: cannot make the vLLM fixtures with its own numpy2base64")
    # vLLM current: the dtype its capturer picks (uint8 up to 256 experts, uint16 above); int32 is accepted too.
    for dtype, experts in (("uint8", 64), ("uint16", 512), ("int32", 64)):
        r = routes(tokens, experts, seed=len(cases) + 1).astype(dtype)
        cases.append({
            "name": f"vllm-npy-{dtype}",
            "form": "vllm-npy",
            "body": chat_body(prompt_ids, ids, {"routed_experts": numpy2base64(r)}),
            "expected": r.astype(np.int32).tolist(),
        })
    # vLLM 0.21: nested int16 lists, prompt rows at the top level, the completion rows on the choice.
    r = routes(tokens, 64, seed=9).astype(np.int16)
    cases.append({
        "name": "vllm-nested-int16",
        "form": "vllm-nested",
        "body": chat_body(prompt_ids, ids, {"routed_experts": r[len(prompt_ids):].tolist()},
                          {"prompt_routed_experts": r[: len(prompt_ids)].tolist()}),
        "expected": r.astype(np.int32).tolist(),
    })
    # Raw bytes: the int32 array's bytes, base64, no .npy header.
    r = routes(tokens, 64, seed=11).astype("<i4")
    cases.append({
        "name": "vllm-raw-int32",
        "form": "flat-int32",
        "body": chat_body(prompt_ids, ids, {"routed_experts": base64.b64encode(r.tobytes()).decode("ascii")}),
        "expected": r.tolist(),
    })
    # SGLang: sgl_ext.routed_experts, base64 int32, flat.
    r = routes(tokens, 128, seed=13).astype("<i4")
    cases.append({
        "name": "sglang-int32",
        "form": "flat-int32",
        "body": chat_body(prompt_ids, ids, {"sgl_ext": {"routed_experts": base64.b64encode(r.tobytes()).decode("ascii")}}),
        "expected": r.tolist(),
    })
    out = {"vllm": VLLM, "layers": LAYERS, "top_k": TOP_K, "cases": cases}
    text = json.dumps(out, indent=1) + "\n"
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
