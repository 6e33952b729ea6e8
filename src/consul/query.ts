import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RegistryConfig } from '../config/load.js';
import type { Membership } from '../membership/membership.js';
import { parseName } from '../registry/validate.js';
import type { LimitSubject } from '../adapters/limits.js';
import type { BlockingQueries } from './blocking.js';
import { goDurationMs } from './duration.js';
import { badRequest, ConsulError } from './errors.js';
import type { ConsulAnswer, InstanceFilter } from './encodings.js';

type Query = Record<string, unknown>;

/**
 * Query parameters and headers the way Consul reads them. A flag such as `passing` or `stale`
 * is on when present, with no value (brpc sends `?stale&passing`) or any value but `false`
 * and `0` (the npm client sends `passing=true`, python-consul `passing=1`).
 */
export function queryFlag(query: Query, name: string): boolean {
  const value = query[name];
  if (value === undefined) return false;
  const last = Array.isArray(value) ? value[value.length - 1] : value;
  return last !== 'false' && last !== '0';
}

/** A service name from the path, checked by the native name rules (400 otherwise). */
export function serviceName(value: unknown): string {
  try {
    return parseName('service', value);
  } catch (error) {
    throw badRequest((error as Error).message);
  }
}

/** This peer as Consul's agent: its own identity (region, zone, URL) and its members; no more of the node. */
export interface ConsulPeer {
  readonly config: Pick<RegistryConfig, 'self'>;
  readonly membership: Pick<Membership, 'list'>;
}

/** Every region this peer knows of: its own and its peers'. Consul's datacenters are our regions. */
export function knownDatacenters(node: ConsulPeer): string[] {
  const regions = new Set([node.config.self.region, ...node.membership.list().map((member) => member.descriptor.region)]);
  return [...regions].sort();
}

/** `tag` (repeatable), `dc` and `near` as an instance filter; `passing` when the route takes it. */
export function instanceFilter(node: ConsulPeer, query: Query, withPassing: boolean): InstanceFilter {
  refuseFilterExpression(query);
  const tag = query.tag;
  // One `tag` is a string, several an array (no flat(): this runs for every blocking query's re-arm).
  const tags = typeof tag === 'string' ? [tag] : Array.isArray(tag) ? tag.filter((item): item is string => typeof item === 'string') : [];
  const dcValue = query.dc;
  let datacenter: string | null = null;
  if (typeof dcValue === 'string' && dcValue !== '') {
    // Consul's own words for a datacenter it has no route to (its clients show them as is).
    if (!knownDatacenters(node).includes(dcValue)) throw new ConsulError(500, 'No path to datacenter');
    datacenter = dcValue;
  }
  const near = query.near;
  let nearZone: string | null = null;
  if (typeof near === 'string' && near !== '') {
    if (near.length > 64) throw badRequest('near: must be a zone name (or _agent) of at most 64 characters');
    // `_agent` is the agent's own position: this peer's zone.
    nearZone = near === '_agent' ? node.config.self.zone : near;
  }
  return { passing: withPassing && queryFlag(query, 'passing'), tags, datacenter, nearZone };
}

/** Consul's `?filter=` expressions are not implemented: refused, since ignoring one would answer more than was asked. */
export function refuseFilterExpression(query: Query): void {
  if (query.filter !== undefined) throw badRequest('filter: filter expressions are not supported by this registry; use tag, passing, dc or near');
}

export interface BlockingSettings {
  defaultWaitMs: number;
  maxWaitMs: number;
}

/** `index` of a blocking query: a non-negative integer; absent: not blocking. */
function parseIndex(value: unknown): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !/^\d{1,16}$/.test(value) || Number(value) > Number.MAX_SAFE_INTEGER) throw badRequest('index: must be a non-negative integer (the X-Consul-Index of the previous answer)');
  return Number(value);
}

/** `wait` of a blocking query (Go duration), within `consul.maxWaitMs`. */
function parseWait(value: unknown, settings: BlockingSettings): number {
  if (value === undefined || value === '') return settings.defaultWaitMs;
  const ms = typeof value === 'string' ? goDurationMs(value) : undefined;
  if (ms === undefined) throw badRequest('wait: must be a duration such as "30s" or "5m"');
  return Math.min(ms, settings.maxWaitMs);
}

/**
 * Holds a blocking query until the index it waits on passes `?index=`, then lets the route
 * answer. `currentIndex` is what the answer's X-Consul-Index will be (indexes.ts). It holds
 * only a query whose index is the current one, and answers every other at once: for
 * `index=0`, an older index (the result changed since), and one this peer never gave for this
 * result (from another peer, or from this peer's previous life): the client then holds the
 * index of what it was just sent and blocks on that, never on an index that stands for a
 * result it has not seen. `subject` is whom the held-query shares count it against.
 */
export async function holdBlockingQuery(
  request: FastifyRequest,
  reply: FastifyReply,
  context: { blocking: BlockingQueries; settings: BlockingSettings },
  target: { namespace: string; service: string | null; subject: LimitSubject },
  currentIndex: () => number,
): Promise<void> {
  const query = request.query as Query;
  const index = parseIndex(query.index);
  const waitMs = parseWait(query.wait, context.settings);
  if (index === undefined || index === 0) return;
  if (currentIndex() !== index) return;
  const gone: { onGone?: () => void; isGone: boolean } = { isGone: false };
  const onClose = () => {
    gone.isGone = true;
    gone.onGone?.();
  };
  reply.raw.once('close', onClose);
  try {
    await context.blocking.wait(target.namespace, target.service, index, waitMs, target.subject, gone);
  } finally {
    reply.raw.removeListener('close', onClose);
  }
}

/**
 * Sends a catalog or health answer (encodings.ts, `answerOf`: body and headers made once and
 * shared). With `direct` (the peer does not log at debug, so no per-request line is owed), the
 * answer is written to the socket as it is, its shared headers and bytes, past fastify's reply
 * hooks: a write that wakes 1,000 blocking queries sends 1,000 answers, and fastify's reply
 * path was a third of the CPU each cost (bench/consul.ts). What must still run does: the host
 * check, access, rate limit and readiness ran in the listener's `onRequest` hooks (guard.ts),
 * and the request metrics' `onResponse` hook runs for a hijacked reply too (metrics.ts).
 */
export function sendConsulAnswer(reply: FastifyReply, answer: ConsulAnswer, direct: boolean): FastifyReply | undefined {
  if (!direct) return reply.headers(answer.headers).send(answer.body);
  reply.hijack();
  reply.raw.writeHead(200, answer.headers);
  reply.raw.end(answer.body);
  return undefined;
}
