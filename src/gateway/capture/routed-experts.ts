// MoE routing replay (R3): the experts the engine routed each token through, as the engines send them, read into
// one form (docs/training-data.md#routed-experts). Rows are tokens of prompt + response in order; row i holds, per
// MoE layer, the top-k expert ids token i was routed through. The last response token was sampled but never run
// through the model, so a whole call has prompt + completion - 1 rows.
//
// Engine forms read here:
// - vLLM (current): one base64 `.npy` string per choice (`choices[].routed_experts`), shape (rows, layers, top_k),
//   dtype uint8, uint16 or int32 (numpy2base64: np.save of the array, then base64).
// - vLLM 0.21: nested int lists, `prompt_routed_experts` at the top (prompt rows) plus `routed_experts` per choice.
// - vLLM raw bytes / SGLang (`sgl_ext.routed_experts`): base64 of little-endian int32, flat; the rows follow from
//   the token count the call returned (prompt + completion - 1, or prompt + completion).
// Stored: the array's bytes (narrowest dtype) as base64, with its shape and dtype beside; a later turn's routes
// then start with the earlier turn's, which the span codec stores once (a prefix reference). Batches and exports
// hand out a `.npy` (base64), made by putting a 192-byte header's base64 before the stored string: 192 is a
// multiple of 3, so the two base64 strings join without decoding anything.

import { ROUTES_DTYPES, type RoutesDtype, type StoredRoutes } from '../../contracts/stored-call.js';

export type { RoutesDtype, StoredRoutes };
export type RoutesArray = Uint8Array | Uint16Array | Int16Array | Int32Array;

export interface RoutedExperts {
  readonly rows: number;
  readonly layers: number;
  readonly topK: number;
  /** Row-major [rows, layers, topK]. */
  readonly values: RoutesArray;
}

const NPY_MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

const DESCR: Readonly<Record<string, { dtype: RoutesDtype; size: number }>> = {
  '|u1': { dtype: 'uint8', size: 1 },
  '<u1': { dtype: 'uint8', size: 1 },
  '|i1': { dtype: 'uint8', size: 1 },
  '<u2': { dtype: 'uint16', size: 2 },
  '<i2': { dtype: 'int16', size: 2 },
  '<i4': { dtype: 'int32', size: 4 },
};

function view(dtype: RoutesDtype, bytes: Uint8Array, offset: number, count: number): RoutesArray {
  const size = dtype === 'uint8' ? 1 : dtype === 'int32' ? 4 : 2;
  const start = bytes.byteOffset + offset;
  // A typed array over the decoded bytes (no copy) when aligned; numpy pads its header to 64 bytes, so it usually is.
  // Unaligned, the data is copied into its own buffer (Buffer#slice would share the pool and not copy).
  const buffer =
    start % size === 0 ? bytes.buffer : new Uint8Array(bytes.subarray(offset, offset + count * size)).buffer;
  const at = start % size === 0 ? start : 0;
  switch (dtype) {
    case 'uint8':
      return new Uint8Array(buffer, at, count);
    case 'uint16':
      return new Uint16Array(buffer, at, count);
    case 'int16':
      return new Int16Array(buffer, at, count);
    case 'int32':
      return new Int32Array(buffer, at, count);
  }
}

/** Reads a `.npy` file of a 3-d integer array; null for anything else (other dtype or rank, Fortran order, big-endian). */
export function readNpy(bytes: Uint8Array): RoutedExperts | null {
  if (bytes.length < 10) return null;
  for (let i = 0; i < NPY_MAGIC.length; i++) if (bytes[i] !== NPY_MAGIC[i]) return null;
  const major = bytes[6];
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let headerLength: number;
  let headerStart: number;
  if (major === 1) {
    headerLength = dv.getUint16(8, true);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    if (bytes.length < 12) return null;
    headerLength = dv.getUint32(8, true);
    headerStart = 12;
  } else return null;
  const dataStart = headerStart + headerLength;
  if (dataStart > bytes.length) return null;
  const header = Buffer.from(bytes.buffer, bytes.byteOffset + headerStart, headerLength).toString('latin1');
  const descr = /'descr'\s*:\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header)?.[1];
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr === undefined || fortran !== 'False' || shape === undefined) return null;
  const kind = DESCR[descr];
  if (kind === undefined) return null;
  const dims = shape
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(Number);
  if (dims.length !== 3 || !dims.every((d) => Number.isInteger(d) && d >= 0)) return null;
  const [rows = 0, layers = 0, topK = 0] = dims;
  const count = rows * layers * topK;
  if (dataStart + count * kind.size !== bytes.length) return null;
  return { rows, layers, topK, values: view(kind.dtype, bytes, dataStart, count) };
}

function base64Bytes(text: string): Uint8Array | null {
  if (text.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return null;
  return Buffer.from(text, 'base64');
}

/** A base64 `.npy` string (vLLM's current form, and rollgate's stored one). */
export function decodeNpyBase64(text: string): RoutedExperts | null {
  const bytes = base64Bytes(text);
  return bytes === null ? null : readNpy(bytes);
}

/**
 * Base64 little-endian int32, flat (SGLang; vLLM's raw-bytes variant): shaped by the call's token count, whose
 * rows are tokens - 1 (vLLM's and SGLang's count: the last token never ran) or tokens.
 */
export function decodeFlatInt32(text: string, tokens: number, layersTimesTopK?: number): RoutedExperts | null {
  const bytes = base64Bytes(text);
  return bytes === null ? null : flatInt32(bytes, tokens, layersTimesTopK);
}

/** `decodeFlatInt32` over bytes already decoded (SGLang's stream pieces, joined). */
export function flatInt32(bytes: Uint8Array, tokens: number, layersTimesTopK?: number): RoutedExperts | null {
  if (bytes.length === 0 || bytes.length % 4 !== 0) return null;
  const count = bytes.length / 4;
  const all = view('int32', bytes, 0, count) as Int32Array;
  for (const rows of [tokens - 1, tokens]) {
    if (rows <= 0 || count % rows !== 0) continue;
    const perRow = count / rows;
    if (layersTimesTopK !== undefined && perRow !== layersTimesTopK) continue;
    // Layers and top-k are not in the flat form; one "layer" of layers*top_k ids keeps every value in order.
    return { rows, layers: 1, topK: perRow, values: all };
  }
  return null;
}

/** Appends a nested [rows][layers][topK] list's ids to `out`; its row count, or null when it is not that shape. */
function nestedRows(value: unknown, out: number[], shape: { layers: number; topK: number }): number | null {
  if (!Array.isArray(value)) return null;
  const { layers, topK } = shape;
  for (const row of value as unknown[]) {
    if (!Array.isArray(row)) return null;
    if (row.length !== layers) return null;
    for (const layer of row as unknown[]) {
      if (!Array.isArray(layer)) return null;
      if (layer.length !== topK) return null;
      for (const id of layer as unknown[]) {
        if (!Number.isInteger(id) || (id as number) < 0) return null;
        out.push(id as number);
      }
    }
  }
  return value.length;
}

/** vLLM 0.21: prompt rows at the top (may be absent) and the choice's own rows, nested int lists. */
export function decodeNested(prompt: unknown, completion: unknown): RoutedExperts | null {
  const out: number[] = [];
  const first = Array.isArray(prompt) && prompt.length > 0 ? prompt : completion;
  const sample = Array.isArray(first) ? (first as unknown[])[0] : undefined;
  const layers = Array.isArray(sample) ? sample.length : 0;
  const topK = Array.isArray(sample) && Array.isArray(sample[0]) ? (sample[0] as unknown[]).length : 0;
  const shape = { layers, topK };
  const promptRows = prompt === undefined || prompt === null ? 0 : nestedRows(prompt, out, shape);
  const completionRows = nestedRows(completion, out, shape);
  if (promptRows === null || completionRows === null) return null;
  return { rows: promptRows + completionRows, layers, topK, values: Int32Array.from(out) };
}

/** The narrowest dtype vLLM would use: uint8 up to 256 experts, uint16 up to 65536, else int32. */
function narrowest(values: RoutesArray): RoutesDtype {
  if (values instanceof Uint8Array) return 'uint8';
  let max = 0;
  for (const v of values) {
    if (v < 0) return 'int32';
    if (v > max) max = v;
  }
  return max < 256 ? 'uint8' : max < 65536 ? 'uint16' : 'int32';
}

/** A header length that keeps numpy's 64-byte data alignment and is a whole number of base64 groups. */
const NPY_HEADER_UNIT = 192;

function npyHeader(descr: string, shape: readonly number[]): Buffer {
  const dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}), }`;
  // Header padded with spaces and a newline so the data starts on a 64-byte boundary (numpy's own layout).
  const unpadded = 10 + dict.length + 1;
  const padded = Math.ceil(unpadded / NPY_HEADER_UNIT) * NPY_HEADER_UNIT;
  const header = Buffer.alloc(padded, 0x20);
  Buffer.from(NPY_MAGIC).copy(header, 0);
  header[6] = 1;
  header[7] = 0;
  header.writeUInt16LE(padded - 10, 8);
  header.write(dict, 10, 'latin1');
  header[padded - 1] = 0x0a;
  return header;
}

const DESCR_OF: Readonly<Record<RoutesDtype, string>> = { uint8: '|u1', uint16: '<u2', int16: '<i2', int32: '<i4' };

export function isRoutesDtype(value: unknown): value is RoutesDtype {
  return ROUTES_DTYPES.some((d) => d === value);
}

/** The `.npy` (base64) of stored routes: the header's base64 joined to the stored data, nothing decoded. */
export function storedToNpyBase64(stored: StoredRoutes): string {
  return npyHeader(DESCR_OF[stored.dtype], stored.shape).toString('base64') + stored.data;
}

function dtypeOf(values: RoutesArray): RoutesDtype {
  if (values instanceof Uint8Array) return 'uint8';
  if (values instanceof Uint16Array) return 'uint16';
  if (values instanceof Int16Array) return 'int16';
  return 'int32';
}

/**
 * Routes in their stored form. An array already in its narrowest unsigned dtype (vLLM's own) keeps its bytes as
 * they came; any other is converted once.
 */
export function toStoredRoutes(routes: RoutedExperts): StoredRoutes {
  const shape = [routes.rows, routes.layers, routes.topK] as const;
  const dtype = narrowest(routes.values);
  const values = routes.values;
  if (dtypeOf(values) === dtype) {
    const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
    return { data: bytes.toString('base64'), shape, dtype };
  }
  return { data: dataBytes(values, dtype).toString('base64'), shape, dtype };
}

function dataBytes(values: RoutesArray, dtype: RoutesDtype): Buffer {
  const size = dtype === 'uint8' ? 1 : dtype === 'int32' ? 4 : 2;
  const data = Buffer.alloc(values.length * size);
  for (let i = 0; i < values.length; i++) {
    const v = values[i] ?? 0;
    if (size === 1) data[i] = v;
    else if (dtype === 'uint16') data.writeUInt16LE(v, i * 2);
    else if (dtype === 'int16') data.writeInt16LE(v, i * 2);
    else data.writeInt32LE(v, i * 4);
  }
  return data;
}

/** Routes as a `.npy` file in the narrowest dtype (or the one asked for), as base64. */
export function encodeNpyBase64(routes: RoutedExperts, dtype: RoutesDtype = narrowest(routes.values)): string {
  const header = npyHeader(DESCR_OF[dtype], [routes.rows, routes.layers, routes.topK]);
  return Buffer.concat([header, dataBytes(routes.values, dtype)]).toString('base64');
}

/** The first `rows` rows (a view, no copy). */
export function sliceRows(routes: RoutedExperts, rows: number): RoutedExperts {
  const per = routes.layers * routes.topK;
  return { ...routes, rows, values: routes.values.subarray(0, rows * per) };
}
