import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const require = createRequire(import.meta.url);

export interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  nodes: number;
  /** The first five nodes' selectors. */
  targets: string[];
}

/**
 * Runs axe-core in `page`; writes every violation to `reportFile` (JSON) and returns the serious
 * and critical ones. axe is evaluated through the DevTools protocol, so a page under the console's
 * Content-Security-Policy (script-src 'self', which refuses an injected inline <script>) runs it too.
 */
export async function axeViolations(page: Page, reportFile: string): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'));
  interface Raw {
    id: string;
    impact: string;
    help: string;
    nodes: Array<{ target: string[] }>;
  }
  const result = await page.evaluate(async () => {
    const r = await (window as unknown as { axe: { run: (d: Document, o: unknown) => Promise<{ violations: Raw[] }> } }).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length, targets: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }));
  });
  writeFileSync(reportFile, JSON.stringify(result, null, 2));
  return result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
