import { createRequire } from 'node:module';
import { expect, it } from 'vitest';
import { createPinoLogger } from '../../../src/log/pino.js';

const loaded = createRequire(import.meta.url).cache;
const prettyLoaded = () => Object.keys(loaded).some((file) => file.includes('/node_modules/pino-pretty/'));
const sink = () => ({ write: () => undefined });

it('loads pino-pretty for the terminal form only, not for a peer that writes JSON lines', () => {
  createPinoLogger('info', sink()).info('registry peer started');
  expect(prettyLoaded()).toBe(false);
  createPinoLogger('info', sink(), { pretty: true }).info('registry peer started');
  expect(prettyLoaded()).toBe(true);
});
