import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium (`apt-get install -y chromium`; `npm test` installs it: scripts/test-deps.mjs). Never a downloaded browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** The flags the dashboard tests run chromium with (a fresh --user-data-dir comes on top). */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

export const artifactsDir = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

export interface Browser {
  context: BrowserContext;
  /** A new page; uncaught errors in it are collected in `errors`, every URL it requests in `requests`. */
  page(viewport?: { width: number; height: number }): Promise<Page>;
  errors: string[];
  requests: string[];
  /** Saves a full-page screenshot as test-artifacts/NAME.png. */
  screenshot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Launches chromium headless with a fresh profile in a temporary directory (playwright passes
 * it as --user-data-dir), driven by playwright-core over its pipe. Fails with a clear message
 * when chromium is not installed.
 */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium), as npm test does as root (scripts/test-deps.mjs)`);
  const userDataDir = await mkdtemp(join(tmpdir(), 'registry-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1440, height: 900 },
  });
  const errors: string[] = [];
  const requests: string[] = [];
  await mkdir(artifactsDir, { recursive: true });
  return {
    context,
    errors,
    requests,
    page: async (viewport) => {
      const page = await context.newPage();
      if (viewport) await page.setViewportSize(viewport);
      page.on('pageerror', (error) => errors.push(error.message));
      page.on('request', (request) => requests.push(request.url()));
      return page;
    },
    screenshot: async (page, name) => {
      const path = join(artifactsDir, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
    close: async () => {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}
