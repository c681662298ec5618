// Collects the routed experts an answer carries (routed-experts.ts), from a whole body or from stream chunks, and
// resolves them once the call's token count is known. Only references are kept while the answer streams: the
// base64 is decoded once, at the end.
import {
  decodeFlatInt32,
  decodeNested,
  decodeNpyBase64,
  flatInt32,
  type RoutedExperts,
  sliceRows,
} from './routed-experts.js';

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One choice's routes as they came: vLLM's value (string or nested list) or SGLang's flat base64 pieces. */
interface RawRoutes {
  vllm: unknown;
  /** SGLang pieces in arrival order; a piece that starts at row 0 again replaces those before it. */
  sglang: string[];
}

/** Why a call's routes could not be kept (the span's `rollgate.routed_experts.status`). */
export type RoutesProblem = 'malformed' | 'not_covering';

export type ResolvedRoutes =
  | { readonly ok: true; readonly routes: RoutedExperts }
  | { readonly ok: false; readonly problem: RoutesProblem };

export class RoutesCapture {
  readonly #byChoice = new Map<number, RawRoutes>();
  /** vLLM 0.21's top-level prompt rows. */
  #promptRows: unknown = null;

  get seen(): boolean {
    return this.#byChoice.size > 0;
  }

  #raw(index: number): RawRoutes {
    let raw = this.#byChoice.get(index);
    if (raw === undefined) {
      raw = { vllm: null, sglang: [] };
      this.#byChoice.set(index, raw);
    }
    return raw;
  }

  #sglang(index: number, ext: unknown): void {
    if (!isObj(ext) || typeof ext.routed_experts !== 'string') return;
    const raw = this.#raw(index);
    const start = ext.routed_experts_start_len;
    if (typeof start !== 'number' || start === 0) raw.sglang = [];
    raw.sglang.push(ext.routed_experts);
  }

  /** The body's or chunk's top level (vLLM 0.21's prompt rows; SGLang's `sgl_ext` for the first choice). */
  top(body: Obj): void {
    if (Array.isArray(body.prompt_routed_experts)) this.#promptRows = body.prompt_routed_experts;
    this.#sglang(0, body.sgl_ext);
  }

  choice(index: number, raw: Obj): void {
    const value = raw.routed_experts;
    if (typeof value === 'string' || Array.isArray(value)) this.#raw(index).vllm = value;
    this.#sglang(index, raw.sgl_ext);
  }

  /**
   * Choice `index`'s routes over `tokens` (its prompt plus response ids), as rows for tokens - 1 (the last token
   * never ran through the model); null when the answer carried none.
   */
  resolve(index: number, tokens: number): ResolvedRoutes | null {
    const raw = this.#byChoice.get(index);
    if (raw === undefined) return null;
    let routes: RoutedExperts | null = null;
    if (typeof raw.vllm === 'string') {
      // The raw-bytes variant has no .npy header: int32 like SGLang's.
      routes = decodeNpyBase64(raw.vllm) ?? decodeFlatInt32(raw.vllm, tokens);
    } else if (Array.isArray(raw.vllm)) {
      routes = decodeNested(index === 0 ? this.#promptRows : null, raw.vllm);
    } else if (raw.sglang.length > 0) {
      // Stream pieces are decoded once each and joined as bytes, not re-encoded to be decoded again.
      routes =
        raw.sglang.length === 1
          ? decodeFlatInt32(raw.sglang[0] ?? '', tokens)
          : flatInt32(Buffer.concat(raw.sglang.map((p) => Buffer.from(p, 'base64'))), tokens);
    }
    if (routes === null) return { ok: false, problem: 'malformed' };
    const rows = tokens - 1;
    if (routes.rows < rows || rows < 0) return { ok: false, problem: 'not_covering' };
    return { ok: true, routes: routes.rows === rows ? routes : sliceRows(routes, rows) };
  }
}
