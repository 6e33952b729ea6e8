import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const documents = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

describe('the documentation cites only documents the repository has', () => {
  it.each(documents)('%s', (document) => {
    const text = readFileSync(join(root, document), 'utf8');
    const here = dirname(join(root, document));
    // Links to another document, relative to this one.
    const links = [...text.matchAll(/\]\(([^)#\s:]+\.md)(?:#[^)]*)?\)/g)].map((match) => match[1]!);
    const brokenLinks = links.filter((target) => !existsSync(join(here, target)));
    // Documents named in the text by their upper-case file name (a DESIGN.md was cited that
    // the repository never had): at the root, in docs/ or in bench/.
    const named = [...new Set([...text.matchAll(/(?<![\w/.-])([A-Z][A-Z_]*\.md)\b/g)].map((match) => match[1]!))];
    const missingNames = named.filter((name) => !['', 'docs', 'bench'].some((dir) => existsSync(join(root, dir, name))));
    expect({ brokenLinks, missingNames }).toEqual({ brokenLinks: [], missingNames: [] });
  });
});

/** Every .ts file under a folder, recursively. */
function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('the source cites only documents the repository has', () => {
  it('every document named in src/ exists (CONTRACT.md and DESIGN.md were cited, never shipped)', () => {
    const missing: string[] = [];
    for (const file of sourceFiles('src')) {
      const text = readFileSync(join(root, file), 'utf8');
      // A path to a document (docs/api.md, bench/RESULTS.md) or a bare upper-case name (DESIGN.md).
      for (const match of text.matchAll(/(?<![\w/.-])((?:[a-z]+\/)*[A-Za-z][\w-]*\.md)\b/g)) {
        const name = match[1]!;
        const found = name.includes('/') ? existsSync(join(root, name)) : ['', 'docs', 'bench'].some((dir) => existsSync(join(root, dir, name)));
        if (!found) missing.push(`${file}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
