import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { describeTestDeps, isPresent, planTestDeps, PYTHON, TEST_PROGRAMS, type TestProgram } from '../../../scripts/test-deps.mjs';

const script = fileURLToPath(new URL('../../../scripts/test-deps.mjs', import.meta.url));
const byPackage = (...absent: string[]) => (program: TestProgram) => !absent.includes(program.debianPackage);

describe('which Debian programs `npm test` installs (scripts/test-deps.mjs)', () => {
  it('does nothing when every program is there', () => {
    const plan = planTestDeps(TEST_PROGRAMS, () => true, { isRoot: true, hasAptGet: true });
    expect(plan).toMatchObject({ action: 'none', packages: [] });
    expect(describeTestDeps(plan)).toBe('test programs: all present');
  });

  it('as root with apt-get, installs exactly the missing packages', () => {
    const plan = planTestDeps(TEST_PROGRAMS, byPackage('chromium', 'python3-grpcio'), { isRoot: true, hasAptGet: true });
    expect(plan).toMatchObject({ action: 'install', packages: ['chromium', 'python3-grpcio'] });
    expect(describeTestDeps(plan)).toBe('test programs: installing chromium python3-grpcio (apt-get, as root)');
  });

  it('not root: one line with the exact command and the tests that will fail, each named once', () => {
    const plan = planTestDeps(TEST_PROGRAMS, byPackage('bind9-dnsutils', 'haproxy', 'python3-consul'), { isRoot: false, hasAptGet: true });
    expect(plan.action).toBe('advise');
    expect(describeTestDeps(plan)).toBe(
      'test programs missing (not root): run `sudo apt-get install -y bind9-dnsutils haproxy python3-consul`, or these tests will fail: test/e2e/dns.test.ts, test/e2e/consul.test.ts',
    );
  });

  it('without apt-get, names the Debian packages to find elsewhere', () => {
    const plan = planTestDeps(TEST_PROGRAMS, byPackage('prometheus'), { isRoot: true, hasAptGet: false });
    expect(describeTestDeps(plan)).toBe(
      'test programs missing (no apt-get here: install the same programs from your system): run `apt-get install -y prometheus`, or these tests will fail: test/e2e/prometheus.test.ts',
    );
  });

  it('covers every program the end-to-end tests drive', () => {
    expect(TEST_PROGRAMS.map((program) => program.debianPackage)).toEqual(['chromium', 'prometheus', 'bind9-dnsutils', 'haproxy', 'python3-consul', 'python3-grpcio']);
    for (const program of TEST_PROGRAMS) if (program.tests.startsWith('test/')) expect(existsSync(fileURLToPath(new URL(`../../../${program.tests}`, import.meta.url)))).toBe(true);
  });

  it('probes an executable by its file and a python module by importing it', () => {
    expect(isPresent({ debianPackage: 'x', file: script, tests: '' })).toBe(true);
    expect(isPresent({ debianPackage: 'x', file: '/nonexistent/bin/tool', tests: '' })).toBe(false);
    expect(isPresent({ debianPackage: 'x', pythonModule: 'no_such_module_for_registry_tests', tests: '' })).toBe(false);
    if (existsSync(PYTHON)) expect(isPresent({ debianPackage: 'x', pythonModule: 'json', tests: '' })).toBe(true);
  });

  it('--dry-run prints the plan for this machine, changes nothing and exits 0', () => {
    const run = spawnSync(process.execPath, [script, '--dry-run'], { encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(0);
    const plan = planTestDeps(TEST_PROGRAMS, isPresent, { isRoot: process.getuid?.() === 0, hasAptGet: spawnSync('sh', ['-c', 'command -v apt-get']).status === 0 });
    const expected = plan.action === 'install' ? `test programs: would install ${plan.packages.join(' ')} (apt-get, as root; --dry-run: nothing changed)` : describeTestDeps(plan);
    expect(run.stdout.trim()).toBe(expected);
  });
});
