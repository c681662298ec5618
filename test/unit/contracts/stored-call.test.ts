import { expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { parseVersionSegments, readStoredCall, segmentsOver } from '../../../src/contracts/stored-call.js';

it('reads each canonical attribute into its typed field', () => {
  const call = readStoredCall({
    [A.ATTR_API]: A.API_VALUE_OPENAI_RESPONSES,
    [A.ATTR_GEN_AI_RESPONSE_ID]: 'chatcmpl-1',
    [A.ATTR_CLIENT_RETRY_COUNT]: '2',
    [A.ATTR_PROMPT_TOKEN_IDS]: [1, 2, 3],
    [A.ATTR_RESPONSE_TOKEN_IDS]: [4, 5],
    [A.ATTR_RESPONSE_LOGPROBS]: [-0.5, -1],
    [A.ATTR_MODEL_VERSION]: 3,
    [A.ATTR_MODEL_VERSION_SEGMENTS]: '[[0,1,3],[1,2,4]]',
    [A.ATTR_ENGINE_MAX_MODEL_LEN]: 4096,
    [A.ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS]: ['temperature'],
    [A.ATTR_RESUBMIT_OF]: 7,
    [A.ATTR_CALL_ROLE]: A.CALL_ROLE_VALUE_AUXILIARY,
    [A.ATTR_CALL_OUTCOME]: A.CALL_OUTCOME_VALUE_ABORTED,
    [A.ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: [A.FINISH_REASON_VALUE_ABORT],
    [A.ATTR_TOKEN_IDS_STATUS]: A.TOKEN_IDS_STATUS_VALUE_OK,
    [A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 2,
    [A.ATTR_GEN_AI_REQUEST_CHOICE_COUNT]: 1,
    [A.ATTR_UPSTREAM_STATUS_CODE]: 200,
  });
  expect(call).toMatchObject({
    api: A.API_VALUE_OPENAI_RESPONSES,
    responseId: 'chatcmpl-1',
    clientRetryCount: 2,
    promptIds: [1, 2, 3],
    responseIds: [4, 5],
    responseLogprobs: [-0.5, -1],
    modelVersion: 3,
    versionSegments: {
      segments: [
        [0, 1, 3],
        [1, 2, 4],
      ],
      end: 2,
    },
    versionChangedInFlight: false,
    engineMaxModelLen: 4096,
    logprobsRawAdjusted: true,
    resubmitOf: 7,
    auxiliary: true,
    outcome: A.CALL_OUTCOME_VALUE_ABORTED,
    abortFinish: true,
    tokenIdsStatus: A.TOKEN_IDS_STATUS_VALUE_OK,
    outputTokens: 2,
    choiceCount: 1,
    hasSecondChoice: false,
    upstreamStatusCode: 200,
  });
});

it('takes a value of the wrong type for absent', () => {
  const call = readStoredCall({
    [A.ATTR_GEN_AI_RESPONSE_ID]: '',
    [A.ATTR_CLIENT_RETRY_COUNT]: -1,
    [A.ATTR_PROMPT_TOKEN_IDS]: [1, 2.5],
    [A.ATTR_RESPONSE_TOKEN_IDS]: '[4, 5]',
    [A.ATTR_RESPONSE_LOGPROBS]: [-0.5, 'x'],
    [A.ATTR_MODEL_VERSION]: 'v3',
    [A.ATTR_ENGINE_MAX_MODEL_LEN]: 0,
    [A.ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS]: [],
    [A.ATTR_RESUBMIT_OF]: '7',
    [A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 2.5,
  });
  expect(call).toMatchObject({
    responseId: null,
    clientRetryCount: 0,
    promptIds: null,
    responseIds: null,
    responseLogprobs: null,
    modelVersion: null,
    versionSegments: null,
    engineMaxModelLen: null,
    logprobsRawAdjusted: false,
    resubmitOf: null,
    outputTokens: null,
    auxiliary: false,
    abortFinish: false,
  });
});

it('reads a span once: every reader of the same attributes gets the same call', () => {
  const attributes = { [A.ATTR_MODEL_VERSION]: 1 };
  expect(readStoredCall(attributes)).toBe(readStoredCall(attributes));
  expect(readStoredCall({ ...attributes })).not.toBe(readStoredCall(attributes));
});

it('keeps recorded segments only when they run in order from 0, and uses them only over their exact length', () => {
  expect(parseVersionSegments(undefined)).toBeNull();
  for (const unusable of [3, 'not json', '[[0,2,1],[3,4,2]]', '[[1,2,1]]', '[[0,0,1]]', '{"a":1}']) {
    expect(parseVersionSegments(unusable)).toEqual({ segments: null, end: 0 });
  }
  const recorded = parseVersionSegments('[[0,2,1],[2,5,2]]');
  expect(segmentsOver(recorded, 5)).toEqual([
    [0, 2, 1],
    [2, 5, 2],
  ]);
  expect(segmentsOver(recorded, 4)).toBeNull();
  expect(segmentsOver(parseVersionSegments('[]'), 0)).toEqual([]);
  expect(segmentsOver(null, 0)).toBeNull();
});
