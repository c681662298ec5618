// Where the engine twin's wire answers differ in shape from real vLLM 0.32.0's, scenario by scenario, each with its
// reason. conformance.test.ts fails on a difference not listed here and on a listed one that is gone, so this file
// is the fidelity table docs/real-engine-suite.md summarises.

export const SCENARIOS = [
  'chat-basic',
  'chat-length',
  'chat-stop',
  'chat-n2',
  'chat-tool',
  'chat-stream',
  'chat-tool-stream',
  'completions-token-prompts',
  'responses-messages',
  'tokenize-messages',
  'tokenize-tools',
  'detokenize',
  'generate',
  'generate-stream',
  'error-context',
  'error-model',
  'error-json',
  'abort-requests',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/**
 * What vLLM 0.32.0 writes on chat and completions answers that the twin does not. rollgate relays unknown members of
 * an answer untouched and reads none of these.
 */
const ANSWER_032: Record<string, string> = {
  'usage.completion_tokens_details: only-vllm':
    '{reasoning_tokens}: vLLM counts the tokens its reasoning parser put in `reasoning`; relayed as is by the gateway',
};
/** Streams: the twin writes the 0.32.0 members on non-stream answers only. */
const STREAM_032: Record<string, string> = {
  'first.prompt_text: only-vllm': 'null unless the request sets return_prompt_text (a 0.3x request field)',
  'usage.system_fingerprint: only-vllm': 'vLLM repeats its build name on the usage chunk; relayed as is',
  'usage.usage.completion_tokens_details: only-vllm': ANSWER_032[
    'usage.completion_tokens_details: only-vllm'
  ] as string,
};
const ERROR_PARAM = {
  'error.param: vllm string, twin null':
    'vLLM names the offending parameter (`max_tokens`, or the JSON error position `body.<n>`); the twin writes null',
};

/** Scenario -> difference (as describeDifferences writes it) -> why it is so. */
export const KNOWN_DIFFERENCES: Record<ScenarioName, Record<string, string>> = {
  'chat-basic': ANSWER_032,
  'chat-length': ANSWER_032,
  'chat-stop': ANSWER_032,
  'chat-n2': ANSWER_032,
  'chat-tool': ANSWER_032,
  'chat-stream': STREAM_032,
  'chat-tool-stream': STREAM_032,
  'completions-token-prompts': ANSWER_032,
  'responses-messages': {},
  'tokenize-messages': {},
  'tokenize-tools': {},
  detokenize: {},
  generate: {},
  'generate-stream': {},
  'error-context': ERROR_PARAM,
  'error-model': {},
  'error-json': ERROR_PARAM,
  'abort-requests': {},
};
