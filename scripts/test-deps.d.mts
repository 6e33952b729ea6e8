// Types of scripts/test-deps.mjs, for the tests that import it.
export interface TestProgram {
  debianPackage: string;
  file?: string;
  pythonModule?: string;
  tests: string;
}
export interface TestDepsPlan {
  action: 'none' | 'install' | 'advise';
  packages: string[];
  tests: string[];
  isRoot: boolean;
  reason?: string;
}
export const TEST_PROGRAMS: TestProgram[];
export const PYTHON: string;
export function planTestDeps(programs: TestProgram[], present: (program: TestProgram) => boolean, options: { isRoot: boolean; hasAptGet: boolean }): TestDepsPlan;
export function describeTestDeps(plan: TestDepsPlan): string;
export function isPresent(program: TestProgram): boolean;
