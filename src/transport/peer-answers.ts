import { RegistryError } from '../errors.js';
import { isObject, parseDescriptors, parsePingResponse } from '../membership/messages.js';
import type { PeerDescriptor, PeerMethod, PeerRequest, ReceivedAnswer } from './peer-calls.js';
import type { CallOptions, EncodedRequest, PeerTransport } from './transport.js';

function answerObject(method: PeerMethod, answer: unknown): Record<string, unknown> {
  if (!isObject(answer)) throw new RegistryError('REG_ERR_VALIDATION', `${method} answer: must be a JSON object`);
  return answer;
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0;

/**
 * One check per call name of what another peer answered, run once where the answer comes in.
 * Each keeps the readings callers had when they checked answers themselves: what a caller
 * never relied on is normalised (a missing list is empty, a `want` key that is not a string is
 * skipped), what it cannot do without throws, as the caller's own check did. Checks are O(1)
 * per answer but for the lists they walk anyway; records are left to the inbox (peer-calls.ts).
 */
const answerChecks: { [M in PeerMethod]: (answer: unknown) => ReceivedAnswer<M> } = {
  replicate: (answer) => {
    // No caller reads the counts: any answer of a 2xx is a delivered batch.
    const counts: ReceivedAnswer<'replicate'> = {};
    if (!isObject(answer)) return counts;
    for (const name of ['applied', 'ignored', 'invalid'] as const) if (isCount(answer[name])) counts[name] = answer[name];
    return counts;
  },
  ping: (answer) => parsePingResponse(answer),
  'ping-req': (answer) => ({ ok: isObject(answer) && answer.ok === true }),
  digest: (answer) => {
    const body = answerObject('digest', answer);
    return { match: Boolean(body.match), ...(typeof body.buckets === 'string' ? { buckets: body.buckets } : {}), ...(body.syncing === true ? { syncing: true } : {}) };
  },
  subdigest: (answer) => {
    const body = answerObject('subdigest', answer);
    if (typeof body.hashes !== 'string') throw new RegistryError('REG_ERR_VALIDATION', 'subdigest answer: hashes must be a string');
    return { hashes: body.hashes };
  },
  reconcile: (answer) => {
    const body = answerObject('reconcile', answer);
    return {
      records: Array.isArray(body.records) ? body.records : [],
      want: Array.isArray(body.want) ? body.want.filter((key): key is string => typeof key === 'string') : [],
    };
  },
  snapshot: (answer) => {
    const body = answerObject('snapshot', answer);
    return {
      records: Array.isArray(body.records) ? body.records : [],
      nextBucket: typeof body.nextBucket === 'number' ? body.nextBucket : null,
      members: parseDescriptors('members', body.members),
      // Only an explicit false is unsettled: a peer of an older version sends no field.
      settled: body.settled !== false,
    };
  },
  'lease-check': (answer) => {
    const body = answerObject('lease-check', answer);
    return { records: Array.isArray(body.records) ? body.records : [] };
  },
};

/** Checks another peer's answer to `method` and types it; throws a `REG_ERR_VALIDATION` error when it cannot be read. */
export function checkAnswer<M extends PeerMethod>(method: M, answer: unknown): ReceivedAnswer<M> {
  return answerChecks[method](answer);
}

/**
 * The typed peer call every caller uses: sends a request of `method`'s type over the transport
 * and returns the answer checked (`checkAnswer`). Throws the transport's `PeerCallError`, or the
 * check's error for an answer that cannot be read.
 */
export async function callPeer<M extends PeerMethod>(
  transport: PeerTransport,
  peer: PeerDescriptor,
  method: M,
  request: PeerRequest<M> | EncodedRequest<M>,
  options: CallOptions,
): Promise<ReceivedAnswer<M>> {
  return checkAnswer(method, await transport.call(peer, method, request, options));
}
