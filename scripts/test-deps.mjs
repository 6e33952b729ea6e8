#!/usr/bin/env node
// The Debian programs the end-to-end tests drive (never a downloaded binary): `npm test` runs
// this first, so that `npm ci && npm test` is the whole set-up on a fresh machine. As root with
// apt-get it installs each one that is missing; otherwise it prints one line naming the exact
// command and the tests that will fail without it, and the suite runs on.
//
//   node scripts/test-deps.mjs            check, and install what is missing (root + apt-get)
//   node scripts/test-deps.mjs --dry-run  say what it would do, change nothing
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Each program: the Debian package that brings it, how to tell it is there (an executable, or a
 * module /usr/bin/python3 imports), and the tests that need it.
 */
export const TEST_PROGRAMS = [
  { debianPackage: 'chromium', file: '/usr/bin/chromium', tests: 'test/e2e/dashboard.test.ts' },
  { debianPackage: 'prometheus', file: '/usr/bin/prometheus', tests: 'test/e2e/prometheus.test.ts' },
  { debianPackage: 'bind9-dnsutils', file: '/usr/bin/dig', tests: 'test/e2e/dns.test.ts' },
  { debianPackage: 'haproxy', file: '/usr/sbin/haproxy', tests: 'test/e2e/dns.test.ts' },
  { debianPackage: 'python3-consul', pythonModule: 'consul', tests: 'test/e2e/consul.test.ts' },
  { debianPackage: 'python3-grpcio', pythonModule: 'grpc', tests: 'the xDS tests with a gRPC C-core client (test/e2e/xds*.test.ts)' },
];

export const PYTHON = '/usr/bin/python3';

/**
 * What to do, given which programs are present and what this process may do: a pure decision.
 * `present(program)` says whether a program is installed. Returns the action ('none', 'install'
 * or 'advise'), the Debian packages missing, the tests that need them, and why it only advises.
 */
export function planTestDeps(programs, present, { isRoot, hasAptGet }) {
  const missing = programs.filter((program) => !present(program));
  const packages = [...new Set(missing.map((program) => program.debianPackage))];
  const tests = [...new Set(missing.map((program) => program.tests))];
  if (packages.length === 0) return { action: 'none', packages, tests, isRoot };
  if (isRoot && hasAptGet) return { action: 'install', packages, tests, isRoot };
  return { action: 'advise', packages, tests, isRoot, reason: hasAptGet ? 'not root' : 'no apt-get here: install the same programs from your system' };
}

/** The one line a plan prints. */
export function describeTestDeps(plan) {
  if (plan.action === 'none') return 'test programs: all present';
  if (plan.action === 'install') return `test programs: installing ${plan.packages.join(' ')} (apt-get, as root)`;
  const command = `${plan.isRoot ? '' : 'sudo '}apt-get install -y ${plan.packages.join(' ')}`;
  return `test programs missing (${plan.reason}): run \`${command}\`, or these tests will fail: ${plan.tests.join(', ')}`;
}

/** Probes the real machine: an executable file, or a module Debian's python3 imports. */
export function isPresent(program) {
  if (program.file) return existsSync(program.file);
  if (!existsSync(PYTHON)) return false;
  return spawnSync(PYTHON, ['-c', `import ${program.pythonModule}`], { stdio: 'ignore', timeout: 30_000 }).status === 0;
}

function hasAptGet() {
  return spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
}

function aptGet(args) {
  const result = spawnSync('apt-get', args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return result.status === 0;
}

function main() {
  const dryRun = process.argv.includes('--dry-run');
  const isRoot = process.getuid?.() === 0;
  const plan = planTestDeps(TEST_PROGRAMS, isPresent, { isRoot, hasAptGet: hasAptGet() });
  if (plan.action !== 'install') return console.log(describeTestDeps(plan));
  if (dryRun) return console.log(`test programs: would install ${plan.packages.join(' ')} (apt-get, as root; --dry-run: nothing changed)`);
  console.log(describeTestDeps(plan));
  const installed = aptGet(['update', '-qq']) && aptGet(['install', '-y', '-qq', ...plan.packages]);
  const after = planTestDeps(TEST_PROGRAMS, isPresent, { isRoot, hasAptGet: false });
  // The suite still runs: the tests that need a missing program say so themselves.
  if (!installed || after.action !== 'none') console.log(describeTestDeps({ ...after, reason: 'apt-get failed' }));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
