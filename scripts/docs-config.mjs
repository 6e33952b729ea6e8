// Writes docs/configuration.md from the compiled settings table (run `npm run build` first).
import { writeFileSync } from 'node:fs';
import { renderConfigReference } from '../dist/config/reference.js';

writeFileSync(new URL('../docs/configuration.md', import.meta.url), renderConfigReference());
console.log('wrote docs/configuration.md');
