import { expect } from 'vitest';
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
