// Where the gateway's parsers knowingly answer otherwise than vLLM 0.32.0's on the parser corpus, and why. The
// corpus test fails on any other difference, and on an entry here that no longer differs (so the list cannot rot).
// docs/parsers.md explains each kind to users.

export interface KnownDifference {
  readonly family: string;
  readonly case: string;
  /** `tools, thinking on` and the like. */
  readonly options: string;
  /** `whole`, or `stream k=N` (the stream in chunks of N tokens). */
  readonly modes: readonly string[];
  readonly why: string;
}
const TEXT_AFTER_CALL_WHOLE =
  'vLLM drops the text after the first tool call from a non-stream answer (its own stream keeps it); the gateway ' +
  'keeps it rather than lose text';
const CHUNK_WHITESPACE =
  "whitespace right after a tool call: vLLM's engine sends it or drops it depending on which chunk it arrives in " +
  "relative to the call's end tag inside one chunk; the gateway decides per chunk, not per position within it";
const QWEN3_NO_THINK =
  "vLLM 0.32's qwen3 reasoning parser reads an answer that does not open with <think> as reasoning (the template may " +
  "have opened the block); the gateway's qwen3 parsers (and the twin) follow earlier vLLM, where it is content";
const QWEN3_WS_CONTENT =
  'vLLM 0.32 returns null content when only whitespace precedes the tool calls of a non-stream answer; the ' +
  "gateway's qwen3 parsers follow earlier vLLM and return the whitespace";
const QWEN3_REASONING_IN_TOOL_CHUNK =
  "when </think> and text before it arrive in one chunk with tools on, earlier vLLM (and the gateway's qwen3 stream, " +
  'and the twin) sent only the content of that chunk; vLLM 0.32 also sends the reasoning';
const QWEN3_HERMES_STREAM =
  "a tool call whose JSON is broken: vLLM 0.32's hermes stream sends its arguments cut where the chunks happen to " +
  "end; the gateway's hermes stream sends the whole argument text";

const BROKEN_CALL_STREAM =
  "a call whose parameter is never closed: vLLM's stream has already sent the open value's text, so the stream's " +
  'arguments stay an unfinished JSON prefix while its whole answer gives `{}`; the gateway streams the `{}`';

const DEEPSEEK_THINK_LEAK =
  "vLLM's deepseek_r1 reasoning stream leaks the `<think>` tag into the reasoning when it arrives in one chunk with " +
  'other tokens (and the tool stream below may lose text as well); the gateway drops the tag as the whole answer does';
const DEEPSEEK_TOOL_STREAM =
  "vLLM's deepseek_v31 tool stream loses argument text, whole calls or the whitespace before the section when several " +
  "tokens arrive in one chunk (its one-token-per-chunk stream and its whole answer agree with the gateway's)";

const ALL_STREAMS = ['stream k=1', 'stream k=2', 'stream k=3', 'stream k=7'];
const ON = 'tools, thinking on';
const NO_TOOLS = 'no tools, thinking on';
const OFF = 'tools, thinking off';
const TOOLS_ONLY = 'tools, thinking off, no reasoning parser';
const NOTHING = 'no tools, thinking off, no reasoning parser';

export const KNOWN_DIFFERENCES: readonly KnownDifference[] = [
  ...[
    ['qwen3_coder', ON],
    ['qwen3_coder', NO_TOOLS],
    ['qwen3_coder', OFF],
    ['qwen3_coder', TOOLS_ONLY],
    ['qwen3_coder', NOTHING],
    ['glm47', ON],
    ['glm47', NO_TOOLS],
    ['glm47', OFF],
    ['minimax_m2', ON],
    ['minimax_m2', OFF],
  ].map(([family = '', options = '']) => ({
    family,
    case: 'text after a call',
    options,
    modes: ['whole'],
    why: TEXT_AFTER_CALL_WHOLE,
  })),
  ...[ON, OFF].map((options) => ({
    family: 'minimax_m2',
    case: 'malformed call',
    options,
    modes: ALL_STREAMS,
    why: BROKEN_CALL_STREAM,
  })),
  ...[ON, NO_TOOLS, OFF, TOOLS_ONLY, NOTHING].map((options) => ({
    family: 'qwen3_coder',
    case: 'text after a call',
    options,
    modes: ['stream k=3'],
    why: CHUNK_WHITESPACE,
  })),
  ...['plain', 'a tag-like prefix in content'].flatMap((name) =>
    [ON, NO_TOOLS].map((options) => ({
      family: 'qwen3',
      case: name,
      options,
      modes: ['whole', ...ALL_STREAMS],
      why: QWEN3_NO_THINK,
    })),
  ),
  ...[ON, NO_TOOLS].map((options) => ({
    family: 'qwen3',
    case: 'reasoning opened by the template',
    options,
    modes: ALL_STREAMS,
    why: QWEN3_NO_THINK,
  })),
  { family: 'qwen3', case: 'reasoning then a call', options: ON, modes: ['whole'], why: QWEN3_WS_CONTENT },
  { family: 'qwen3', case: 'non-ASCII', options: ON, modes: ['whole'], why: QWEN3_WS_CONTENT },
  {
    family: 'qwen3',
    case: 'reasoning then a call',
    options: ON,
    modes: ['stream k=2', 'stream k=3', 'stream k=7'],
    why: QWEN3_REASONING_IN_TOOL_CHUNK,
  },
  {
    family: 'qwen3',
    case: 'reasoning then content',
    options: ON,
    modes: ['stream k=2', 'stream k=3'],
    why: QWEN3_REASONING_IN_TOOL_CHUNK,
  },
  {
    family: 'qwen3',
    case: 'content then two calls',
    options: ON,
    modes: ['stream k=7'],
    why: QWEN3_REASONING_IN_TOOL_CHUNK,
  },
  { family: 'qwen3', case: 'non-ASCII', options: ON, modes: ['stream k=7'], why: QWEN3_REASONING_IN_TOOL_CHUNK },
  {
    family: 'qwen3',
    case: 'truncated call',
    options: ON,
    modes: ['stream k=3', 'stream k=7'],
    why: QWEN3_REASONING_IN_TOOL_CHUNK,
  },
  {
    family: 'qwen3',
    case: 'malformed call',
    options: ON,
    modes: ['stream k=3', 'stream k=7'],
    why: QWEN3_REASONING_IN_TOOL_CHUNK,
  },
  { family: 'qwen3', case: 'malformed call', options: ON, modes: ['stream k=2'], why: QWEN3_HERMES_STREAM },
  { family: 'qwen3', case: 'malformed call', options: OFF, modes: ['stream k=2'], why: QWEN3_HERMES_STREAM },
  { family: 'deepseek_v31', case: 'text after a call', options: OFF, modes: ['whole'], why: TEXT_AFTER_CALL_WHOLE },
  {
    family: 'deepseek_v31',
    case: 'reasoning then content',
    options: 'tools, thinking on',
    modes: ['stream k=2', 'stream k=3', 'stream k=7'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'reasoning then content',
    options: 'no tools, thinking on',
    modes: ['stream k=2', 'stream k=3', 'stream k=7'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'reasoning then a call',
    options: 'tools, thinking on',
    modes: ['stream k=2', 'stream k=3'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'reasoning then a call',
    options: 'no tools, thinking on',
    modes: ['stream k=2', 'stream k=3'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'content then two calls',
    options: 'tools, thinking on',
    modes: ['stream k=2', 'stream k=3'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'content then two calls',
    options: 'no tools, thinking on',
    modes: ['stream k=2', 'stream k=3'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'non-ASCII',
    options: 'tools, thinking on',
    modes: ['stream k=2', 'stream k=3'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'non-ASCII',
    options: 'no tools, thinking on',
    modes: ['stream k=2', 'stream k=3'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'unclosed reasoning',
    options: 'tools, thinking on',
    modes: ['stream k=2', 'stream k=3', 'stream k=7'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'unclosed reasoning',
    options: 'no tools, thinking on',
    modes: ['stream k=2', 'stream k=3', 'stream k=7'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'truncated call',
    options: 'tools, thinking on',
    modes: ['stream k=2', 'stream k=3'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'truncated call',
    options: 'no tools, thinking on',
    modes: ['stream k=2', 'stream k=3'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'malformed call',
    options: 'tools, thinking on',
    modes: ['stream k=2', 'stream k=3'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'malformed call',
    options: 'no tools, thinking on',
    modes: ['stream k=2', 'stream k=3'],
    why: DEEPSEEK_THINK_LEAK,
  },
  {
    family: 'deepseek_v31',
    case: 'reasoning then a call',
    options: 'tools, thinking on',
    modes: ['stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'reasoning then a call',
    options: 'tools, thinking off',
    modes: ['stream k=3', 'stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'content then two calls',
    options: 'tools, thinking on',
    modes: ['stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'content then two calls',
    options: 'tools, thinking off',
    modes: ['stream k=2', 'stream k=3', 'stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'a call, no reasoning',
    options: 'tools, thinking off',
    modes: ['stream k=2', 'stream k=3', 'stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'every JSON type',
    options: 'tools, thinking off',
    modes: ['stream k=3', 'stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'escaped strings',
    options: 'tools, thinking off',
    modes: ['stream k=2', 'stream k=3', 'stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'non-ASCII',
    options: 'tools, thinking on',
    modes: ['stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'non-ASCII',
    options: 'tools, thinking off',
    modes: ['stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'no arguments',
    options: 'tools, thinking off',
    modes: ['stream k=2', 'stream k=3', 'stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'text after a call',
    options: 'tools, thinking off',
    modes: ['stream k=2', 'stream k=3', 'stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'malformed call',
    options: 'tools, thinking on',
    modes: ['stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
  {
    family: 'deepseek_v31',
    case: 'malformed call',
    options: 'tools, thinking off',
    modes: ['stream k=3', 'stream k=7'],
    why: DEEPSEEK_TOOL_STREAM,
  },
];
