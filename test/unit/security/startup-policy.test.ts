import { describe, expect, it } from 'vitest';
import { decideStartup, isLoopback, type StartupFacts } from '../../../src/security/startup-policy.js';

describe('isLoopback', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['localhost', true],
    ['LOCALHOST', true],
    ['::1', true],
    ['[::1]', true],
    ['0:0:0:0:0:0:0:1', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['128.0.0.1', false],
    ['registry.internal', false],
    ['localhost.evil.example', false],
  ])('%s: %s', (host, expected) => {
    expect(isLoopback(host)).toBe(expected);
  });
});

describe('decideStartup', () => {
  const facts = (change: Partial<StartupFacts>): StartupFacts => ({ host: '0.0.0.0', clientAuth: true, peerAuth: true, tls: true, insecure: false, ...change });

  it.each([
    // host, client, peer, tls, insecure -> starts, warnings matching
    ['127.0.0.1', false, false, false, false, true, [/^dev mode/]],
    ['127.0.0.1', true, false, false, false, true, [/^partly open.*peer routes are open/]],
    ['127.0.0.1', false, true, false, false, true, [/^partly open.*client routes are open/]],
    ['127.0.0.1', true, true, false, false, true, []],
    ['0.0.0.0', true, true, true, false, true, []],
    ['0.0.0.0', true, true, false, false, true, [/^no TLS/]],
    ['0.0.0.0', false, false, true, true, true, [/^--insecure/]],
    ['10.0.0.5', true, false, true, true, true, [/^--insecure.*peer routes/]],
    ['::', true, true, false, true, true, [/^no TLS/]],
  ] as const)('%s client=%s peer=%s tls=%s insecure=%s: starts', (host, clientAuth, peerAuth, tls, insecure, _start, warnings) => {
    const decision = decideStartup(facts({ host, clientAuth, peerAuth, tls, insecure }));
    expect(decision.start).toBe(true);
    if (!decision.start) return;
    expect(decision.warnings).toHaveLength(warnings.length);
    warnings.forEach((pattern, i) => expect(decision.warnings[i]).toMatch(pattern));
  });

  it.each([
    ['0.0.0.0', false, false, /client routes are open.*and the peer routes are open/],
    ['0.0.0.0', true, false, /peer routes are open/],
    ['10.0.0.5', false, true, /client routes are open/],
    ['registry.internal', false, false, /--insecure/],
  ] as const)('refuses %s with client=%s peer=%s', (host, clientAuth, peerAuth, reason) => {
    const decision = decideStartup(facts({ host, clientAuth, peerAuth }));
    expect(decision.start).toBe(false);
    if (decision.start) return;
    expect(decision.reason).toMatch(/^refusing to listen on /);
    expect(decision.reason).toMatch(reason);
  });
});
