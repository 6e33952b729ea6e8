import { describe, expect, it } from 'vitest';
import { AccessPort, HttpCredentialReader, httpCredentials, unauthenticatedMessage, type AccessNeed, type PresentedCredentials } from '../../../src/adapters/access.js';
import { LimitsPort } from '../../../src/adapters/limits.js';
import { testConfig } from '../../support/node.js';
import { FakeClock } from '../../support/fake-clock.js';
import { basic, bearer, securedFile, TOKENS } from '../../support/security.js';

const config = testConfig(securedFile({ limits: { rateLimitPerSecond: 1, rateLimitBurst: 3, heldSharePerPrincipalRatio: 0.5 } }));
const portsOf = (clock = new FakeClock()) => {
  const limits = new LimitsPort(clock, config.limits);
  return { limits, access: new AccessPort(config.security.tokens, limits) };
};
const READ_A: AccessNeed = { scope: 'read', namespaces: ['team-a'] };
const WRITE_A: AccessNeed = { scope: 'write', namespaces: ['team-a'] };
const from = (extra: Omit<PresentedCredentials, 'address'> = {}): PresentedCredentials => ({ address: '10.0.0.1', ...extra });

describe('the access port', () => {
  it.each([
    ['no credentials', from(), READ_A, 401, 'no-credentials'],
    ['an unknown bearer token', from(bearer('nope')), READ_A, 401, 'unknown-credentials'],
    ['a read token asked to write', from(bearer(TOKENS.reader)), WRITE_A, 403, 'scope'],
    ["another namespace's token", from(bearer(TOKENS.otherTeam)), READ_A, 403, 'namespace'],
    ['basic where the protocol takes none', from(basic(TOKENS.reader)), READ_A, 401, 'unknown-credentials'],
  ] as const)('refuses %s', (_what, credentials, need, status, reason) => {
    const decision = portsOf().access.admit(credentials, need, ['bearer', 'x-consul-token']);
    expect(decision).toMatchObject({ allowed: false, status, reason });
    if (!decision.allowed) expect(decision.error.status).toBe(status);
  });

  it.each([
    ['a read token reading its namespace', from(bearer(TOKENS.reader)), READ_A, 'reader'],
    ['a write token reading (write implies read)', from(bearer(TOKENS.writer)), READ_A, 'writer'],
    ['a bare token (X-Consul-Token, ?token=) before the header', from({ token: TOKENS.writer, authorization: 'Bearer nope' }), WRITE_A, 'writer'],
    ['gRPC metadata authorization', from({ authorization: `Bearer ${TOKENS.reader}` }), READ_A, 'reader'],
  ] as const)('allows %s', (_what, credentials, need, name) => {
    const decision = portsOf().access.admit(credentials, need, ['bearer', 'x-consul-token']);
    expect(decision).toMatchObject({ allowed: true, principal: { name }, subject: { address: '10.0.0.1', tokenName: name } });
  });

  it('takes basic with the token as password where the protocol declares it', () => {
    expect(portsOf().access.admit(from(basic(TOKENS.reader)), READ_A, ['basic'])).toMatchObject({ allowed: true, principal: { name: 'reader' } });
  });

  it('lets anyone call an open operation, limited by address', () => {
    expect(portsOf().access.admit(from(), { scope: null, namespaces: [] }, ['bearer'])).toEqual({
      allowed: true,
      principal: undefined,
      subject: { address: '10.0.0.1', tokenName: undefined },
    });
  });

  it('is open in dev mode (no token configured), every principal anonymous and limited by address', () => {
    const limits = new LimitsPort(new FakeClock(), testConfig().limits);
    const decision = new AccessPort([], limits).admit(from(), WRITE_A, ['bearer']);
    expect(decision).toMatchObject({ allowed: true, principal: { name: 'anonymous' }, subject: { tokenName: undefined } });
  });

  it('words a 401 from the carriers the protocol declares', () => {
    expect(unauthenticatedMessage(false, ['x-consul-token', 'query-token'])).toBe('no credentials: send X-Consul-Token: <token>, or ?token=<token>');
    expect(unauthenticatedMessage(true, ['grpc-authorization'])).toBe('the credentials match no token: send gRPC metadata authorization: Bearer <token>');
    expect(unauthenticatedMessage(false, ['dns-source'])).toContain('takes no token');
  });

  it('counts every decision once against the peer-wide rate limit, before the scope, by token else address', () => {
    const { access } = portsOf();
    const read = () => access.admit(from(bearer(TOKENS.reader)), WRITE_A, ['bearer']);
    // Burst 3: three refusals for scope, then the 429.
    expect([read(), read(), read()].map((d) => !d.allowed && d.reason)).toEqual(['scope', 'scope', 'scope']);
    expect(read()).toMatchObject({ allowed: false, reason: 'rate', status: 429 });
    // Another token has its own bucket; so does an address without one.
    expect(access.admit(from(bearer(TOKENS.writer)), WRITE_A, ['bearer'])).toMatchObject({ allowed: true });
    expect(access.admit(from(), WRITE_A, ['bearer'])).toMatchObject({ allowed: false, reason: 'no-credentials' });
  });
});

describe('httpCredentials: what an HTTP request presents, as its protocol carries it', () => {
  const request = (headers: Record<string, string>, query: Record<string, unknown> = {}) => ({ ip: '10.0.0.1', headers, query });

  it.each([
    ['X-Consul-Token first', request({ 'x-consul-token': 'a', authorization: 'Bearer b' }, { token: 'c' }), ['x-consul-token', 'query-token', 'bearer'], { token: 'a', authorization: 'Bearer b' }],
    ['then ?token=', request({ authorization: 'Bearer b' }, { token: 'c' }), ['x-consul-token', 'query-token', 'bearer'], { token: 'c', authorization: 'Bearer b' }],
    ['a repeated ?token= is none', request({}, { token: ['c', 'd'] }), ['query-token'], { token: undefined, authorization: undefined }],
    ['nothing a protocol does not carry', request({ 'x-consul-token': 'a', authorization: 'Bearer b' }, { token: 'c' }), ['dns-source'], { token: undefined, authorization: undefined }],
    ["Nacos's ?accessToken= before its password", request({}, { accessToken: 'n', password: 'p' }), ['nacos-access-token', 'bearer'], { token: 'n', authorization: undefined }],
    ["then Nacos's password", request({ authorization: 'Bearer b' }, { accessToken: '', password: 'p' }), ['nacos-access-token', 'bearer'], { token: 'p', authorization: 'Bearer b' }],
    ['no query at all', { ip: '10.0.0.1', headers: {}, query: undefined }, ['query-token', 'nacos-access-token'], { token: undefined, authorization: undefined }],
  ] as const)('%s', (_what, facts, carriers, expected) => {
    expect(httpCredentials(facts, carriers)).toEqual({ address: '10.0.0.1', ...expected });
  });

  it('answers one shared, frozen object per address for the requests that present no credential (no allocation), a new one for each that does', () => {
    const reader = new HttpCredentialReader(['x-consul-token', 'query-token', 'bearer']);
    const first = reader.of(request({}));
    expect(reader.of(request({ 'x-consul-token': '' }, { token: '' }))).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(reader.of({ ip: '10.0.0.2', headers: {}, query: {} })).toEqual({ address: '10.0.0.2', token: undefined, authorization: undefined });
    expect(reader.of({ ip: '10.0.0.2', headers: {}, query: {} })).not.toBe(first);
    const presented = reader.of(request({ authorization: 'Bearer b' }));
    expect(presented).toEqual({ address: '10.0.0.1', token: undefined, authorization: 'Bearer b' });
    expect(reader.of(request({ authorization: 'Bearer b' }))).not.toBe(presented);
  });

  it('keeps a bounded number of addresses, and still answers each right past the bound', () => {
    const reader = new HttpCredentialReader(['bearer']);
    for (let i = 0; i < 5_000; i++) {
      const ip = `10.${(i >> 8) & 255}.${i & 255}.1`;
      expect(reader.of({ ip, headers: {}, query: {} }).address).toBe(ip);
    }
    expect((reader as unknown as { anonymous: Map<string, unknown> }).anonymous.size).toBeLessThanOrEqual(4_096);
  });
});

describe('the limits port', () => {
  it('hands out one pool per name, with a share per principal from limits.heldSharePerPrincipalRatio', () => {
    const { limits } = portsOf();
    const pool = limits.pool('xds streams', 4, 'xds.streamsMax');
    expect(limits.pool('xds streams', 4, 'xds.streamsMax')).toBe(pool);
    expect([pool.peerMax, pool.principalMax]).toEqual([4, 2]);
    expect(() => limits.pool('xds streams', 5, 'xds.streamsMax')).toThrow(/made with 4/);
    expect([...limits.heldPools.keys()]).toEqual(['xds streams']);
  });

  it('one principal holding its share leaves room for another', () => {
    const { limits } = portsOf();
    const pool = limits.pool('consul blocking queries', 4, 'consul.blockingQueriesMax');
    const greedy = { address: '10.0.0.1', tokenName: 'reader' };
    const held = [limits.hold(pool, greedy), limits.hold(pool, greedy)];
    expect(held.map((slot) => slot.held)).toEqual([true, true]);
    const refused = limits.hold(pool, { address: '10.0.0.9', tokenName: 'reader' });
    expect(refused).toMatchObject({ held: false, cap: 'principal' });
    expect(!refused.held && refused.message).toMatch(/token reader already holds 2 consul blocking queries.*limits\.heldSharePerPrincipalRatio/);
    // The other principals still get the rest of the pool.
    expect(limits.hold(pool, { address: '10.0.0.1', tokenName: 'ops' }).held).toBe(true);
    expect(limits.hold(pool, { address: '10.0.0.2' }).held).toBe(true);
    expect(limits.hold(pool, { address: '10.0.0.3' })).toMatchObject({ held: false, cap: 'peer' });
    if (held[0]!.held) held[0]!.release();
    expect(limits.hold(pool, { address: '10.0.0.3' }).held).toBe(true);
  });

  it('holds a loopback caller without a token to the peer\'s cap only (a local agent or load test), a token on loopback to its share', () => {
    const { limits } = portsOf();
    const pool = limits.pool('watch streams', 4, 'cluster.watchMaxWatchers');
    expect([1, 2, 3].map(() => limits.hold(pool, { address: '127.0.0.1' }).held)).toEqual([true, true, true]);
    expect(limits.hold(pool, { address: '::1', tokenName: 'reader' }).held).toBe(true);
    expect(limits.hold(pool, { address: '::1' })).toMatchObject({ held: false, cap: 'peer' });
    const other = limits.pool('long polls', 4, 'cluster.watchMaxWatchers');
    limits.hold(other, { address: '::1', tokenName: 'reader' });
    limits.hold(other, { address: '::1', tokenName: 'reader' });
    expect(limits.hold(other, { address: '::1', tokenName: 'reader' })).toMatchObject({ held: false, cap: 'principal' });
  });

  it('is one rate limit for every protocol: what one adapter counts, another sees', () => {
    const { limits, access } = portsOf();
    for (let i = 0; i < 3; i++) expect(limits.rate({ address: '10.0.0.1', tokenName: 'reader' })).toBeUndefined();
    expect(access.admit(from(bearer(TOKENS.reader)), READ_A, ['bearer'])).toMatchObject({ allowed: false, reason: 'rate' });
    expect(limits.rates.check('10.0.0.1', 'reader')?.code).toBe('REG_ERR_RATE_LIMITED');
  });
});
