import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('@ironlens/agent/api', () => {
  it("loads nothing but TypeBox and core's TypeBox helpers at run time, so the control plane and the console import it without the agent's server code", () => {
    const text = readFileSync(new URL('./schemas.ts', import.meta.url), 'utf8');
    const valueImports = [...text.matchAll(/^(import|export)\s+(?!type\b)[^;]*?\bfrom\s+'([^']+)'/gms)].map((m) => m[2]);
    expect(valueImports).toEqual(['@ironlens/core/typebox', '@sinclair/typebox']);
    expect(text).not.toMatch(/^import\s+'/m);
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { exports: Record<string, string> };
    expect(pkg.exports['./api']).toBe('./src/api/schemas.ts');
  });
});
