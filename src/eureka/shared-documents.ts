import { gzipSync } from 'node:zlib';
import type { FastifyReply } from 'fastify';
import { ByteBuilder } from '../http/byte-builder.js';
import { yieldToLoop } from '../http/loop-budget.js';
import { PacedBody } from '../http/paced-body.js';
import type { StoreReader } from '../app/reads.js';
import type { StoredInstance } from '../registry/types.js';
import type { LeaseView } from '../registry/visibility.js';
import { StampCombiner, stampHolds, type ServiceViews, type Stamp, type StableView } from '../views/service-views.js';
import { byId } from './documents.js';
import { GzipPool } from './gzip-pool.js';
import { eurekaInstanceJson } from './instance-json.js';
import { appNameOf, toEurekaInstance, type ViewDefaults } from './instance-view.js';
import { RENDER_UNITS, sortInTurns, TURN_UNITS, TurnBudget } from './turn-budget.js';
import { toXml } from './xml.js';

/**
 * Eureka's big documents, built once per change and shared by every client (docs/eureka.md).
 *
 * A full fetch of a 100,000-instance registry is 80 MB of JSON or 115 MB of XML; built per
 * request, eight clients at once cost eight builds and eight copies, and each build held the
 * event loop for seconds (heartbeats waited). Here every application's part of the document
 * is built once per format from the read layer's stable view of its service and kept until the
 * service changes (or its served set could have, see src/views/stable-views.ts). A build, every
 * step of it (the services gathered and sorted, the statuses counted, the parts written, the
 * parts assembled), spends from one budget that yields a turn of the event loop every bounded
 * amount of work, however the registry is split into apps (turn-budget.ts). A full fetch
 * is a small header (with the apps hash code, from per-application status counts kept
 * alongside), the shared parts, and a trailer, streamed without being concatenated: every
 * concurrent fetch writes the same buffers, so a flood of fetches costs their sockets, not
 * copies, and all of them together copy about 1 MB into their sockets per turn of the event
 * loop (src/http/paced-body.ts). Gzip is per slice too: gzip members may be concatenated (RFC 1952), and Java's
 * GZIPInputStream, Node's zlib and browsers read such a stream as one. A client that accepts
 * gzip gets the gzipped encoding only: each slice is compressed as it is built and its plain
 * bytes let go, so no plain copy of the registry is built or kept for it (a cold gzipped full
 * fetch of 1,000,000 instances otherwise built the 800 MB plain copy first); at most
 * `GZIP_MAX_IN_FLIGHT` slices compress at once (gzip-pool.ts).
 *
 * What may lag: `lastRenewalTimestamp` moves with every heartbeat without a store change; a
 * part shows it as of its build, at most `PART_MAX_AGE_MS` ago, and a kept full fetch adds at
 * most `DOCUMENT_MAX_AGE_MS`: 30 s in all (Eureka's own response cache lags everything by 30 s;
 * no client acts on this field). Nothing else lags: a kept full fetch is dropped at the first
 * store change, and as soon as any view it was built from stops being current.
 */

/**
 * Longest an assembled full fetch is reused while nothing it was built from changed: its
 * parts, the views they came from, the apps hash code and the list of buffers. Assembled again
 * for each of 32 fetches arriving together, one after the other, it held a heartbeat 45 to
 * 95 ms (heartbeat max of bench/read-scale.ts --only=fullfetch, 32 at once); kept, 8 to 11 ms.
 */
export const DOCUMENT_MAX_AGE_MS = 1_000;
/**
 * Longest a part is reused for its lease-derived field (`lastRenewalTimestamp`); with the
 * document's own bound, a full fetch shows it as of at most 30 s ago.
 */
export const PART_MAX_AGE_MS = 30_000 - DOCUMENT_MAX_AGE_MS;

export type Format = 'json' | 'xml';

/** One application's part of a document: its bytes in order (one buffer per slice). */
type Chunks = Buffer[];

/** Most instances a build writes in one turn of the event loop (fewer when it takes `TURN_MAX_MS`). */
export const SLICE_INSTANCES = TURN_UNITS / RENDER_UNITS;
/** Most statuses counted for the apps hash code in one turn of the event loop. */
export const HASH_SLICE_INSTANCES = TURN_UNITS;

function instanceText(entry: StoredInstance, defaults: ViewDefaults, format: Format): string {
  return format === 'json' ? eurekaInstanceJson(entry, defaults) : toXml({ instance: toEurekaInstance(entry, defaults) });
}

/**
 * `{"name":..,"instance":[...]}` or `<application>...</application>` of one app, in slices that
 * end where `budget` (the whole build's) says to yield; with `gzip`, every slice is compressed
 * as it is made and only the gzip members are kept.
 */
async function buildApplication(app: string, entries: readonly StoredInstance[], defaults: ViewDefaults, format: Format, budget: TurnBudget, gzip?: GzipPool): Promise<Chunks> {
  const chunks: Promise<Buffer>[] = [];
  const add = async (plain: Buffer) => chunks.push(gzip ? (await gzip.start(plain)).packed : Promise.resolve(plain));
  const bytes = new ByteBuilder();
  bytes.append(format === 'json' ? `{"name":${JSON.stringify(app)},"instance":[` : `<application>${toXml({ name: app })}`);
  for (let i = 0; i < entries.length; i++) {
    if (budget.spend(RENDER_UNITS)) {
      // What this app wrote so far is a slice (the app's head alone stays for the next one).
      if (i > 0) await add(bytes.take());
      await budget.yield();
    }
    if (format === 'json' && i > 0) bytes.append(',');
    bytes.append(instanceText(entries[i]!, defaults, format));
  }
  bytes.append(format === 'json' ? ']}' : '</application>');
  await add(bytes.take());
  return Promise.all(chunks);
}

/** The apps hash code from the count of each status (what `reconcileHashCode` computes from every status). */
function hashCodeOf(total: Map<string, number>): string {
  return [...total.keys()]
    .sort()
    .map((status) => `${status}_${total.get(status)}_`)
    .join('');
}

/** One app as the documents need it: its stable views (usually one service), the shared parts when there is one. */
interface AppRead {
  name: string;
  views: StableView[];
}

/** A full fetch kept for the next ones, with what tells when it stops being current (a store change drops it: see the constructor). */
interface KeptDocument {
  /** Every view it was built from, served instances or not, as one stamp (stable-views.ts). */
  stamp: Stamp;
  builtAtMs: number;
  body: DocumentBody;
}

/** A delta kept for the next requests (`SharedEurekaDocuments.delta`). */
interface KeptDelta {
  /** The store revision it was built at (its `versions__delta`). */
  revision: number;
  atMs: number;
  body: Promise<Chunks>;
  /** True until its body is built (or compressed). */
  building: boolean;
}

export interface DocumentBody {
  chunks: Chunks;
  bytes: number;
  gzipped: boolean;
}

/** A service of the Eureka namespace under its app's name, for the sort of a full fetch. */
interface NamedService {
  app: string;
  service: string;
}

/** By app, then by service (the services of one app in name order, as the one-pass document has them). */
function byAppThenService(a: NamedService, b: NamedService): number {
  if (a.app !== b.app) return a.app < b.app ? -1 : 1;
  return a.service < b.service ? -1 : a.service > b.service ? 1 : 0;
}

const SEPARATOR = Buffer.from(',');
const SEPARATOR_GZIP = gzipSync(SEPARATOR);

export class SharedEurekaDocuments {
  /** The last delta body of each format and encoding (`json|plain`...), built or being built. */
  private readonly deltas = new Map<string, KeptDelta>();
  /** The last full fetch of each format and encoding (`json|plain`...). */
  private readonly documents = new Map<string, KeptDocument>();
  /** Status counts of each stable view (its served list never changes), for the apps hash code. */
  private readonly statusCounts = new WeakMap<StableView, Map<string, number>>();
  /** Every gzip of these documents goes through it (at most `GZIP_MAX_IN_FLIGHT` at once). */
  readonly gzip = new GzipPool();
  private readonly unsubscribe: () => void;
  private readonly yieldTurn: () => Promise<void>;

  constructor(
    private readonly components: {
      views: ServiceViews;
      /** Where a full fetch finds the services of the namespace (walked in turns). */
      store: Pick<StoreReader, 'servicesIn'>;
      leaseView: () => LeaseView;
      /** Lets the event loop run between two turns of a build (default setImmediate; tests count them). */
      yieldTurn?: () => Promise<void>;
      /** The monotonic clock of a turn's time bound (default `performance.now`; tests stop it to count yields exactly). */
      elapsedMs?: () => number;
    },
    private readonly init: { namespace: string; defaults: ViewDefaults },
  ) {
    // A change makes the kept documents stale: let their old parts go at once rather than at
    // the next full fetch, which may be long in coming (clients fetch deltas). Only when some
    // are kept: V8's Map.clear() gives the map a new table, in the old generation for a map that
    // lives there, so clearing an empty map on every write left about 150 B of old-space garbage
    // per write (issue 36; bench/old-space-garbage.ts, with --initial-old-space-size=4000).
    this.unsubscribe = components.views.onChange(() => {
      if (this.documents.size > 0) this.documents.clear();
    });
    this.yieldTurn = components.yieldTurn ?? yieldToLoop;
  }

  /** Full fetches kept for the next ones (at most one per format and encoding). */
  get keptDocuments(): number {
    return this.documents.size;
  }

  /** Stops following the views (shutdown). */
  close(): void {
    this.unsubscribe();
    this.documents.clear();
  }

  /** The budget of one build: every step of it spends from this one. */
  private budget(): TurnBudget {
    return new TurnBudget({ yieldTurn: this.yieldTurn, elapsedMs: this.components.elapsedMs });
  }

  /**
   * Every app with a served instance, sorted by name, and every view taken (served instances
   * or not: what tells when the document stops being current), in turns of `budget`: the
   * store's services walked, sorted by app, and their stable views taken (a cold view is built
   * from its service's records, so each counts with its instances). A view taken is the
   * service's whole served list at that moment; a service changed while the gathering is
   * suspended is seen as it was before or after the change.
   */
  private async gather(budget: TurnBudget): Promise<{ apps: AppRead[]; taken: StableView[] }> {
    const named: NamedService[] = [];
    for (const entries of this.components.store.servicesIn(this.init.namespace)) {
      named.push({ app: appNameOf(entries.service), service: entries.service });
      if (budget.spend(1)) await budget.yield();
    }
    const sorted = await sortInTurns(named, byAppThenService, budget);
    const apps: AppRead[] = [];
    const taken: StableView[] = [];
    let leases = this.components.leaseView();
    for (const { app, service } of sorted) {
      const view = this.components.views.stable(this.init.namespace, service, leases);
      taken.push(view);
      if (view.served.length > 0) {
        const last = apps.at(-1);
        if (last?.name === app) last.views.push(view);
        else apps.push({ name: app, views: [view] });
      }
      if (budget.spend(1 + view.served.length)) {
        await budget.yield();
        leases = this.components.leaseView();
      }
    }
    return { apps, taken };
  }

  /** Whether a kept full fetch is still what a fresh assembly would give (store changes drop it before this is asked). */
  private stillCurrent(kept: KeptDocument, leases: LeaseView): boolean {
    const ageMs = leases.nowMs - kept.builtAtMs;
    return ageMs >= 0 && ageMs < DOCUMENT_MAX_AGE_MS && stampHolds(kept.stamp, leases);
  }

  /**
   * The apps hash code of `apps`: each view's status counts are built once (kept per view),
   * added up as they come, in turns of `budget`. The views are what the caller took: the hash
   * code is theirs, however many turns the counting spans.
   */
  private async hashCodeOf(apps: readonly AppRead[], budget: TurnBudget): Promise<string> {
    const total = new Map<string, number>();
    for (const app of apps) {
      for (const view of app.views) {
        let byStatus = this.statusCounts.get(view);
        if (!byStatus) {
          byStatus = new Map();
          for (const entry of view.served) {
            const { status } = entry.record.data;
            byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
            if (budget.spend(1)) await budget.yield();
          }
          this.statusCounts.set(view, byStatus);
        }
        for (const [status, n] of byStatus) total.set(status, (total.get(status) ?? 0) + n);
        if (budget.spend(1)) await budget.yield();
      }
    }
    return hashCodeOf(total);
  }

  /** The one stamp of every view taken, folded in one at a time in turns of `budget`; undefined when the document is not to be kept. */
  private async stampOf(views: readonly StableView[], budget: TurnBudget): Promise<Stamp | undefined> {
    const stamps = new StampCombiner();
    for (const view of views) {
      stamps.add(this.components.views.stableStamp(view));
      if (budget.spend(1)) await budget.yield();
    }
    return stamps.result();
  }

  /** An app's part in a format and encoding, shared when the app is one service (the usual case). */
  private part(app: AppRead, format: Format, gzipped: boolean, budget: TurnBudget): Promise<Chunks> {
    const build = (entries: readonly StoredInstance[]) => buildApplication(app.name, entries, this.init.defaults, format, budget, gzipped ? this.gzip : undefined);
    if (app.views.length > 1) {
      // Services spelled differently that make one app: merged per read (not shared). Service
      // names are ASCII (validate.ts), so the store holds at most one service per app name; this
      // stays for a store that would hold more.
      const merged = app.views.flatMap((view) => view.served).sort(byId);
      return build(merged);
    }
    const name = gzipped ? `eureka-${format}-gzip` : `eureka-${format}`;
    return this.components.views.stableEncoding(app.views[0]!, name, (built) => build(built.served), PART_MAX_AGE_MS);
  }

  /**
   * `GET /eureka/apps`: every app, with the hash code of the whole registry. Assembled once
   * and kept for the fetches that follow until the store changes (the change listener drops
   * it), a view it was built from stops being current, or `DOCUMENT_MAX_AGE_MS` has passed.
   */
  async registry(format: Format, gzipped: boolean): Promise<DocumentBody> {
    const key = `${format}|${gzipped ? 'gzip' : 'plain'}`;
    const kept = this.documents.get(key);
    const leases = this.components.leaseView();
    if (kept && this.stillCurrent(kept, leases)) return kept.body;
    const revision = this.components.views.revision;
    const budget = this.budget();
    const { apps, taken } = await this.gather(budget);
    const body = await this.assemble(apps, format, gzipped, budget);
    const stamp = await this.stampOf(taken, budget);
    // Kept only when nothing changed while it was put together (a build yields).
    if (stamp && this.components.views.revision === revision) this.documents.set(key, { stamp, builtAtMs: leases.nowMs, body });
    else this.documents.delete(key);
    return body;
  }

  private async assemble(apps: AppRead[], format: Format, gzipped: boolean, budget: TurnBudget): Promise<DocumentBody> {
    // Parts and counts come from the same views (taken by gather), so the hash code matches the parts.
    const hashCode = await this.hashCodeOf(apps, budget);
    return this.assembleParts({ versionsDelta: '1', hashCode, parts: apps.length }, (i) => this.part(apps[i]!, format, gzipped, budget), format, gzipped, budget);
  }

  /**
   * `GET /eureka/vips/{vip}` and `/svips/{svip}`: the apps with a served instance that
   * `matches` (on the VIP address), with those instances only, in turns of one budget: the
   * services gathered and sorted as for a full fetch, each view's served instances matched. An
   * app all of whose served instances match (a VIP that is its service's name, the usual case)
   * is its full fetch's part, shared and kept (its `lastRenewalTimestamp` then as of the part's
   * build, at most `PART_MAX_AGE_MS` ago, as in a full fetch); an app matched in part is built
   * for this read. Otherwise the same document as `vipDocument` (documents.ts) builds in one piece.
   */
  async vip(matches: (entry: StoredInstance) => boolean, format: Format, gzipped: boolean): Promise<DocumentBody> {
    const budget = this.budget();
    const { apps } = await this.gather(budget);
    const selected: Array<{ app: AppRead; matched: StoredInstance[] | 'all' }> = [];
    const statuses = new Map<string, number>();
    for (const app of apps) {
      const matched: StoredInstance[] = [];
      let served = 0;
      for (const view of app.views) {
        for (const entry of view.served) {
          served += 1;
          if (matches(entry)) {
            matched.push(entry);
            statuses.set(entry.record.data.status, (statuses.get(entry.record.data.status) ?? 0) + 1);
          }
          if (budget.spend(1)) await budget.yield();
        }
      }
      if (matched.length === 0) continue;
      // One view's served instances are in id order already; several views' are merged.
      selected.push({ app, matched: app.views.length > 1 ? await sortInTurns(matched, byId, budget) : matched.length === served ? 'all' : matched });
    }
    const partOf = (i: number) => {
      const { app, matched } = selected[i]!;
      return matched === 'all' ? this.part(app, format, gzipped, budget) : buildApplication(app.name, matched, this.init.defaults, format, budget, gzipped ? this.gzip : undefined);
    };
    return this.assembleParts({ versionsDelta: '-1', hashCode: hashCodeOf(statuses), parts: selected.length }, partOf, format, gzipped, budget);
  }

  /** A document of `parts` app parts (`partOf(i)`, one after the other), its head and its tail. */
  private async assembleParts(
    document: { versionsDelta: string; hashCode: string; parts: number },
    partOf: (i: number) => Promise<Chunks>,
    format: Format,
    gzipped: boolean,
    budget: TurnBudget,
  ): Promise<DocumentBody> {
    const { versionsDelta, hashCode } = document;
    const head =
      format === 'json'
        ? `{"applications":{"versions__delta":${JSON.stringify(versionsDelta)},"apps__hashcode":${JSON.stringify(hashCode)},"application":[`
        : `<applications>${toXml({ versions__delta: versionsDelta })}${toXml({ apps__hashcode: hashCode })}`;
    const tail = format === 'json' ? ']}}' : '</applications>';
    const chunks: Chunks = [this.encode(head, gzipped)];
    let bytes = chunks[0]!.length;
    // One part after the other, never all at once: each build runs its first slice before it
    // first yields, so starting the 100 parts of a cold 100,000-instance registry together
    // built a quarter of the document in one turn and held heartbeats for 0.75 s (bench, 11:08).
    // A kept part is a lookup, yet 200,000 of them are not one turn either: each app counts.
    for (let i = 0; i < document.parts; i++) {
      const part = await partOf(i);
      if (i > 0 && format === 'json') {
        const separator = gzipped ? SEPARATOR_GZIP : SEPARATOR;
        chunks.push(separator);
        bytes += separator.length;
      }
      for (const chunk of part) {
        chunks.push(chunk);
        bytes += chunk.length;
      }
      if (budget.spend(1)) await budget.yield();
    }
    chunks.push(this.encode(tail, gzipped));
    bytes += chunks.at(-1)!.length;
    return { chunks, bytes, gzipped };
  }

  /**
   * `GET /eureka/apps/{app}`: undefined when the app has no served instance. The app is the one
   * service of that name in any case (service names are ASCII: see `findInApp`), one lookup.
   */
  async application(name: string, format: Format, gzipped: boolean): Promise<DocumentBody | undefined> {
    const view = this.components.views.stable(this.init.namespace, name, this.components.leaseView());
    if (view.served.length === 0 || appNameOf(view.service) !== name) return undefined;
    const part = await this.part({ name, views: [view] }, format, gzipped, this.budget());
    const chunks = format === 'json' ? [this.encode('{"application":', gzipped), ...part, this.encode('}', gzipped)] : part;
    return { chunks, bytes: chunks.reduce((sum, chunk) => sum + chunk.length, 0), gzipped };
  }

  /** The apps hash code of the whole registry now (what a delta carries), gathered and counted in turns. */
  async hashCode(): Promise<string> {
    const budget = this.budget();
    return this.hashCodeOf((await this.gather(budget)).apps, budget);
  }

  /**
   * A delta document's bytes, shared by every client asking: the last one built for the
   * format and encoding is answered while the store is still at its revision and it is less
   * than `maxAgeMs` old (the window moves with time), and while it is being built, whatever
   * the revision now. So at most one delta of each format and encoding is being built at a
   * time: under a flood of registrations every request sees a new revision, and a delta of a
   * million changes takes seconds to build and holds some 800 MB of plain bytes meanwhile;
   * started once per request, builds piled up. A request during a build gets that build's
   * delta, as of its start (Eureka's own server answers deltas from a cache refreshed every
   * 30 s; a client whose copy then misses a later change sees it in its next delta, or fetches
   * everything when the hash code disagrees). The gzipped form is the plain one compressed
   * piece by piece; only the encodings clients asked for are kept.
   */
  delta(revision: number, format: Format, maxAgeMs: number, gzipped: boolean, build: () => Promise<Chunks>): Promise<DocumentBody> {
    const nowMs = this.components.leaseView().nowMs;
    const usable = (kept: KeptDelta | undefined): kept is KeptDelta =>
      kept !== undefined && (kept.building || (kept.revision === revision && nowMs - kept.atMs < maxAgeMs && nowMs >= kept.atMs));
    const slot = `${format}|${gzipped ? 'gzip' : 'plain'}`;
    let chosen = this.deltas.get(slot);
    if (!usable(chosen)) {
      // A gzip client's build lets its plain bytes go once compressed (at 1,000,000 changes
      // they are some 800 MB), unless a plain client keeps them.
      const plain = this.deltas.get(`${format}|plain`);
      const source = usable(plain) ? plain : { revision, atMs: nowMs, body: build(), building: true };
      chosen = gzipped ? { revision: source.revision, atMs: source.atMs, body: source.body.then((chunks) => this.gzip.gzipAll(chunks)), building: true } : source;
      const kept = chosen;
      this.deltas.set(slot, kept);
      kept.body.then(
        () => (kept.building = false),
        // A failed build is not kept: the next request builds again.
        () => this.deltas.get(slot) === kept && this.deltas.delete(slot),
      );
    }
    return chosen.body.then((chunks) => ({ chunks, bytes: chunks.reduce((sum, chunk) => sum + chunk.length, 0), gzipped }));
  }

  private encode(text: string, gzipped: boolean): Buffer {
    return gzipped ? gzipSync(text) : Buffer.from(text);
  }
}

/**
 * Sends a document body: streamed from its shared chunks, never concatenated, at the shared
 * pacer's rate (src/http/paced-body.ts), so that a flood of full fetches does not hold the
 * event loop while the sockets take their first megabytes.
 */
export function sendBody(reply: FastifyReply, body: DocumentBody, format: Format): FastifyReply {
  reply.type(format === 'json' ? 'application/json' : 'application/xml');
  reply.header('content-length', String(body.bytes));
  reply.header('vary', 'accept-encoding');
  if (body.gzipped) reply.header('content-encoding', 'gzip');
  return reply.send(new PacedBody(body.chunks));
}
