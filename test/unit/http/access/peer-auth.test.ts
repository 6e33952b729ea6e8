import { describe, expect, it } from 'vitest';
import {
  hasVerifiedCertificate,
  PEER_WARN_INTERVAL_MS,
  PeerAuth,
  PeerRefusalLog,
  peerRefusedError,
  refusalKindOf,
  replayCacheFullError,
  warnsNow,
  type PeerAuthSettings,
} from '../../../../src/http/access/peer-auth.js';
import { PEER_HEADERS, sha256Hex, type PeerClaim } from '../../../../src/security/peer-signature.js';
import { FakeClock } from '../../../support/fake-clock.js';
import { CLUSTER_SECRET, peerHeaders, recordingLogger } from '../../../support/security.js';

const SIGNED: PeerAuthSettings = { clusterSecret: CLUSTER_SECRET, peerMtls: false, peerReplayWindowMs: 30_000, peerNonceMax: 2 };
const PATH = '/v1/peer/replicate';
const BODY = '{"from":"peer-x"}';

describe('which peer routes need authentication', () => {
  it.each<[string | null, boolean, boolean]>([
    [null, false, false],
    [CLUSTER_SECRET, false, true],
    [null, true, true],
    [CLUSTER_SECRET, true, true],
  ])('secret %s, mTLS %s: enabled %s', (clusterSecret, peerMtls, enabled) => {
    expect(new PeerAuth(new FakeClock(), { ...SIGNED, clusterSecret, peerMtls }).enabled).toBe(enabled);
  });

  it.each<[boolean, { encrypted?: boolean; authorized?: boolean }, boolean]>([
    [true, { encrypted: true, authorized: true }, true],
    [true, { encrypted: true, authorized: false }, false],
    [true, { encrypted: true }, false],
    [true, {}, false],
    [false, { encrypted: true, authorized: true }, false],
  ])('mTLS %s, socket %o: a certificate is enough: %s', (peerMtls, socket, accepted) => {
    expect(new PeerAuth(new FakeClock(), { ...SIGNED, peerMtls }).acceptsCertificate(socket)).toBe(accepted);
    expect(hasVerifiedCertificate(socket)).toBe(socket.encrypted === true && socket.authorized === true);
  });
});

describe('admitSigned: the headers, before the body is read', () => {
  const clock = new FakeClock();
  const nowMs = clock.nowMs();
  const signed = (overrides: Record<string, string | undefined> = {}, options: { nowMs?: number } = {}) => ({
    ...peerHeaders(BODY, { path: PATH, nowMs: options.nowMs ?? nowMs, nonce: 'nonce-0000000000000001' }),
    ...overrides,
  });

  it.each<[string, Record<string, string | undefined>, string]>([
    ['no signature at all', {}, 'the request is not signed (peer routes need the cluster secret or a verified peer certificate)'],
    ['a malformed peer id', signed({ [PEER_HEADERS.peer]: '-bad id' }), 'x-registry-peer: is not a peer id'],
    ['a timestamp that is not a number', signed({ [PEER_HEADERS.timestamp]: 'soon' }), 'x-registry-timestamp: must be epoch milliseconds'],
    ['a short nonce', signed({ [PEER_HEADERS.nonce]: 'short' }), 'x-registry-nonce: must be 16-64 base64url characters'],
    ['a signature that is not hex', signed({ [PEER_HEADERS.signature]: 'zz' }), 'x-registry-signature: must be 64 hexadecimal digits'],
    [
      'a timestamp 31 s behind',
      signed({}, { nowMs: nowMs - 31_000 }),
      "timestamp: -31000 ms from this peer's clock, outside the replay window of 30000 ms (check the clocks)",
    ],
    [
      'a timestamp 31 s ahead',
      signed({}, { nowMs: nowMs + 31_000 }),
      "timestamp: 31000 ms from this peer's clock, outside the replay window of 30000 ms (check the clocks)",
    ],
  ])('refuses %s', (_name, headers, why) => {
    expect(new PeerAuth(clock, SIGNED).admitSigned(headers)).toBe(why);
  });

  it.each([0, -30_000, 30_000])('admits well-formed headers %d ms off', (offsetMs) => {
    const claim = new PeerAuth(clock, SIGNED).admitSigned(signed({}, { nowMs: nowMs + offsetMs }));
    expect(claim).toMatchObject({ peerId: 'peer-x', timestampMs: nowMs + offsetMs, nonce: 'nonce-0000000000000001' });
  });

  it('refuses every signed call without a cluster secret (mTLS only)', () => {
    expect(new PeerAuth(clock, { ...SIGNED, clusterSecret: null, peerMtls: true }).admitSigned(signed())).toBe(
      'peer routes need a peer certificate signed by the cluster CA',
    );
  });

  it('refuses the headers of a nonce already taken, before any body is read', () => {
    const auth = new PeerAuth(clock, SIGNED);
    const claim = auth.admitSigned(signed()) as PeerClaim;
    expect(auth.verify(claim, { method: 'POST', path: PATH, bodySha256: sha256Hex(BODY) })).toBe('verified');
    expect(auth.admitSigned(signed())).toBe('replayed: this nonce was already used');
  });
});

describe('verify: the signature over the body, and the nonce', () => {
  const call = { method: 'POST', path: PATH, bodySha256: sha256Hex(BODY) };
  const claimOf = (auth: PeerAuth, nonce: string, options: { secret?: string; nowMs: number }): PeerClaim =>
    auth.admitSigned(peerHeaders(BODY, { path: PATH, nonce, ...options })) as PeerClaim;

  it.each<[string, Partial<typeof call>, string]>([
    ['another body', { bodySha256: sha256Hex('{"from":"peer-y"}') }, 'bad signature (wrong cluster secret, or a tampered request)'],
    ['another path', { path: '/v1/peer/ping' }, 'bad signature (wrong cluster secret, or a tampered request)'],
    ['another method', { method: 'PUT' }, 'bad signature (wrong cluster secret, or a tampered request)'],
  ])('refuses a call signed for %s', (_name, changed, why) => {
    const clock = new FakeClock();
    const auth = new PeerAuth(clock, SIGNED);
    expect(auth.verify(claimOf(auth, 'nonce-0000000000000001', { nowMs: clock.nowMs() }), { ...call, ...changed })).toEqual({ refused: why });
  });

  it('refuses a call signed with another secret, and keeps its nonce usable', () => {
    const clock = new FakeClock();
    const auth = new PeerAuth(clock, SIGNED);
    const forged = claimOf(auth, 'nonce-0000000000000001', { nowMs: clock.nowMs(), secret: 'another-secret-that-is-long-enough-000' });
    expect(auth.verify(forged, call)).toEqual({ refused: 'bad signature (wrong cluster secret, or a tampered request)' });
    expect(auth.verify(claimOf(auth, 'nonce-0000000000000001', { nowMs: clock.nowMs() }), call)).toBe('verified');
  });

  it('takes each nonce once, and answers full rather than forget one still in its window', async () => {
    const clock = new FakeClock();
    const auth = new PeerAuth(clock, SIGNED);
    const claims = ['nonce-000000000000000a', 'nonce-000000000000000b', 'nonce-000000000000000c'].map((nonce) => claimOf(auth, nonce, { nowMs: clock.nowMs() }));
    expect(auth.verify(claims[0]!, call)).toBe('verified');
    // Two copies of one call admitted in flight: the second is refused when verified.
    expect(auth.verify(claims[0]!, call)).toEqual({ refused: 'replayed: this nonce was already used' });
    expect(auth.verify(claims[1]!, call)).toBe('verified');
    expect(auth.verify(claims[2]!, call)).toBe('full');
    await clock.advance(60_000);
    expect(auth.verify(claimOf(auth, 'nonce-000000000000000c', { nowMs: clock.nowMs() }), call)).toBe('verified');
  });

  it('has nothing to verify without a cluster secret', () => {
    const clock = new FakeClock();
    const claim = claimOf(new PeerAuth(clock, SIGNED), 'nonce-0000000000000001', { nowMs: clock.nowMs() });
    expect(new PeerAuth(clock, { ...SIGNED, clusterSecret: null, peerMtls: true }).verify(claim, call)).toEqual({ refused: 'no signature to verify' });
  });
});

describe('answers and the refusal log', () => {
  it('answers 401 for a refusal and 429 for a full replay cache', () => {
    expect(peerRefusedError('bad signature')).toMatchObject({ code: 'REG_ERR_UNAUTHORIZED', status: 401, message: 'peer authentication failed: bad signature' });
    expect(replayCacheFullError()).toMatchObject({ code: 'REG_ERR_RATE_LIMITED', status: 429, retryAfterSeconds: 1 });
  });

  it.each([
    ['timestamp: -31000 ms from this peer', 'timestamp'],
    ['x-registry-nonce: must be 16-64 base64url characters', 'x-registry-nonce'],
    ['bad signature (wrong cluster secret, or a tampered request)', 'bad signature (wrong cluster secret, or a tampered request)'],
  ])('the kind of %s is %s', (why, kind) => {
    expect(refusalKindOf(why)).toBe(kind);
  });

  it.each<[number | undefined, number, boolean]>([
    [undefined, 0, true],
    [1_000, 1_000, false],
    [1_000, 1_000 + PEER_WARN_INTERVAL_MS - 1, false],
    [1_000, 1_000 + PEER_WARN_INTERVAL_MS, true],
  ])('last warned at %s, now %d: warn %s', (lastWarnMs, nowMs, warn) => {
    expect(warnsNow(lastWarnMs, nowMs, PEER_WARN_INTERVAL_MS)).toBe(warn);
  });

  it('logs the first refusal of each kind per interval at warn, the others at debug', async () => {
    const clock = new FakeClock();
    const logger = recordingLogger();
    const log = new PeerRefusalLog(clock, logger);
    const refuse = (why: string) => log.record({ address: '10.0.0.9', peer: 'peer-x', why });
    refuse('bad signature');
    refuse('bad signature');
    refuse('timestamp: 40000 ms');
    refuse('timestamp: 41000 ms');
    await clock.advance(PEER_WARN_INTERVAL_MS);
    refuse('bad signature');
    expect(logger.lines.map((line) => line.level)).toEqual(['warn', 'debug', 'warn', 'debug', 'warn']);
    expect(logger.lines[0]).toEqual({ level: 'warn', msg: 'peer request refused', fields: { address: '10.0.0.9', peer: 'peer-x', why: 'bad signature' } });
  });
});
