import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// Every store write goes through its one writer, the Registry (eslint.config.js, `storeWrites`).
const eslint = new ESLint({ cwd: process.cwd() });

async function rules(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((message) => `${message.ruleId}: ${message.message}`);
}

const refused = 'no-restricted-syntax: write the store through the Registry (src/registry/registry.ts), its one writer';

describe('one writer of the store (eslint.config.js)', () => {
  it.each([
    ['the reaper (lease)', 'src/lease/example.ts', 'export function f(registry: any, e: any) { registry.store.updateLease(e, { held: true }, true); }\n'],
    ['a purge from replication', 'src/replication/example.ts', 'export function f(store: any, e: any) { store.purge(e); }\n'],
    ['a restore (persistence, an edge)', 'src/persistence/example.ts', 'export function f(c: any, r: any, l: any) { c.store.write(r, l, "restore"); }\n'],
    ['a route', 'src/http/example.ts', 'export function f(node: any, r: any, l: any) { node.store.write(r, l, "local"); }\n'],
  ])('refuses a store write from %s', async (_where, filePath, code) => {
    expect(await rules(code, filePath)).toContain(refused);
  });

  it('allows the registry to write, everyone to read, and other writes', async () => {
    expect(await rules('export function f(store: any, r: any, l: any) { store.write(r, l, "local"); }\n', 'src/registry/example.ts')).toEqual([]);
    expect(await rules('export function f(registry: any, k: any) { return registry.store.get(k); }\n', 'src/lease/example.ts')).toEqual([]);
    expect(await rules('export function f(stream: any) { stream.write("x"); }\n', 'src/http/example.ts')).toEqual([]);
  });

  it('keeps refusing new Date() in the core beside it', async () => {
    expect((await rules('export const d = new Date();\n', 'src/lease/example.ts')).some((line) => line.includes('new Date()'))).toBe(true);
  });
});
