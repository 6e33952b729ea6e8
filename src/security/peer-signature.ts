import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Peer signing: every call between peers carries an HMAC-SHA256, keyed with the cluster
 * secret, over what the call does and when:
 *
 *     METHOD \n PATH \n TIMESTAMP_MS \n NONCE \n PEER_ID \n hex(SHA-256(body bytes as sent))
 *
 * The body is hashed as it travels (gzip-compressed or not), so the receiver verifies the
 * bytes it received before inflating or parsing anything. The timestamp bounds how long a
 * captured call stays usable; the nonce makes it usable once (see replay-guard.ts).
 */

export const PEER_HEADERS = {
  peer: 'x-registry-peer',
  timestamp: 'x-registry-timestamp',
  nonce: 'x-registry-nonce',
  signature: 'x-registry-signature',
} as const;

export interface SignedParts {
  method: string;
  /** The request target as sent: path and query. */
  path: string;
  timestampMs: number;
  nonce: string;
  peerId: string;
  /** Hex SHA-256 of the body bytes as sent. */
  bodySha256: string;
}

/** What a signed request's headers claim, once their shape is checked. */
export interface PeerClaim {
  peerId: string;
  timestampMs: number;
  nonce: string;
  signature: string;
}

const NONCE = /^[A-Za-z0-9_-]{16,64}$/;
const SIGNATURE = /^[0-9a-f]{64}$/;
const PEER_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
const TIMESTAMP = /^\d{1,16}$/;

export const EMPTY_BODY_SHA256 = sha256Hex(Buffer.alloc(0));

export function sha256Hex(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The string the HMAC covers. */
export function canonicalRequest(parts: SignedParts): string {
  return [parts.method.toUpperCase(), parts.path, String(parts.timestampMs), parts.nonce, parts.peerId, parts.bodySha256].join('\n');
}

/** Hex HMAC-SHA256 of the canonical request. */
export function signature(secret: string, parts: SignedParts): string {
  return createHmac('sha256', secret).update(canonicalRequest(parts)).digest('hex');
}

/** True when `presented` is the signature of `parts` (compared in constant time). */
export function verifySignature(secret: string, parts: SignedParts, presented: string): boolean {
  const expected = Buffer.from(signature(secret, parts), 'hex');
  const given = Buffer.from(presented, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A fresh random nonce (128 bits, base64url). */
export function newNonce(): string {
  return randomBytes(16).toString('base64url');
}

/** The headers that sign one call (the transport adds them to every peer call). */
export function signedHeaders(
  secret: string,
  call: { method: string; path: string; peerId: string; body: Buffer | string; nowMs: number; nonce?: string },
): Record<string, string> {
  const parts: SignedParts = {
    method: call.method,
    path: call.path,
    timestampMs: call.nowMs,
    nonce: call.nonce ?? newNonce(),
    peerId: call.peerId,
    bodySha256: sha256Hex(call.body),
  };
  return {
    [PEER_HEADERS.peer]: parts.peerId,
    [PEER_HEADERS.timestamp]: String(parts.timestampMs),
    [PEER_HEADERS.nonce]: parts.nonce,
    [PEER_HEADERS.signature]: signature(secret, parts),
  };
}

/** Reads the signing headers; a string naming what is missing or malformed when they do not parse. */
export function readClaim(headers: Record<string, string | string[] | undefined>): PeerClaim | string {
  const one = (name: string): string | undefined => {
    const value = headers[name];
    return typeof value === 'string' ? value : undefined;
  };
  const peerId = one(PEER_HEADERS.peer);
  const timestamp = one(PEER_HEADERS.timestamp);
  const nonce = one(PEER_HEADERS.nonce);
  const signed = one(PEER_HEADERS.signature);
  if (peerId === undefined || timestamp === undefined || nonce === undefined || signed === undefined) {
    return 'the request is not signed (peer routes need the cluster secret or a verified peer certificate)';
  }
  if (!PEER_ID.test(peerId)) return `${PEER_HEADERS.peer}: is not a peer id`;
  if (!TIMESTAMP.test(timestamp)) return `${PEER_HEADERS.timestamp}: must be epoch milliseconds`;
  if (!NONCE.test(nonce)) return `${PEER_HEADERS.nonce}: must be 16-64 base64url characters`;
  if (!SIGNATURE.test(signed)) return `${PEER_HEADERS.signature}: must be 64 hexadecimal digits`;
  return { peerId, timestampMs: Number(timestamp), nonce, signature: signed };
}
