import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('@ironlens/metal/api', () => {
  it("loads nothing but TypeBox (and core's TypeBox helpers and the agent's schemas, TypeBox alone) at run time, so a client can import its types without server code", () => {
    const text = readFileSync(new URL('./schemas.ts', import.meta.url), 'utf8');
    const valueImports = [...text.matchAll(/^(import|export)\s+(?!type\b)[^;]*?\bfrom\s+'([^']+)'/gms)].map((m) => m[2]);
    expect(valueImports).toEqual(['@ironlens/agent/api', '@ironlens/core/typebox', '@sinclair/typebox', './rollout.schemas', './rollout.schemas']);
    // The rollout shapes (issue 31), kept in a module of their own, import TypeBox alone too.
    const rollouts = readFileSync(new URL('./rollout.schemas.ts', import.meta.url), 'utf8');
    expect([...rollouts.matchAll(/^(import|export)\s+(?!type\b)[^;]*?\bfrom\s+'([^']+)'/gms)].map((m) => m[2])).toEqual(['@ironlens/core/typebox', '@sinclair/typebox']);
    const agent = readFileSync(new URL('../../../agent/src/api/schemas.ts', import.meta.url), 'utf8');
    expect([...agent.matchAll(/^(import|export)\s+(?!type\b)[^;]*?\bfrom\s+'([^']+)'/gms)].map((m) => m[2])).toEqual(['@ironlens/core/typebox', '@sinclair/typebox']);
    const helpers = readFileSync(new URL('../../../core/src/schema/typebox.ts', import.meta.url), 'utf8');
    expect([...helpers.matchAll(/^(import|export)\s+(?!type\b)[^;]*?\bfrom\s+'([^']+)'/gms)].map((m) => m[2])).toEqual(['@sinclair/typebox']);
    expect(text).not.toMatch(/^import\s+'/m);
  });
});
