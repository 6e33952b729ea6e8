import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../../src/config/security.js';
import {
  challengeOf,
  ClientAuth,
  clientVerdict,
  isNamespaceBound,
  namespaceRefusal,
  namespacesNamed,
  rateNameOf,
  type ClientAccessClass,
  type ClientFacts,
} from '../../../../src/http/access/client-auth.js';
import type { AccessClass } from '../../../../src/http/access-policy.js';
import { ANONYMOUS, type Principal } from '../../../../src/security/tokens.js';

const principal = (name: string, scopes: ('read' | 'write' | 'admin')[], namespaces: string[] | '*' = '*'): Principal => ({
  name,
  scopes: new Set(scopes),
  namespaces: namespaces === '*' ? '*' : new Set(namespaces),
});
const reader = principal('reader', ['read'], ['team-a']);
const writer = principal('writer', ['write'], ['team-a']);
const admin = principal('admin', ['admin']);

describe('clientVerdict', () => {
  const facts = (access: ClientAccessClass, who: Principal | undefined, extra: Partial<ClientFacts> = {}): ClientFacts => ({
    access,
    tokensEnabled: true,
    principal: who,
    credentialsSent: who !== undefined,
    ...extra,
  });

  it.each<[string, ClientFacts]>([
    ['a public route, without credentials', facts('public', undefined)],
    ['a public route, with bad credentials', facts('public', undefined, { credentialsSent: true })],
    ['dev mode (no token configured), anonymous', facts('admin', ANONYMOUS, { tokensEnabled: false })],
    ['dev mode, whatever the class', facts('eureka-write', ANONYMOUS, { tokensEnabled: false })],
  ])('lets %s through, unbound by a principal', (_name, input) => {
    expect(clientVerdict(input)).toEqual({ allowed: true });
  });

  it.each<[ClientAccessClass, Principal]>([
    ['read', reader],
    ['read', writer],
    ['eureka-read', writer],
    ['write', writer],
    ['eureka-write', writer],
    ['admin', admin],
  ])('lets %s through for %s, bound by it', (access, who) => {
    expect(clientVerdict(facts(access, who))).toEqual({ allowed: true, principal: who });
  });

  it.each<[ClientAccessClass, boolean, string, string]>([
    ['read', false, 'no credentials: send Authorization: Bearer <token>', 'Bearer realm="registry"'],
    ['admin', true, 'the credentials match no token: send Authorization: Bearer <token>', 'Bearer realm="registry"'],
    [
      'eureka-read',
      false,
      'no credentials: send Authorization: Bearer <token> (or HTTP basic with the token as password)',
      'Basic realm="registry", charset="UTF-8"',
    ],
    [
      'eureka-write',
      true,
      'the credentials match no token: send Authorization: Bearer <token> (or HTTP basic with the token as password)',
      'Basic realm="registry", charset="UTF-8"',
    ],
  ])('answers %s without a principal (credentials sent: %s) 401 with a challenge', (access, credentialsSent, message, challenge) => {
    const verdict = clientVerdict(facts(access, undefined, { credentialsSent }));
    expect(verdict).toMatchObject({ allowed: false, challenge, error: { code: 'REG_ERR_UNAUTHORIZED', status: 401, message } });
  });

  it.each<[ClientAccessClass, Principal, string]>([
    ['write', reader, 'token reader does not have the write scope'],
    ['eureka-write', reader, 'token reader does not have the write scope'],
    ['read', admin, 'token admin does not have the read scope'],
    ['admin', writer, 'token writer does not have the admin scope'],
  ])('answers %s for a token without the scope 403, with no challenge', (access, who, message) => {
    const verdict = clientVerdict(facts(access, who));
    expect(verdict).toMatchObject({ allowed: false, error: { code: 'REG_ERR_FORBIDDEN', status: 403, message } });
    expect(verdict).not.toHaveProperty('challenge');
  });
});

describe('namespaces', () => {
  it.each<[string, ClientAccessClass, unknown, unknown, string[]]>([
    ['none named: the default', 'read', {}, undefined, ['default']],
    ['no query at all', 'read', undefined, undefined, ['default']],
    ['one in the query', 'read', { namespace: 'team-a' }, undefined, ['team-a']],
    ['repeated in the query', 'read', { namespace: ['team-a', 'team-b'] }, undefined, ['team-a', 'team-b']],
    ['query and body', 'write', { namespace: 'team-a' }, { namespace: 'team-b' }, ['team-a', 'team-b']],
    ['only the body', 'write', {}, { namespace: 'team-b', service: 'x' }, ['team-b']],
    ['a body that is an array', 'write', {}, [{ namespace: 'team-b' }], ['default']],
    ['values that are not strings', 'write', { namespace: [1] }, { namespace: 7 }, ['default']],
    ['a Eureka route: always the Eureka namespace', 'eureka-write', { namespace: 'team-b' }, { namespace: 'team-b' }, ['eureka-ns']],
  ])('%s', (_name, access, query, body, expected) => {
    expect(namespacesNamed(access, query, body, 'eureka-ns')).toEqual(expected);
  });

  it.each<[Principal, string[], string | undefined]>([
    [reader, ['team-a'], undefined],
    [reader, ['team-a', 'team-a'], undefined],
    [admin, ['anything', 'else'], undefined],
    [reader, ['team-b'], 'token reader may not use namespace team-b'],
    [reader, ['team-a', 'team-b', 'team-c'], 'token reader may not use namespace team-b'],
    [reader, ['x'.repeat(500)], `token reader may not use namespace ${'x'.repeat(128)}`],
  ])('refuses what the token may not use (%#)', (who, namespaces, message) => {
    const refusal = namespaceRefusal(who, namespaces);
    if (message === undefined) expect(refusal).toBeUndefined();
    else expect(refusal).toMatchObject({ code: 'REG_ERR_FORBIDDEN', status: 403, message });
  });

  it.each<[AccessClass | undefined, boolean]>([
    ['read', true],
    ['write', true],
    ['eureka-read', true],
    ['eureka-write', true],
    ['admin', false],
    ['public', false],
    ['peer', false],
    [undefined, false],
  ])('%s is bound by the token namespaces: %s', (access, bound) => {
    expect(isNamespaceBound(access)).toBe(bound);
  });
});

describe('ClientAuth', () => {
  const auth = new ClientAuth([{ name: 'team-a', sha256: sha256Hex('team-a-token-0123456'), namespaces: ['team-a'], scopes: ['write'] }]);
  const basicOf = (password: string) => `Basic ${Buffer.from(`eureka:${password}`).toString('base64')}`;

  it.each<[string | undefined, ClientAccessClass, string | undefined]>([
    ['Bearer team-a-token-0123456', 'read', 'team-a'],
    ['Bearer team-a-token-0123456', 'eureka-read', 'team-a'],
    [basicOf('team-a-token-0123456'), 'eureka-write', 'team-a'],
    [basicOf('team-a-token-0123456'), 'write', undefined],
    ['Bearer wrong-token-0123456789', 'read', undefined],
    [undefined, 'read', undefined],
    ['team-a-token-0123456', 'read', undefined],
  ])('%s on a %s route: %s', (authorization, access, name) => {
    expect(auth.enabled).toBe(true);
    expect(auth.principalOf(authorization, access)?.name).toBe(name);
  });

  it('is anonymous in dev mode (no token configured), whatever is sent', () => {
    const open = new ClientAuth([]);
    expect(open.enabled).toBe(false);
    expect(open.principalOf(undefined, 'admin')).toBe(ANONYMOUS);
    expect(open.principalOf('Bearer anything-at-all-000', 'write')).toBe(ANONYMOUS);
  });

  it('rate limits a real token by its name, anonymous and nobody by address', () => {
    expect(rateNameOf(reader)).toBe('reader');
    expect(rateNameOf(ANONYMOUS)).toBeUndefined();
    expect(rateNameOf(undefined)).toBeUndefined();
  });

  it('challenges basic only where basic is accepted', () => {
    expect(challengeOf('eureka-read')).toBe('Basic realm="registry", charset="UTF-8"');
    expect(challengeOf('read')).toBe('Bearer realm="registry"');
  });
});
