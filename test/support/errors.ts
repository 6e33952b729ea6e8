import { expect } from 'vitest';
import { ConfigError, resolveConfig, type ConfigFlags } from '../../src/config/load.js';
import { RegistryError, type ErrorCode } from '../../src/errors.js';

/** Runs `fn`, expects it to throw a RegistryError with `code`, and returns that error. */
export function expectRegistryError(fn: () => unknown, code: ErrorCode = 'REG_ERR_VALIDATION'): RegistryError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(RegistryError);
  expect((caught as RegistryError).code).toBe(code);
  return caught as RegistryError;
}

/** The ConfigError a configuration must fail with (fails the test when it resolves). */
export function configError(file: unknown, env: Record<string, string> = {}, flags: ConfigFlags = {}): ConfigError {
  try {
    resolveConfig(file, env, flags);
  } catch (caught) {
    if (caught instanceof ConfigError) return caught;
    throw caught;
  }
  throw new Error('expected a ConfigError');
}
