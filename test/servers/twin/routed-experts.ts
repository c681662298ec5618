// MoE routing replay in the twin (docs/engine-twin.md, "Routed experts"): with `routedExperts` set, the twin
// answers like vLLM started with --enable-return-routed-experts (one base64 `.npy` per choice, shape
// (prompt + completion - 1, layers, top_k), uint8 up to 256 experts else uint16, as vLLM's capturer picks) and like
// SGLang asked with `return_routed_experts` (`sgl_ext.routed_experts`, base64 of the int32 array, flat). The routes
// are a function of each token's position and id, so a prefix gets the same routes in every call that holds it,
// as a prefix-cached engine gives; the ledger keeps what was sent.
// The .npy writer is the twin's own (not the gateway's), so a test compares two independent encoders.

export interface TwinRoutedExperts {
  readonly layers: number;
  readonly topK: number;
  /** Experts per layer (256 and fewer: uint8 .npy, as vLLM sends; more: uint16). */
  readonly experts: number;
}

/** Row-major (tokens - 1, layers, topK) expert ids over prompt + generated ids. */
export function twinRoutes(cfg: TwinRoutedExperts, tokens: readonly number[]): number[] {
  const out: number[] = [];
  for (let t = 0; t + 1 < tokens.length; t++) {
    const id = tokens[t] ?? 0;
    for (let layer = 0; layer < cfg.layers; layer++) {
      // Distinct experts within a (token, layer): consecutive ids from a start the token and layer pick.
      const start = (id * 31 + t * 7 + layer * 13) % cfg.experts;
      for (let k = 0; k < cfg.topK; k++) out.push((start + k) % cfg.experts);
    }
  }
  return out;
}

/** numpy's np.save layout, version 1.0: magic, header dict padded so the data starts at a multiple of 64. */
function npy(descr: string, shape: readonly number[], data: Buffer): Buffer {
  const dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}), }`;
  const total = Math.ceil((10 + dict.length + 1) / 64) * 64;
  const head = Buffer.alloc(total, ' ');
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(total - 10, 8);
  head.write(dict, 10, 'latin1');
  head[total - 1] = 0x0a;
  return Buffer.concat([head, data]);
}

/** vLLM's `routed_experts` string. */
export function vllmRoutedExperts(cfg: TwinRoutedExperts, routes: readonly number[]): string {
  const rows = routes.length / (cfg.layers * cfg.topK);
  const wide = cfg.experts > 256;
  const data = Buffer.alloc(routes.length * (wide ? 2 : 1));
  for (const [i, v] of routes.entries()) {
    if (wide) data.writeUInt16LE(v, i * 2);
    else data.writeUInt8(v, i);
  }
  return npy(wide ? '<u2' : '|u1', [rows, cfg.layers, cfg.topK], data).toString('base64');
}

/** SGLang's `sgl_ext.routed_experts` string. */
export function sglangRoutedExperts(routes: readonly number[]): string {
  return Buffer.from(Int32Array.from(routes).buffer).toString('base64');
}
