import { orderByProximity } from '../registry/queries.js';
import type { ServiceView, ServiceViews } from '../views/service-views.js';
import { readsBudget, sharedBuild, yieldToLoop, type SharedBuild } from '../http/loop-budget.js';
import { catalogService, consulInstance, healthEntry, type ConsulInstance } from './payloads.js';

/**
 * The Consul encodings of one service's view, built once per view (on the first Consul read
 * after a change) and shared by every reader and every blocking query woken by the change:
 * each instance's health entry, catalog entry and checks as JSON text, and the whole bodies
 * for the reads that need no filter (all instances, passing ones) as UTF-8 bytes, sent as they
 * are rather than encoded again per request (a 1,000-instance health answer is 1.1 MB: 4 ms
 * of CPU per read as a string, 1.5 to 1.9 as bytes; docs/consul.md). Filtered reads (tag, dc,
 * near) join the texts of the instances they keep: no object is serialized per read.
 *
 * Kept with the native view, they are rebuilt at the first read a second after the last
 * build (DEFAULT_VIEW_MAX_AGE_MS), which costs a 1,000-instance service about 50 ms of CPU.
 * The build works in slices on the shared loop budget (src/http/loop-budget.ts), so a
 * heartbeat waits for one slice rather than the whole service, and the reads arriving while
 * it runs wait for that one build rather than each starting their own.
 * Kept with the stable view instead they would not be, but the stable views are never swept:
 * as built here (objects, texts and bytes per instance) that held 7.6 MB per 1,000 instances
 * for as long as the service does not change (765 MB more RSS at 100,000 instances, each
 * service read once), so the move waits for a slimmer encoding (docs/consul.md).
 */
export interface EncodedInstance {
  instance: ConsulInstance;
  healthJson: string;
  catalogJson: string;
  checksJson: string[];
}

export interface ServiceEncoding {
  view: ServiceView;
  instances: EncodedInstance[];
  healthJson: Buffer;
  healthPassingJson: Buffer;
  catalogJson: Buffer;
  checksJson: Buffer;
  /** The answers made from this encoding, by route and filter (answerOf). */
  answers: Map<string, ConsulAnswer>;
  /** How many answers were made from this encoding (a shared one counts once, whoever reads it). */
  answersMade: number;
}

/**
 * One catalog or health answer as every reader of a (service, route, filter, index) gets it:
 * the body's bytes and the headers that go with them, made once and shared (never changed
 * after they are made), so that a write waking 1,000 blocking queries makes one answer for
 * them, not one per query.
 */
export interface ConsulAnswer {
  index: number;
  body: Buffer;
  headers: Readonly<Record<string, string | number>>;
}

/**
 * The headers of every catalog and health answer. This registry has no leader: each peer
 * answers from its own replica, which is what Consul calls a stale read with a known leader
 * and no lag, so clients that insist on a leader (consul-template, Spring Cloud Consul's
 * health indicator) stay content.
 */
export function consulAnswer(index: number, body: Buffer): ConsulAnswer {
  return {
    index,
    body,
    headers: {
      'x-consul-index': String(index),
      'x-consul-knownleader': 'true',
      'x-consul-lastcontact': '0',
      'content-type': 'application/json; charset=utf-8',
      'content-length': body.length,
    },
  };
}

/**
 * Filtered answers kept per encoding, at most: a client varying its tags cannot grow the peer's
 * memory past it (a read past it gets an answer made for it alone, as before sharing).
 */
export const ANSWERS_PER_ENCODING_MAX = 64;

/** The catalog and health reads of one service. */
export type ServiceRead = 'health' | 'catalog' | 'checks';

const ENCODING = 'consul';

function joined(texts: readonly string[]): string {
  return `[${texts.join(',')}]`;
}

/** Instances encoded between two looks at the loop budget. */
const CHECK_EVERY_INSTANCES = 50;

async function build(view: ServiceView, localDatacenter: string): Promise<ServiceEncoding> {
  const instances: EncodedInstance[] = [];
  for (let i = 0; i < view.served.length; i++) {
    if (i % CHECK_EVERY_INSTANCES === 0 && readsBudget.spent()) await yieldToLoop();
    const instance = consulInstance(view.served[i]!, view.instances[i]!, localDatacenter);
    instances.push({
      instance,
      healthJson: JSON.stringify(healthEntry(instance)),
      catalogJson: JSON.stringify(catalogService(instance)),
      checksJson: instance.checks.map((check) => JSON.stringify(check)),
    });
  }
  const bytes = (texts: readonly string[]) => Buffer.from(joined(texts));
  return {
    view,
    instances,
    healthJson: bytes(instances.map((item) => item.healthJson)),
    healthPassingJson: bytes(instances.filter((item) => item.instance.passing).map((item) => item.healthJson)),
    catalogJson: bytes(instances.map((item) => item.catalogJson)),
    checksJson: bytes(instances.flatMap((item) => item.checksJson)),
    answers: new Map(),
    answersMade: 0,
  };
}

/**
 * The Consul encoding of a service's current view (the view is taken when this is called: a
 * read's index, taken in the same turn, is that view's).
 */
export async function serviceEncoding(views: ServiceViews, namespace: string, service: string, localDatacenter: string): Promise<ServiceEncoding> {
  const view = views.get(namespace, service);
  // One per view: the encoding, or the build under way that every read arriving meanwhile waits for.
  return sharedBuild(views.encoding<SharedBuild<ServiceEncoding>>(view, ENCODING, () => ({})), () => build(view, localDatacenter));
}

/** What a catalog or health read keeps of a service's instances. */
export interface InstanceFilter {
  passing: boolean;
  /** Every one of these tags (Consul's repeated `tag`). */
  tags: readonly string[];
  /** Only this datacenter (our region); null: every one. */
  datacenter: string | null;
  /** Nearest first to this zone; null: by instance id. */
  nearZone: string | null;
}

/** The instances a filter keeps, in the order it asks for. */
export function selectInstances(
  encoding: ServiceEncoding,
  filter: InstanceFilter,
  regionOfZone: (zone: string) => string | undefined,
): EncodedInstance[] {
  const kept = encoding.instances.filter(
    (item) =>
      (!filter.passing || item.instance.passing) &&
      (filter.datacenter === null || item.instance.datacenter === filter.datacenter) &&
      filter.tags.every((tag) => item.instance.tags.includes(tag)),
  );
  if (filter.nearZone === null) return kept;
  const ranked = orderByProximity(
    kept.map((item) => ({ zone: item.instance.zone, instanceId: item.instance.id, item })),
    filter.nearZone,
    regionOfZone,
  );
  return ranked.map((ranked) => ranked.item);
}

/** The body of a filtered read: the shared bytes when nothing but `passing` is asked. */
export function healthBody(encoding: ServiceEncoding, filter: InstanceFilter, regionOfZone: (zone: string) => string | undefined): Buffer | string {
  if (filter.tags.length === 0 && filter.datacenter === null && filter.nearZone === null) {
    return filter.passing ? encoding.healthPassingJson : encoding.healthJson;
  }
  return joined(selectInstances(encoding, filter, regionOfZone).map((item) => item.healthJson));
}

export function catalogBody(encoding: ServiceEncoding, filter: InstanceFilter, regionOfZone: (zone: string) => string | undefined): Buffer | string {
  if (filter.tags.length === 0 && filter.datacenter === null && filter.nearZone === null && !filter.passing) return encoding.catalogJson;
  return joined(selectInstances(encoding, filter, regionOfZone).map((item) => item.catalogJson));
}

export function checksBody(encoding: ServiceEncoding, filter: InstanceFilter, regionOfZone: (zone: string) => string | undefined): Buffer | string {
  if (filter.tags.length === 0 && filter.datacenter === null && filter.nearZone === null && !filter.passing) return encoding.checksJson;
  return joined(selectInstances(encoding, filter, regionOfZone).flatMap((item) => item.checksJson));
}

const BODIES: Record<ServiceRead, typeof healthBody> = { health: healthBody, catalog: catalogBody, checks: checksBody };

/** A filter as a key: equal filters ask for the same answer. */
function filterKey(read: ServiceRead, filter: InstanceFilter): string {
  return `${read}|${filter.passing ? 1 : 0}|${filter.datacenter ?? ''}|${filter.tags.join('\0')}`;
}

/**
 * The answer of `read` with `filter` at `index`, made on the first read of this encoding that
 * asks for it and shared by every later one (each blocking query a change wakes, each reader
 * of the same view): the body is encoded once, its headers made once. A key lookup per read.
 * A `near` read is the exception (made per read, as its order follows the membership).
 */
export function answerOf(
  encoding: ServiceEncoding,
  read: ServiceRead,
  filter: InstanceFilter,
  index: number,
  regionOfZone: (zone: string) => string | undefined,
): ConsulAnswer {
  // `near` orders by the zones' regions, which follow the membership rather than the view: such
  // an answer is made for its read alone, never kept.
  if (filter.nearZone !== null) {
    encoding.answersMade += 1;
    return consulAnswer(index, asBytes(BODIES[read](encoding, filter, regionOfZone)));
  }
  const key = filterKey(read, filter);
  const kept = encoding.answers.get(key);
  if (kept?.index === index) return kept;
  // The same view under a newer index (a change that left this service's answer as it was)
  // keeps its body; only the headers are made again.
  const body = kept?.body ?? asBytes(BODIES[read](encoding, filter, regionOfZone));
  const answer = consulAnswer(index, body);
  encoding.answersMade += 1;
  if (kept || encoding.answers.size < ANSWERS_PER_ENCODING_MAX) encoding.answers.set(key, answer);
  return answer;
}

function asBytes(body: Buffer | string): Buffer {
  return typeof body === 'string' ? Buffer.from(body) : body;
}
