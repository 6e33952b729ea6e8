import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// A protocol's routes write through the application layer, where the durability barrier is
// applied once (eslint.config.js, "routes write through the application layer"): these cases
// prove the rule covers every folder that holds routes.
const eslint = new ESLint({ cwd: process.cwd() });

async function rules(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((message) => `${message.ruleId}: ${message.message}`);
}

const aroundTheBarrier = "import { durableWrite } from '../app/durable-write.js';\nexport { durableWrite };\n";
const throughTheRegistry = "import { Registry } from '../registry/registry.js';\nexport { Registry };\n";
const routeFolders = ['src/http', 'src/native', 'src/eureka', 'src/prometheus'];

describe('routes write through the application layer (eslint.config.js)', () => {
  it.each(routeFolders)('refuses durableWrite and the Registry in %s', async (folder) => {
    const barrier = await rules(aroundTheBarrier, `${folder}/example.ts`);
    expect(barrier.some((line) => line.startsWith('no-restricted-imports:') && line.includes('whenDurable'))).toBe(true);
    const registry = await rules(throughTheRegistry, `${folder}/example.ts`);
    expect(registry.some((line) => line.startsWith('no-restricted-imports:') && line.includes('not the Registry'))).toBe(true);
  });

  it.each(routeFolders)('allows whenDurable in %s', async (folder) => {
    const code = "import { whenDurable } from '../app/durable-write.js';\nexport { whenDurable };\n";
    expect(await rules(code, `${folder}/example.ts`)).toEqual([]);
  });
});
