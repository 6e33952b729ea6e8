import { describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/clock/clock.js';
import { RegistryClientError } from '../../../src/client/errors.js';
import { withBearerToken } from '../../../src/client/http.js';
import { numericOptions, resolveClientOptions, type RegistryClientOptions } from '../../../src/client/options.js';

describe('resolveClientOptions', () => {
  it('fills in every default', () => {
    const resolved = resolveClientOptions({ peers: ['http://127.0.0.1:8761'] });
    expect(resolved).toMatchObject({
      peers: ['http://127.0.0.1:8761'],
      namespace: 'default',
      clock: systemClock,
      http: undefined,
      requestTimeoutMs: 5_000,
      failoverBudgetMs: 10_000,
      backoffBaseMs: 100,
      backoffMaxMs: 5_000,
      staleAfterMs: 5_000,
      watchIdleTimeoutMs: 40_000,
      discoverTimeoutMs: 5_000,
      closeTimeoutMs: 2_000,
      connectionsPerPeer: 8,
    });
    for (const [name, bounds] of Object.entries(numericOptions)) expect(resolved[name as keyof typeof numericOptions]).toBe(bounds.default);
    // Seeded from the OS: two clients do not draw the same numbers.
    const other = resolveClientOptions({ peers: ['http://127.0.0.1:8761'] });
    expect([resolved.rng.next(), resolved.rng.next()]).not.toEqual([other.rng.next(), other.rng.next()]);
  });

  it('normalises peer URLs (trailing slashes) and keeps a path prefix', () => {
    expect(resolveClientOptions({ peers: ['http://a:1/', 'https://b/registry/'] }).peers).toEqual(['http://a:1', 'https://b/registry']);
  });

  const bad: [string, unknown, string][] = [
    ['no peers', { peers: [] }, 'peers'],
    ['peers not a list', { peers: 'http://a' }, 'peers'],
    ['a peer that is not a URL', { peers: ['127.0.0.1:8761'] }, 'peers[0]'],
    ['a peer that is not a string', { peers: ['http://a', 8761] }, 'peers[1]'],
    ['another scheme', { peers: ['ftp://a'] }, 'peers[0]'],
    ['a query', { peers: ['http://a/?x=1'] }, 'peers[0]'],
    ['credentials', { peers: ['http://u:p@a'] }, 'peers[0]'],
    ['the same peer twice', { peers: ['http://a', 'http://a/'] }, 'peers'],
    ['a bad namespace', { peers: ['http://a'], namespace: 'a b' }, 'namespace'],
    ['an empty namespace', { peers: ['http://a'], namespace: '' }, 'namespace'],
    ['a negative timeout', { peers: ['http://a'], requestTimeoutMs: -1 }, 'requestTimeoutMs'],
    ['a fractional timeout', { peers: ['http://a'], failoverBudgetMs: 1.5 }, 'failoverBudgetMs'],
    ['a timeout as a string', { peers: ['http://a'], staleAfterMs: '5s' }, 'staleAfterMs'],
    ['an idle timeout too short', { peers: ['http://a'], watchIdleTimeoutMs: 10 }, 'watchIdleTimeoutMs'],
    ['no connections', { peers: ['http://a'], connectionsPerPeer: 0 }, 'connectionsPerPeer'],
    ['a backoff ceiling below its base', { peers: ['http://a'], backoffBaseMs: 500, backoffMaxMs: 100 }, 'backoffMaxMs'],
  ];
  for (const [name, options, field] of bad) {
    it(`refuses ${name} with REG_CLIENT_ERR_INVALID_OPTIONS naming ${field}`, () => {
      let caught: unknown;
      try {
        resolveClientOptions(options as RegistryClientOptions);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(RegistryClientError);
      expect((caught as RegistryClientError).code).toBe('REG_CLIENT_ERR_INVALID_OPTIONS');
      expect((caught as Error).message.startsWith(`${field}:`), (caught as Error).message).toBe(true);
    });
  }
});

describe('token', () => {
  it('sends Authorization: Bearer on every request', async () => {
    const seen: (Record<string, string> | undefined)[] = [];
    const http = withBearerToken(
      {
        request: async (_peer, request) => {
          seen.push(request.headers);
          throw new Error('refused');
        },
        close: async () => {},
      },
      'tok-123',
    );
    await expect(http.request('http://127.0.0.1:1', { method: 'GET', path: '/v1/services', headers: { accept: 'text/event-stream' } })).rejects.toThrow();
    expect(seen).toEqual([{ accept: 'text/event-stream', authorization: 'Bearer tok-123' }]);
  });

  it.each(['', 'has space', 5])('refuses the token %j without repeating it', (token) => {
    let message = '';
    try {
      resolveClientOptions({ peers: ['http://127.0.0.1:1'], token: token as string });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/^token: /);
    if (typeof token === 'string' && token.length > 0) expect(message).not.toContain(token);
  });
});
