"""Writes the parser corpus (test/fixtures/parser-corpus/corpus.json): per tool-call format, model outputs written
the way each family writes them, covering plain text, one and several calls, arguments of every JSON type, escaped
and non-ASCII strings, text around calls, reasoning with and without calls, and truncated or malformed blocks.

The corpus is an input to run_vllm_parsers.py (what vLLM's own parser classes make of each output, whole and streamed)
and to the TypeScript parsers' unit test. Edit the cases here and rerun both:

    python test/real-engines/parsers/make_corpus.py
    <venv python> test/real-engines/parsers/run_vllm_parsers.py --write
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "fixtures", "parser-corpus", "corpus.json")

# The tools every request offers (their schemas matter to formats that write arguments as text).
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
                "required": ["q"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "ratio": {"type": "number"},
                    "hourly": {"type": "boolean"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "where": {"type": "object"},
                    "note": {"type": "string"},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {"name": "noop", "description": "Do nothing", "parameters": {"type": "object", "properties": {}}},
    },
]

ALL_TYPES = {"city": "Oslo", "days": 3, "ratio": 1.5, "hourly": True, "tags": ["a", "b"], "where": {"lat": 59.9, "x": None}}
ESCAPED = {"q": 'he said "hi"\n\tback\\slash <b>&amp;', "n": 2}
UNICODE = {"city": "Zürich ✓ 東京", "note": "🌊 wave"}


def text_value(value):
    """An argument as the XML formats write it: strings raw, everything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def hermes(name, args):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>"


def qwen3_coder(name, args):
    params = "".join(f"<parameter={k}>\n{text_value(v)}\n</parameter>\n" for k, v in args.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def glm47(name, args):
    params = "".join(f"<arg_key>{k}</arg_key><arg_value>{text_value(v)}</arg_value>" for k, v in args.items())
    return f"<tool_call>{name}{params}</tool_call>"


def deepseek_v31(name, args):
    return f"<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{json.dumps(args, ensure_ascii=False)}<｜tool▁call▁end｜>"


def kimi_k2(name, args, index=0):
    return (
        f"<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>"
        f"{json.dumps(args, ensure_ascii=False)}<|tool_call_end|>"
    )


def minimax_m2(name, args):
    params = "".join(f'<parameter name="{k}">{text_value(v)}</parameter>\n' for k, v in args.items())
    return f'<invoke name="{name}">\n{params}</invoke>\n'


def section(fmt, calls):
    """Several calls the way the format groups them."""
    if fmt == "deepseek_v31":
        return "<｜tool▁calls▁begin｜>" + "".join(deepseek_v31(n, a) for n, a in calls) + "<｜tool▁calls▁end｜>"
    if fmt == "kimi_k2":
        body = "".join(kimi_k2(n, a, i) for i, (n, a) in enumerate(calls))
        return "<|tool_calls_section_begin|>" + body + "<|tool_calls_section_end|>"
    if fmt == "minimax_m2":
        return "<minimax:tool_call>\n" + "".join(minimax_m2(n, a) for n, a in calls) + "</minimax:tool_call>"
    one = {"hermes": hermes, "qwen3_coder": qwen3_coder, "glm47": glm47}[fmt]
    return "\n".join(one(n, a) for n, a in calls)


def truncated(fmt):
    """A call cut off by max_tokens in the middle of its arguments."""
    whole = section(fmt, [("get_weather", {"city": "Oslo", "days": 3})])
    return whole[: whole.index("Oslo") + 2]


def malformed(fmt):
    """A block the format cannot read: broken JSON, or a broken tag."""
    if fmt == "hermes":
        return '<tool_call>\n{"name": "search", "arguments": {"q": }\n</tool_call>'
    if fmt == "qwen3_coder":
        return "<tool_call>\n<function=search\n<parameter=q>\ntides\n</parameter>\n</function>\n</tool_call>"
    if fmt == "glm47":
        return "<tool_call>search<arg_key>q</arg_key>tides</arg_value></tool_call>"
    if fmt == "deepseek_v31":
        return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>{\"q\": }<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    if fmt == "kimi_k2":
        return (
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>"
            '{"q": }<|tool_call_end|><|tool_calls_section_end|>'
        )
    return '<minimax:tool_call>\n<invoke name="search">\n<parameter name="q">tides</invoke>\n</minimax:tool_call>'


def cases(fmt):
    one = section(fmt, [("search", {"q": "tides", "n": 3})])
    two = section(fmt, [("search", {"q": "tides"}), ("get_weather", {"city": "Oslo", "days": 2})])
    return {
        "plain": "Hello there, no tools here.",
        "reasoning then content": "<think>\nThe user greets.\n</think>\n\nHello there.",
        "reasoning then a call": "<think>\nSearch first.\n</think>\n\n" + one,
        "content then two calls": "<think>\nTwo lookups.\n</think>\n\nLet me check.\n" + two,
        "a call, no reasoning": one,
        "every JSON type": section(fmt, [("get_weather", ALL_TYPES)]),
        "escaped strings": section(fmt, [("search", ESCAPED)]),
        "non-ASCII": "<think>\nÜber ✓\n</think>\n\n" + section(fmt, [("get_weather", UNICODE)]),
        "no arguments": section(fmt, [("noop", {})]),
        "text after a call": one + "\nDone.",
        "reasoning opened by the template": "The prompt opened the block.\n</think>\n\nAnswer.",
        "unclosed reasoning": "<think>\nStill thinking about the",
        "truncated call": "<think>\nr\n</think>\n\n" + truncated(fmt),
        "malformed call": "<think>\nr\n</think>\n\n" + malformed(fmt),
        "a tag-like prefix in content": "Use <tool to fix it, or <| and <minimax then ｜.",
    }


def harmony_call(name, args, channel="commentary"):
    return (
        f"<|start|>assistant<|channel|>{channel} to=functions.{name} <|constrain|>json<|message|>"
        f"{json.dumps(args, ensure_ascii=False)}<|call|>"
    )


def harmony_cases():
    """gpt-oss output: messages on channels (analysis = reasoning, final = content), calls addressed to a function.
    The prompt ends with `<|start|>assistant`, so the first message's header starts at its channel."""

    def first(text):
        return text.removeprefix("<|start|>assistant")

    analysis = "<|channel|>analysis<|message|>Search first.<|end|>"
    one = harmony_call("search", {"q": "tides", "n": 3})
    return {
        "plain": "<|channel|>final<|message|>Hello there, no tools here.<|return|>",
        "reasoning then content": "<|channel|>analysis<|message|>The user greets.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Hello there.<|return|>",
        "reasoning then a call": analysis + one,
        "content then two calls": analysis
        + "<|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>"
        + harmony_call("search", {"q": "tides"})
        + harmony_call("get_weather", {"city": "Oslo", "days": 2}),
        "a call, no reasoning": first(one),
        "every JSON type": first(harmony_call("get_weather", ALL_TYPES)),
        "escaped strings": first(harmony_call("search", ESCAPED)),
        "non-ASCII": "<|channel|>analysis<|message|>Über ✓<|end|>" + harmony_call("get_weather", UNICODE),
        "no arguments": first(harmony_call("noop", {})),
        "recipient before the channel": "<|channel|>analysis<|message|>r<|end|>"
        '<|start|>assistant to=functions.search<|channel|>commentary json<|message|>{"q": "tides"}<|call|>',
        "unclosed reasoning": "<|channel|>analysis<|message|>Still thinking about the",
        "unclosed final": analysis + "<|start|>assistant<|channel|>final<|message|>Cut off in the",
        "truncated call": analysis + one[: one.index("tides") + 2],
        "malformed call": analysis
        + '<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>{"q": }<|call|>',
        "no header": "Just text, no channel.",
    }


# Per family: the vLLM parser names, the special tokens its tokenizer carries (added to a Qwen3 vocabulary so the
# parsers find them by id), the tail of a rendered prompt (the generation prompt), and the tool format.
FAMILIES = {
    "qwen3": {
        "tool_parser": "hermes",
        "reasoning_parser": "qwen3",
        "format": "hermes",
        "added_tokens": [],
        "prompt": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    },
    "qwen3_coder": {
        "tool_parser": "qwen3_coder",
        "reasoning_parser": "qwen3",
        "format": "qwen3_coder",
        "added_tokens": [],
        "prompt": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    },
    "glm47": {
        "tool_parser": "glm47",
        "reasoning_parser": "glm45",
        "format": "glm47",
        "added_tokens": ["[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>",
                         "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"],
        "prompt": "[gMASK]<sop><|user|>\nhi<|assistant|>",
    },
    "deepseek_v31": {
        "tool_parser": "deepseek_v31",
        "reasoning_parser": "deepseek_v3",
        "format": "deepseek_v31",
        "added_tokens": ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
                         "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
                         "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"],
        "prompt": "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>",
    },
    "kimi_k2": {
        "tool_parser": "kimi_k2",
        "reasoning_parser": "kimi_k2",
        "format": "kimi_k2",
        "added_tokens": ["<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|tool_calls_section_begin|>",
                         "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_end|>",
                         "<|tool_call_argument_begin|>"],
        "prompt": "<|im_user|>user<|im_middle|>hi<|im_end|><|im_assistant|>assistant<|im_middle|>",
    },
    "minimax_m2": {
        "tool_parser": "minimax_m2",
        "reasoning_parser": "minimax_m2_append_think",
        "format": "minimax_m2",
        "added_tokens": ["]~b]", "]~!b[", "[e~[", "<minimax:tool_call>", "</minimax:tool_call>"],
        "prompt": "]~b]user\nhi[e~[\n]~b]ai\n",
    },
    # gpt-oss: vLLM always parses it with its harmony parser (the tokenizer is harmony's own; the options are one
    # set, since harmony has no thinking switch and the chat route, not the parser, drops calls a request did not
    # offer tools for).
    "harmony": {
        "tool_parser": "openai",
        "reasoning_parser": "openai_gptoss",
        "format": "harmony",
        "harmony": True,
        "added_tokens": [],
        "options": [{"tools": True, "thinking": True}],
        "prompt": "<|start|>user<|message|>hi<|end|><|start|>assistant",
    },
}

# Qwen3-Coder is usually served with the tool parser alone (no --reasoning-parser): its outputs are read that way too.
TOOL_PARSER_ONLY = [
    {"tools": True, "thinking": False, "reasoning_parser": False},
    {"tools": False, "thinking": False, "reasoning_parser": False},
]

# The request settings each output is parsed under: tools offered (tool_choice auto) or not, thinking on or off.
OPTIONS = [
    {"tools": True, "thinking": True},
    {"tools": False, "thinking": True},
    {"tools": True, "thinking": False},
]

# Streams: the same output cut into chunks of this many tokens (1 = every token boundary).
CHUNKINGS = [1, 2, 3, 7]


def main():
    corpus = {"tools": TOOLS, "options": OPTIONS, "chunkings": CHUNKINGS, "families": {}}
    for family, spec in FAMILIES.items():
        made = harmony_cases() if spec.get("harmony") else cases(spec["format"])
        corpus["families"][family] = {**spec, "cases": made}
        if family == "qwen3_coder":
            corpus["families"][family]["options"] = OPTIONS + TOOL_PARSER_ONLY
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(corpus, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {sum(len(f['cases']) for f in corpus['families'].values())} outputs to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
