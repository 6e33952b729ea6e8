import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/config/security.js';
import { ANONYMOUS, hasNamespace, hasScope, presentedToken, TokenTable, type Principal } from '../../../src/security/tokens.js';

const table = new TokenTable([
  { name: 'ops', sha256: sha256Hex('ops-token-0123456789'), namespaces: '*', scopes: ['admin'] },
  { name: 'team-a', sha256: sha256Hex('team-a-token-0123456'), namespaces: ['team-a', 'shared'], scopes: ['write'] },
]);

describe('TokenTable', () => {
  it('finds the principal of a configured token, and nothing for any other', () => {
    expect(table.enabled).toBe(true);
    expect(table.authenticate('ops-token-0123456789')?.name).toBe('ops');
    expect(table.authenticate('team-a-token-0123456')?.name).toBe('team-a');
    for (const wrong of ['', 'ops-token-012345678', 'ops-token-0123456789 ', 'OPS-TOKEN-0123456789', sha256Hex('ops-token-0123456789'), 'x'.repeat(5_000)]) {
      expect(table.authenticate(wrong)).toBeUndefined();
    }
    expect(new TokenTable([]).enabled).toBe(false);
  });
});

describe('scopes and namespaces', () => {
  const principal = (scopes: Principal['scopes'] extends ReadonlySet<infer S> ? S[] : never, namespaces: string[] | '*' = '*'): Principal => ({
    name: 'p',
    scopes: new Set(scopes),
    namespaces: namespaces === '*' ? '*' : new Set(namespaces),
  });

  it.each([
    [['read'], 'read', true],
    [['read'], 'write', false],
    [['read'], 'admin', false],
    [['write'], 'read', true],
    [['write'], 'write', true],
    [['write'], 'admin', false],
    [['admin'], 'read', false],
    [['admin'], 'write', false],
    [['admin'], 'admin', true],
    [['read', 'admin'], 'write', false],
  ] as const)('a token with %j has %s: %s', (scopes, wanted, expected) => {
    expect(hasScope(principal([...scopes]), wanted)).toBe(expected);
  });

  it('limits a token to its namespaces; * allows all; anonymous (dev mode) may do anything', () => {
    expect(hasNamespace(principal(['read'], ['team-a']), 'team-a')).toBe(true);
    expect(hasNamespace(principal(['read'], ['team-a']), 'team-b')).toBe(false);
    expect(hasNamespace(principal(['read']), 'anything')).toBe(true);
    expect(hasScope(ANONYMOUS, 'admin') && hasNamespace(ANONYMOUS, 'x')).toBe(true);
  });
});

describe('presentedToken', () => {
  const basicOf = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;
  it.each([
    [undefined, false, undefined],
    ['Bearer abc', false, 'abc'],
    ['bearer   abc  ', false, 'abc'],
    ['Bearer ', false, undefined],
    ['Bearerabc', false, undefined],
    ['Token abc', false, undefined],
    [basicOf('user:secret-token'), false, undefined],
    [basicOf('user:secret-token'), true, 'secret-token'],
    [basicOf(':secret:with:colons'), true, 'secret:with:colons'],
    [basicOf('no-colon'), true, undefined],
    [basicOf('user:'), true, undefined],
    ['Basic !!!not-base64', true, undefined],
  ])('%s (basic allowed: %s) gives %s', (header, allowBasic, expected) => {
    expect(presentedToken(header, allowBasic)).toBe(expected);
  });
});
