import { describe, expect, it } from 'vitest';
import {
  canonicalRequest,
  EMPTY_BODY_SHA256,
  PEER_HEADERS,
  readClaim,
  sha256Hex,
  signature,
  signedHeaders,
  verifySignature,
  type SignedParts,
} from '../../../src/security/peer-signature.js';

const SECRET = 'a-cluster-secret-of-forty-characters-00';
const parts: SignedParts = {
  method: 'post',
  path: '/v1/peer/replicate',
  timestampMs: 1_767_225_600_000,
  nonce: 'AAAAAAAAAAAAAAAAAAAAAA',
  peerId: 'peer-a',
  bodySha256: sha256Hex('{"from":"peer-a","records":[]}'),
};

describe('peer signatures', () => {
  it('cover method, path, time, nonce, peer and body digest, one per line', () => {
    expect(canonicalRequest(parts)).toBe(
      `POST\n/v1/peer/replicate\n1767225600000\nAAAAAAAAAAAAAAAAAAAAAA\npeer-a\n${parts.bodySha256}`,
    );
    expect(EMPTY_BODY_SHA256).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('verify with the same secret and parts, and fail when any of them changes', () => {
    const signed = signature(SECRET, parts);
    expect(signed).toMatch(/^[0-9a-f]{64}$/);
    expect(verifySignature(SECRET, parts, signed)).toBe(true);
    const changes: Partial<SignedParts>[] = [
      { method: 'PUT' },
      { path: '/v1/peer/snapshot' },
      { timestampMs: parts.timestampMs + 1 },
      { nonce: 'BAAAAAAAAAAAAAAAAAAAAA' },
      { peerId: 'peer-b' },
      { bodySha256: EMPTY_BODY_SHA256 },
    ];
    for (const change of changes) expect(verifySignature(SECRET, { ...parts, ...change }, signed), JSON.stringify(change)).toBe(false);
    expect(verifySignature(`${SECRET}x`, parts, signed)).toBe(false);
    expect(verifySignature(SECRET, parts, signed.slice(0, 62))).toBe(false);
  });

  it('build headers that read back as the claim they sign', () => {
    const headers = signedHeaders(SECRET, { method: 'POST', path: parts.path, peerId: 'peer-a', body: '{}', nowMs: 5, nonce: parts.nonce });
    const claim = readClaim(headers);
    expect(claim).toEqual({ peerId: 'peer-a', timestampMs: 5, nonce: parts.nonce, signature: headers[PEER_HEADERS.signature] });
    expect(signedHeaders(SECRET, { method: 'POST', path: '/', peerId: 'p', body: '', nowMs: 0 })[PEER_HEADERS.nonce]).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it.each([
    [{}, /not signed/],
    [{ [PEER_HEADERS.timestamp]: '-1' }, /timestamp/],
    [{ [PEER_HEADERS.timestamp]: '1e12' }, /timestamp/],
    [{ [PEER_HEADERS.nonce]: 'has spaces in it, no' }, /nonce/],
    [{ [PEER_HEADERS.signature]: 'ABCDEF'.repeat(11).slice(0, 64) }, /signature/],
    [{ [PEER_HEADERS.peer]: '' }, /peer/],
    [{ [PEER_HEADERS.peer]: ['a', 'b'] }, /not signed/],
  ])('refuses headers %j', (change, message) => {
    const good = signedHeaders(SECRET, { method: 'POST', path: '/', peerId: 'p', body: '', nowMs: 1 });
    const headers = Object.keys(change).length === 0 ? {} : { ...good, ...change };
    expect(readClaim(headers)).toMatch(message);
  });
});
