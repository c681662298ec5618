// Finds the Python interpreter the Python client's tests run under, and runs commands with it.
//
// $ROLLGATE_PYTHON when set; otherwise Debian's /usr/bin/python3 or `python3` on PATH, the first with NumPy,
// else the first that runs. CI (.ci/run) installs Debian's python3, python3-numpy, python3-venv,
// python3-setuptools and python3-wheel, which only /usr/bin/python3 sees when another python3 (pyenv, a venv)
// comes first on PATH. In CI (`$CI` set) a missing interpreter or NumPy is a test failure, never a skip.
import { execFileSync, spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const PYTHON_CLIENT_DIR = join(REPO_ROOT, 'clients/python');
/** Put on PYTHONPATH so the client's source tree is imported without installing it. */
export const PYTHON_CLIENT_SRC = join(PYTHON_CLIENT_DIR, 'src');

export interface PythonInterpreter {
  readonly command: string;
  readonly version: string;
  readonly hasNumpy: boolean;
  /** venv with ensurepip, setuptools and wheel: what an offline `pip install --no-build-isolation` needs. */
  readonly canInstall: boolean;
}

const PROBE = `
import importlib.util as u, sys
has = lambda *names: all(u.find_spec(n) is not None for n in names)
print(int(has("numpy")), int(has("venv", "ensurepip", "setuptools", "wheel")), sys.version.split()[0])
`;

function probe(command: string): PythonInterpreter | null {
  try {
    const out = execFileSync(command, ['-c', PROBE], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const [numpy, install, version] = out.trim().split(' ');
    if (version === undefined) return null;
    const [major, minor] = version.split('.').map(Number);
    // The client needs 3.10+; an older interpreter is treated as missing.
    if (major !== 3 || (minor ?? 0) < 10) return null;
    return { command, version, hasNumpy: numpy === '1', canInstall: install === '1' };
  } catch {
    return null;
  }
}

let probed: PythonInterpreter[] | undefined;

function interpreters(): PythonInterpreter[] {
  if (probed) return probed;
  // An explicit choice is used as is (with or without NumPy).
  const chosen = process.env.ROLLGATE_PYTHON;
  const candidates = chosen ? [chosen] : ['/usr/bin/python3', 'python3'];
  probed = [...new Set(candidates)].map(probe).filter((p): p is PythonInterpreter => p !== null);
  return probed;
}

/** The interpreter to use, preferring one with NumPy; null when no Python 3.10+ runs here. */
export function findPython(): PythonInterpreter | null {
  const found = interpreters();
  return found.find((p) => p.hasNumpy) ?? found[0] ?? null;
}

/** An interpreter that can build and install the client offline, preferring one with NumPy. */
export function findInstallingPython(): PythonInterpreter | null {
  const found = interpreters().filter((p) => p.canInstall);
  return found.find((p) => p.hasNumpy) ?? found[0] ?? null;
}

/** True in CI, where a missing Python or NumPy must fail the run instead of skipping tests. */
export const IS_CI = Boolean(process.env.CI);

export interface PythonRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunPythonOptions {
  readonly python: PythonInterpreter;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Called with each complete stdout line as it arrives (e.g. to print training progress). */
  readonly onLine?: (line: string) => void;
  readonly signal?: AbortSignal;
}

/** Runs the interpreter with the client's source on PYTHONPATH; resolves when it exits. */
export function runPython(options: RunPythonOptions): Promise<PythonRun> {
  const env = {
    ...process.env,
    PYTHONPATH: [PYTHON_CLIENT_SRC, process.env.PYTHONPATH].filter(Boolean).join(':'),
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1',
    ...options.env,
  };
  return new Promise((resolvePromise, reject) => {
    const child = spawn(options.python.command, [...options.args], {
      cwd: options.cwd ?? REPO_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.signal ? { signal: options.signal } : {}),
    });
    let stdout = '';
    let stderr = '';
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      stdout += text;
      pending += text;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) options.onLine?.(line);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => {
      if (pending !== '') options.onLine?.(pending);
      resolvePromise({ code, stdout, stderr });
    });
  });
}
