// `npm run stats:structure [-- DIR]`: the numbers of the before/after table in docs/architecture.md, for the tree
// at DIR (default: this checkout), run from this checkout. Files per folder, the largest files and functions, file-level import cycles
// (dependency-cruiser, with the project's own rules) and duplicated blocks (jscpd). Writes only a temporary report folder, removed after.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseSync } from '@swc/core';

const root = process.argv[2] ?? process.cwd();
const CODE = ['src', 'routes', 'middleware', 'config', 'exporters'];
const FOLDERS = ['src/gateway', 'src/store', 'src/tracing', 'src/contracts', 'src/attribution', 'routes', 'middleware'];

function tsFiles(dir: string): string[] {
  let out: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out = out.concat(tsFiles(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const lines = (path: string): number => readFileSync(path, 'utf8').split('\n').length;

interface Fn {
  readonly file: string;
  readonly name: string;
  readonly lines: number;
}

/** Function-like nodes with their line counts, found by walking swc's AST (no type checker needed). */
function functionsOf(path: string): Fn[] {
  const text = readFileSync(path, 'utf8');
  const bytes = Buffer.from(text, 'utf8');
  const module = parseSync(text, { syntax: 'typescript', target: 'es2022' });
  const base = module.span.start;
  const lineAt = (offset: number): number =>
    bytes
      .subarray(0, Math.max(0, offset - base))
      .toString('utf8')
      .split('\n').length;
  const out: Fn[] = [];
  const visit = (node: unknown, name: string): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item, name);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const record = node as Record<string, unknown>;
    let label = name;
    if (
      record.type === 'VariableDeclarator' ||
      record.type === 'FunctionDeclaration' ||
      record.type === 'ClassMethod'
    ) {
      const id = (record.identifier ?? record.id ?? record.key) as { value?: unknown } | undefined;
      if (typeof id?.value === 'string') label = id.value;
    }
    const isFn = ['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression', 'ClassMethod'].includes(
      String(record.type),
    );
    const span = record.span as { start: number; end: number } | undefined;
    if (isFn && span !== undefined) {
      out.push({ file: relative(root, path), name: label, lines: lineAt(span.end) - lineAt(span.start) + 1 });
    }
    for (const [key, value] of Object.entries(record)) if (key !== 'span') visit(value, label);
  };
  visit(module.body, '(module)');
  return out;
}

const files = CODE.flatMap((dir) => tsFiles(join(root, dir)));
console.log('| measure | value |');
console.log('| --- | --- |');
for (const folder of FOLDERS) {
  const flat = (() => {
    try {
      return readdirSync(join(root, folder)).filter((n) => n.endsWith('.ts')).length;
    } catch {
      return 0;
    }
  })();
  console.log(`| files in ${folder}/ (flat, all below) | ${flat}, ${tsFiles(join(root, folder)).length} |`);
}
console.log(`| production files, lines | ${files.length}, ${files.reduce((n, f) => n + lines(f), 0)} |`);
const largestFiles = files
  .map((f) => ({ f: relative(root, f), n: lines(f) }))
  .sort((a, b) => b.n - a.n)
  .slice(0, 5);
console.log(`| largest files | ${largestFiles.map((x) => `${x.f} (${x.n})`).join(', ')} |`);
const fns = files.flatMap(functionsOf).sort((a, b) => b.lines - a.lines);
// A function nested in a larger one is counted too; the top rows are the outermost closures.
console.log(
  `| largest functions | ${fns
    .slice(0, 5)
    .map((x) => `${x.name} in ${x.file} (${x.lines})`)
    .join(', ')} |`,
);

const depcruise = join(process.cwd(), 'node_modules', '.bin', 'depcruise');
const config = join(process.cwd(), '.dependency-cruiser.cjs');
let stdout = '';
try {
  stdout = execFileSync(
    depcruise,
    [...CODE.filter((d) => tsFiles(join(root, d)).length > 0), '--config', config, '-T', 'json'],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 1 << 28,
    },
  ).toString();
} catch (error) {
  // A cruise with violations exits non-zero; its report is still on stdout.
  stdout = (error as { stdout?: Buffer }).stdout?.toString() ?? '';
}
let cycles = 'n/a (depcruise failed)';
try {
  const report = JSON.parse(stdout) as { summary: { violations: { rule: { name: string } }[] } };
  const violations = report.summary.violations;
  const circular = violations.filter((v) => v.rule.name.startsWith('no-circular')).length;
  cycles = `${circular} (other layer violations: ${violations.length - circular})`;
} catch {
  // left as n/a
}
console.log(`| file-level cycles (dependency-cruiser, no-circular) | ${cycles} |`);

const jscpd = join(process.cwd(), 'node_modules', '.bin', 'jscpd');
const reportDir = mkdtempSync(join(tmpdir(), 'rollgate-jscpd-'));
try {
  const dirs = CODE.map((d) => join(root, d)).filter((d) => tsFiles(d).length > 0);
  execFileSync(
    jscpd,
    [...dirs, '--min-lines', '6', '--format', 'typescript', '--reporters', 'json', '--output', reportDir, '--silent'],
    {
      stdio: 'ignore',
    },
  );
  const report = JSON.parse(readFileSync(join(reportDir, 'jscpd-report.json'), 'utf8')) as {
    statistics: { total: { clones: number; duplicatedLines: number; percentage: number } };
  };
  const total = report.statistics.total;
  console.log(
    `| duplicated blocks (jscpd, >= 6 lines) | ${total.clones} (${total.duplicatedLines} lines, ${total.percentage} %) |`,
  );
} finally {
  rmSync(reportDir, { recursive: true, force: true });
}
