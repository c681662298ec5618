// Which PostgreSQL and driver errors mean the database (or the way to it) refuses writes right now, as opposed to a
// value it cannot store or a bug: those become a retryable `unavailable` (503 + Retry-After), like SQLite's full or
// read-only file. The same request succeeds once the database takes writes again.

export interface StorageRefusal {
  readonly reason: string;
  /**
   * The readiness probe (a read) cannot see this refusal: a full disk or exhausted resources still answer a SELECT
   * on an open connection. Readiness then holds the refusal for a while instead of trusting the next probe.
   */
  readonly probeBlind: boolean;
}

/** SQLSTATE (exact or class prefix) -> what it means for writes. */
const REFUSING_SQLSTATES: ReadonlyArray<{
  readonly state: string;
  readonly what: string;
  readonly probeBlind: boolean;
}> = [
  { state: '53100', what: 'the database disk is full', probeBlind: true },
  { state: '53200', what: 'the database server is out of memory', probeBlind: true },
  { state: '53300', what: 'the database refuses more connections', probeBlind: true },
  { state: '53400', what: 'a database configuration limit was reached', probeBlind: true },
  { state: '53', what: 'the database lacks the resources for the write', probeBlind: true },
  { state: '25006', what: 'the database is read-only (a standby, or read-only by setting)', probeBlind: false },
  { state: '57P01', what: 'the database server terminated the connection (admin shutdown)', probeBlind: false },
  { state: '57P02', what: 'the database server crashed', probeBlind: false },
  { state: '57P03', what: 'the database server does not accept connections now', probeBlind: false },
  { state: '57P04', what: 'the database was dropped', probeBlind: false },
  { state: '58', what: 'the database server had a system or I/O error', probeBlind: true },
  { state: '08', what: 'the connection to the database failed', probeBlind: false },
];

/** Socket-level errors: the database cannot be reached (no SQLSTATE, the driver never got an answer). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** node-postgres raises these as plain Errors when the socket closes or never opens. */
const DRIVER_CONNECTION_MESSAGES = [
  /^Connection terminated/,
  /not queryable/,
  /timeout exceeded when trying to connect/,
  /^Query read timeout/,
];

function codeOf(error: unknown): string {
  if (typeof error !== 'object' || error === null || !('code' in error)) return '';
  const code = (error as { code: unknown }).code;
  return typeof code === 'string' ? code : '';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Why `error` means the database refuses writes now, or null for any other error. */
export function storageRefusal(error: unknown): StorageRefusal | null {
  const code = codeOf(error);
  const message = messageOf(error);
  if (/^[0-9A-Z]{5}$/.test(code)) {
    const match = REFUSING_SQLSTATES.find((entry) => code === entry.state || code.startsWith(entry.state));
    if (match === undefined) return null;
    return { reason: `${match.what} (SQLSTATE ${code}: ${message})`, probeBlind: match.probeBlind };
  }
  if (NETWORK_CODES.has(code)) {
    return { reason: `the database cannot be reached (${code}: ${message})`, probeBlind: false };
  }
  if (DRIVER_CONNECTION_MESSAGES.some((pattern) => pattern.test(message))) {
    return { reason: `the connection to the database was lost (${message})`, probeBlind: false };
  }
  return null;
}
