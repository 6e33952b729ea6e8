import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The lint step of `npm test` enforces the layers (eslint.config.js): these cases prove each
// rule fires where it should and stays quiet where it should not.
const eslint = new ESLint({ cwd: process.cwd() });

async function problems(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((message) => `${message.ruleId}: ${message.message}`);
}

describe('the core seams (eslint.config.js)', () => {
  it.each([
    ['Date.now()', 'const t = Date.now();\nexport { t };\n', 'no-restricted-properties'],
    ['Math.random()', 'export const r = Math.random();\n', 'no-restricted-properties'],
    ['process.env', 'export const e = process.env.X;\n', 'no-restricted-properties'],
    ['a raw timer', 'setTimeout(() => {}, 1);\n', 'no-restricted-globals'],
    ['new Date()', 'export const d = new Date();\n', 'no-restricted-syntax'],
    ['a framework', "import Fastify from 'fastify';\nexport { Fastify };\n", 'no-restricted-imports'],
    ['file I/O', "import { readFile } from 'node:fs/promises';\nexport { readFile };\n", 'no-restricted-imports'],
    ['an upward import', "import { buildServer } from '../http/server.js';\nexport { buildServer };\n", 'no-restricted-imports'],
    ['config from the core', "import type { RegistryConfig } from '../config/load.js';\nexport type C = RegistryConfig;\n", 'no-restricted-imports'],
  ])('refuse %s in a core folder', async (_what, code, rule) => {
    const found = await problems(code, 'src/registry/example.ts');
    expect(found.some((line) => line.startsWith(`${rule}:`))).toBe(true);
  });

  it('refuse an import from a higher core layer (registry may not import the read layer)', async () => {
    const found = await problems("import { ServiceViews } from '../views/service-views.js';\nexport { ServiceViews };\n", 'src/registry/example.ts');
    expect(found.some((line) => line.startsWith('no-restricted-imports:'))).toBe(true);
  });

  it('allow imports from the layers below and time at the edges', async () => {
    expect(await problems("import { isServed } from '../registry/visibility.js';\nexport { isServed };\n", 'src/views/example.ts')).toEqual([]);
    expect(await problems('export const t = Date.now();\n', 'src/http/example.ts')).toEqual([]);
    expect(await problems('export const t = Date.now();\n', 'src/clock/clock-example.ts')).toEqual([]);
  });

  it('pass on the source tree as it is', async () => {
    const results = await eslint.lintFiles(['src']);
    const errors = results.flatMap((result) => result.messages.map((message) => `${result.filePath}:${message.line} ${message.ruleId}`));
    expect(errors).toEqual([]);
  }, 120_000);
});

describe('a protocol-free core', () => {
  it('names no protocol in the code of the core folders (comments aside)', async () => {
    const { readdirSync, readFileSync } = await import('node:fs');
    const protocols = /eureka|consul|xds|prometheus|grpc|dns-packet/i;
    const found: string[] = [];
    for (const folder of ['registry', 'lease', 'replication', 'membership', 'watch', 'views']) {
      for (const file of readdirSync(`src/${folder}`)) {
        const code = readFileSync(`src/${folder}/${file}`, 'utf8')
          .replace(/\/\*[\s\S]*?\*\//g, '')
          .replace(/\/\/.*$/gm, '');
        code.split('\n').forEach((line, index) => {
          if (protocols.test(line)) found.push(`src/${folder}/${file}:${index + 1}: ${line.trim()}`);
        });
      }
    }
    expect(found).toEqual([]);
  });
});
