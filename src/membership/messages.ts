/** Checks membership messages (`ping`, `ping-req`, peer lists) as other peers send them; their types are in transport/peer-calls.ts. */
import { createHash } from 'node:crypto';
import { RegistryError } from '../errors.js';
import type { PeerDescriptor, PingReqRequest, PingRequest, PingResponse } from '../transport/peer-calls.js';

const PEER_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
const MAX_MEMBERS = 1_000;

function bad(message: string): RegistryError {
  return new RegistryError('REG_ERR_VALIDATION', message);
}

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A peer id as peers send it. */
export function parsePeerId(field: string, value: unknown): string {
  if (typeof value !== 'string' || !PEER_ID.test(value)) throw bad(`${field}: must be a peer id`);
  return value;
}

/** A peer descriptor as peers send it; the URL must be an http(s) origin. */
export function parseDescriptor(field: string, value: unknown): PeerDescriptor {
  if (!isObject(value)) throw bad(`${field}: must be an object`);
  const id = parsePeerId(`${field}.id`, value.id);
  let url: URL;
  try {
    url = new URL(String(value.url));
  } catch {
    throw bad(`${field}.url: must be a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad(`${field}.url: must be http(s)`);
  const text = (name: string, item: unknown): string => {
    if (typeof item !== 'string' || item.length > 64) throw bad(`${field}.${name}: must be a string of at most 64 characters`);
    return item;
  };
  return { id, url: url.origin, region: text('region', value.region), zone: text('zone', value.zone) };
}

export function parseDescriptors(field: string, value: unknown): PeerDescriptor[] {
  if (!Array.isArray(value) || value.length > MAX_MEMBERS) throw bad(`${field}: must be an array of at most ${MAX_MEMBERS} peers`);
  return value.map((item, index) => parseDescriptor(`${field}[${index}]`, item));
}

function parseHash(field: string, value: unknown): string {
  if (value === undefined) return '';
  if (typeof value !== 'string' || value.length > 64) throw bad(`${field}: must be a short string`);
  return value;
}

/** What a ping and its answer both carry: the incarnation and the peer-list hash (and the list). */
function gossipOf(body: Record<string, unknown>): Pick<PingRequest, 'incarnation' | 'membersHash' | 'members'> {
  return {
    ...(body.incarnation === undefined ? {} : { incarnation: parseHash('incarnation', body.incarnation) }),
    membersHash: parseHash('membersHash', body.membersHash),
    ...(body.members === undefined ? {} : { members: parseDescriptors('members', body.members) }),
  };
}

export function parsePingRequest(body: unknown): PingRequest {
  if (!isObject(body)) throw bad('body: must be a JSON object');
  return { from: parseDescriptor('from', body.from), ...gossipOf(body) };
}

export function parsePingReqRequest(body: unknown): PingReqRequest {
  if (!isObject(body)) throw bad('body: must be a JSON object');
  return { from: parsePeerId('from', body.from), target: parseDescriptor('target', body.target) };
}

/** A ping answer as peers send it; throws when it is not one (then the ping counts as unanswered). */
export function parsePingResponse(body: unknown): PingResponse {
  if (!isObject(body)) throw bad('ping answer: must be a JSON object');
  return { id: parsePeerId('id', body.id), ...gossipOf(body) };
}

/** A short hash of a peer list, independent of its order. */
export function membersHash(descriptors: readonly PeerDescriptor[]): string {
  const lines = descriptors.map((d) => `${d.id}|${d.url}|${d.region}|${d.zone}`).sort();
  return createHash('sha1').update(lines.join('\n')).digest('hex').slice(0, 16);
}
