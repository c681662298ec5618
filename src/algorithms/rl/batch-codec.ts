// Compact binary form of a batch (`Accept: application/octet-stream`), for batches whose JSON would be
// hundreds of megabytes. Layout, all little-endian:
//   0      4 bytes   magic "RGB1"
//   4      uint32    H = byte length of the header
//   8      H bytes   header: UTF-8 JSON, the batch with each sample's arrays replaced by
//                    `prompt_len`, `response_len`, `has_logprobs`
//   ...    zero bytes up to a multiple of 8
//          int32[P]  every sample's prompt ids, concatenated in sample order (P = sum of prompt_len)
//          int32[R]  every sample's response ids (R = sum of response_len)
//          uint8[R]  every sample's response mask, then zero bytes up to a multiple of 4
//          float32[R] every sample's logprobs (NaN for samples with has_logprobs = false)
//          int32[R]  every sample's token versions, present only when the header's `has_token_versions` is true
//                    (a sample whose own `has_token_versions` is false carries its model_version there). Last, so a
//                    reader that predates it still reads everything before it.
import type { Batch, BatchSample } from './batch.js';

export const BATCH_MAGIC = 'RGB1';
export const BATCH_CONTENT_TYPE = 'application/octet-stream';

interface HeaderSample
  extends Omit<BatchSample, 'prompt_ids' | 'response_ids' | 'response_mask' | 'logprobs' | 'token_versions'> {
  prompt_len: number;
  response_len: number;
  has_logprobs: boolean;
  has_token_versions?: boolean;
}

const align = (n: number, to: number): number => Math.ceil(n / to) * to;

export function encodeBatch(batch: Batch): Uint8Array {
  let promptTotal = 0;
  let responseTotal = 0;
  const withVersions = batch.samples.some((s) => s.token_versions !== undefined);
  const samples: HeaderSample[] = batch.samples.map((s) => {
    const { prompt_ids, response_ids, response_mask, logprobs, token_versions, ...rest } = s;
    promptTotal += prompt_ids.length;
    responseTotal += response_ids.length;
    return {
      ...rest,
      prompt_len: prompt_ids.length,
      response_len: response_ids.length,
      has_logprobs: logprobs !== null,
      ...(withVersions ? { has_token_versions: token_versions !== undefined } : {}),
    };
  });
  const header = new TextEncoder().encode(
    JSON.stringify({ ...batch, samples, ...(withVersions ? { has_token_versions: true } : {}) }),
  );
  const promptAt = align(8 + header.length, 8);
  const responseAt = promptAt + promptTotal * 4;
  const maskAt = responseAt + responseTotal * 4;
  const logprobAt = align(maskAt + responseTotal, 4);
  const versionAt = logprobAt + responseTotal * 4;
  const bytes = new Uint8Array(versionAt + (withVersions ? responseTotal * 4 : 0));
  const view = new DataView(bytes.buffer);
  bytes.set(new TextEncoder().encode(BATCH_MAGIC), 0);
  view.setUint32(4, header.length, true);
  bytes.set(header, 8);
  let p = promptAt;
  let r = 0;
  for (const s of batch.samples) {
    for (const id of s.prompt_ids) {
      view.setInt32(p, id, true);
      p += 4;
    }
    for (let i = 0; i < s.response_ids.length; i++) {
      view.setInt32(responseAt + (r + i) * 4, s.response_ids[i] ?? 0, true);
      bytes[maskAt + r + i] = s.response_mask[i] ?? 0;
      view.setFloat32(logprobAt + (r + i) * 4, s.logprobs === null ? Number.NaN : (s.logprobs[i] ?? Number.NaN), true);
      if (withVersions) view.setInt32(versionAt + (r + i) * 4, s.token_versions?.[i] ?? s.model_version, true);
    }
    r += s.response_ids.length;
  }
  return bytes;
}

function isHeader(
  value: unknown,
): value is Omit<Batch, 'samples'> & { samples: HeaderSample[]; has_token_versions?: boolean } {
  return typeof value === 'object' && value !== null && Array.isArray((value as { samples?: unknown }).samples);
}

/** Inverse of encodeBatch (logprobs come back as float32 values). Throws on a malformed buffer. */
export function decodeBatch(bytes: Uint8Array): Batch {
  if (bytes.length < 8 || new TextDecoder().decode(bytes.subarray(0, 4)) !== BATCH_MAGIC) {
    throw new Error('not a rollgate batch (bad magic)');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(4, true);
  const header: unknown = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  if (!isHeader(header)) throw new Error('not a rollgate batch (bad header)');
  const promptTotal = header.samples.reduce((n, s) => n + s.prompt_len, 0);
  const responseTotal = header.samples.reduce((n, s) => n + s.response_len, 0);
  const promptAt = align(8 + headerLength, 8);
  const responseAt = promptAt + promptTotal * 4;
  const maskAt = responseAt + responseTotal * 4;
  const logprobAt = align(maskAt + responseTotal, 4);
  const versionAt = logprobAt + responseTotal * 4;
  const { has_token_versions: withVersions, ...batchHeader } = header;
  if (bytes.length < versionAt + (withVersions === true ? responseTotal * 4 : 0)) {
    throw new Error('truncated rollgate batch');
  }
  let p = promptAt;
  let r = 0;
  const samples: BatchSample[] = header.samples.map((sample) => {
    const { prompt_len, response_len, has_logprobs, has_token_versions, ...rest } = sample;
    const prompt_ids: number[] = [];
    for (let i = 0; i < prompt_len; i++, p += 4) prompt_ids.push(view.getInt32(p, true));
    const response_ids: number[] = [];
    const response_mask: number[] = [];
    const logprobs: number[] = [];
    const token_versions: number[] = [];
    for (let i = 0; i < response_len; i++) {
      response_ids.push(view.getInt32(responseAt + (r + i) * 4, true));
      response_mask.push(bytes[maskAt + r + i] ?? 0);
      logprobs.push(view.getFloat32(logprobAt + (r + i) * 4, true));
      if (has_token_versions === true) token_versions.push(view.getInt32(versionAt + (r + i) * 4, true));
    }
    r += response_len;
    return {
      ...rest,
      prompt_ids,
      response_ids,
      response_mask,
      logprobs: has_logprobs ? logprobs : null,
      ...(has_token_versions === true ? { token_versions } : {}),
    };
  });
  return { ...batchHeader, samples };
}
