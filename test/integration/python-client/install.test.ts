// The Python client installs offline the way docs/python-client.md says (a venv with the system's site
// packages, `pip install --no-build-isolation`, no package index), and the installed copy is the one imported.
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findInstallingPython, IS_CI, PYTHON_CLIENT_DIR, runPython } from '../../helpers/python.js';

const python = findInstallingPython();

describe.skipIf(python === null && !IS_CI)('Python client package', () => {
  let dir: string | undefined;

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('installs offline into a venv with --no-build-isolation and imports from site-packages', {
    timeout: 180_000,
  }, async () => {
    expect(python, 'python3 with venv, setuptools and wheel is required in CI: .ci/run installs them').not.toBeNull();
    if (python === null) return;
    dir = await mkdtemp(join(tmpdir(), 'rollgate-python-install-'));
    // A copy, so the build's egg-info and build/ folders never land in the working tree.
    const source = join(dir, 'client');
    await cp(PYTHON_CLIENT_DIR, source, { recursive: true, filter: (path) => !path.includes('__pycache__') });
    const venv = join(dir, 'venv');
    const created = await runPython({ python, args: ['-m', 'venv', '--system-site-packages', venv], cwd: dir });
    expect(created.code, created.stderr).toBe(0);
    const pip = await runPython({
      python: { ...python, command: join(venv, 'bin/python') },
      args: ['-m', 'pip', 'install', '--no-build-isolation', '--no-index', '--disable-pip-version-check', source],
      cwd: dir,
      env: { PYTHONPATH: '' },
    });
    expect(pip.code, `${pip.stdout}\n${pip.stderr}`).toBe(0);
    const check = await runPython({
      python: { ...python, command: join(venv, 'bin/python') },
      args: [
        '-c',
        'import json, rollgate, rollgate.layouts, importlib.resources as r; ' +
          'print(json.dumps({"file": rollgate.__file__, "version": rollgate.__version__, ' +
          '"typed": r.files("rollgate").joinpath("py.typed").is_file(), "numpy": rollgate.numpy_available()}))',
      ],
      cwd: dir,
      env: { PYTHONPATH: '' },
    });
    expect(check.code, check.stderr).toBe(0);
    const info = JSON.parse(check.stdout) as { file: string; version: string; typed: boolean; numpy: boolean };
    expect(info.file.startsWith(join(venv, 'lib'))).toBe(true);
    expect(info.version).toBe('0.1.0');
    expect(info.typed).toBe(true);
    expect(info.numpy).toBe(python.hasNumpy);
  });
});
