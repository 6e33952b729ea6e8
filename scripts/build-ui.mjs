// Completes the dashboard build: `tsc -p tsconfig.ui.json` compiled src/ui/*.ts to dist/ui/*.js;
// this copies the static files (HTML, CSS, icon) beside them. The peer serves dist/ui as is.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';

const from = new URL('../src/ui/', import.meta.url);
const to = new URL('../dist/ui/', import.meta.url);
mkdirSync(to, { recursive: true });
const copied = readdirSync(from).filter((name) => /\.(html|css|svg)$/.test(name));
for (const name of copied) copyFileSync(new URL(name, from), new URL(name, to));
console.log(`dashboard: copied ${copied.join(', ')} to dist/ui`);
