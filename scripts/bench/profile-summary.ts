/**
 * Summarises a V8 `.cpuprofile` (from `BENCH_PROFILE=1 BENCH_KEEP=1 npm run bench`):
 * self time per function and per package, heaviest first.
 *
 *   node --import tsx scripts/bench/profile-summary.ts <file.cpuprofile> [top]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: profile-summary.ts <file.cpuprofile> [top]\n');
  process.exit(2);
}
const top = Number(topArg ?? 30);
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
for (let i = 0; i < p.samples.length; i++) selfUs.set(p.samples[i], (selfUs.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

const where = (url: string) => {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.includes('/packages/')) return `ironlens:${/packages\/([^/]+)/.exec(url)?.[1]}`;
  if (url.startsWith('node:')) return 'node-internal';
  return url ? url.split('/').slice(-1)[0] : '(native/vm)';
};

const fn = new Map<string, number>();
const pkg = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  const f = n.callFrame;
  const key = `${f.functionName || '(anonymous)'}  ${f.url.replace(/^.*\/(node_modules|packages)\//, '$1/')}:${f.lineNumber + 1}`;
  fn.set(key, (fn.get(key) ?? 0) + us);
  const k = where(f.url);
  pkg.set(k, (pkg.get(k) ?? 0) + us);
}
const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
process.stdout.write(`total ${(total / 1e6).toFixed(2)} s sampled\n\nby package (self time)\n`);
for (const [k, us] of [...pkg].sort((a, b) => b[1] - a[1]).slice(0, 20)) process.stdout.write(`${pct(us)}  ${k}\n`);
process.stdout.write('\nby function (self time)\n');
for (const [k, us] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${pct(us)}  ${k}\n`);
