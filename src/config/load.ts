import { readFile } from 'node:fs/promises';
import { ConfigError } from './fields.js';
import { resolveConfig } from './resolve.js';
import { envNames, type ConfigFlags, type RegistryConfig } from './types.js';

/**
 * Where a process's configuration comes from: the file (the only I/O), the environment and
 * the flags. The parts live by concern: types.ts (the shape, flags, defaults), fields.ts (the
 * readers of single fields), sections.ts (peers, services, cross-setting checks),
 * resolve.ts (the layering of flags, environment, file and profile). Everything callers
 * imported from here is still exported here.
 */
export { ConfigError, readSetting } from './fields.js';
export { resolveConfig } from './resolve.js';
export * from './types.js';

/** Reads and parses the config file (the only I/O here). */
export async function readConfigFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError('config', `cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError('config', `${path} is not valid JSON: ${(error as Error).message}`);
  }
}

/** The whole configuration of a process: file (if any), environment and flags. */
export async function loadConfig(env: Record<string, string | undefined>, flags: ConfigFlags): Promise<RegistryConfig> {
  const path = flags.config ?? (env[envNames.config] || undefined);
  const file = path === undefined ? undefined : await readConfigFile(path);
  return resolveConfig(file, env, flags);
}
