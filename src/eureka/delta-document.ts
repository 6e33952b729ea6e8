import type { StoreReader } from '../app/reads.js';
import type { LeaseView } from '../registry/visibility.js';
import { deltaInstance, deltaInstanceJson } from './documents.js';
import { appNameOf, type ViewDefaults } from './instance-view.js';
import type { RecentChange } from './recent-changes.js';
import { toXml } from './xml.js';

/**
 * Most changes written per slice of a delta document before the build yields to the event
 * loop (see also `DELTA_SLICE_MAX_MS`). Right after a million registrations the window holds a
 * million changes: built in one piece, the delta held the event loop for seconds and was one
 * string past V8's longest (about 800 MB of JSON).
 */
export const DELTA_SLICE_CHANGES = 2_000;
/**
 * Longest a slice may hold the event loop, whatever its count: 2,000 changes took 7.6 ms of CPU
 * at the median and, on the shared 2-core box under load, 18 ms of wall time (bench/loop-stalls.ts
 * at 200,000, timed per slice). Looked at every `TIME_CHECK_CHANGES` changes.
 */
export const DELTA_SLICE_MAX_MS = 4;
const TIME_CHECK_CHANGES = 25;

export interface DeltaBuild {
  store: StoreReader;
  /** Read again at every slice: a build spans turns of the event loop. */
  leaseView: () => LeaseView;
  defaults: ViewDefaults;
  format: 'json' | 'xml';
  /** `versions__delta` (the store revision the build started at). */
  version: number;
  /** The window, oldest first, read one change at a time (`RecentChanges.entries()`). */
  changes: Iterable<RecentChange>;
  /** The apps hash code of the whole registry, asked for once every change is written. */
  hashCode: () => Promise<string>;
  /** Lets the event loop run between two slices (setImmediate in the peer, counted in tests). */
  yieldTurn: () => Promise<void>;
  sliceChanges?: number;
}

/**
 * One app of the delta: its instances' bytes so far, and this slice's text not yet made a
 * buffer (a string, not a `ByteBuilder`: a delta may touch 100,000 apps, and a builder's
 * scratch buffer each would be far more than their text).
 */
interface AppPart {
  name: string;
  parts: Buffer[];
  text: string;
  count: number;
}

/**
 * `GET /eureka/apps/delta` in slices: the same bytes as `deltaDocument` written out (apps in
 * the order of their first change, instances in time order), as buffers, never one string.
 * A change made while the build is suspended moves its instance to the end of the window, so
 * the delta may list that instance twice, the later one in its newer state; Eureka clients
 * apply a delta's instances in order, each replacing the one before by id, so they end in the
 * newest state (docs/eureka.md). The hash code is taken last, after the last change is written.
 */
export async function buildDeltaDocument(build: DeltaBuild): Promise<Buffer[]> {
  const { format } = build;
  const sliceChanges = Math.max(1, build.sliceChanges ?? DELTA_SLICE_CHANGES);
  const apps = new Map<string, AppPart>();
  let touched: AppPart[] = [];
  const endSlice = () => {
    for (const app of touched) {
      app.parts.push(Buffer.from(app.text));
      app.text = '';
    }
    touched = [];
  };
  let context = { store: build.store, view: build.leaseView(), defaults: build.defaults };
  let inSlice = 0;
  let sliceStartMs = performance.now();
  for (const change of build.changes) {
    if (inSlice === sliceChanges || (inSlice % TIME_CHECK_CHANGES === 0 && inSlice > 0 && performance.now() - sliceStartMs >= DELTA_SLICE_MAX_MS)) {
      endSlice();
      await build.yieldTurn();
      context = { ...context, view: build.leaseView() };
      inSlice = 0;
      sliceStartMs = performance.now();
    }
    inSlice += 1;
    const name = appNameOf(change.record.service);
    let app = apps.get(name);
    if (!app) apps.set(name, (app = { name, parts: [], text: '', count: 0 }));
    if (app.text === '') touched.push(app);
    if (format === 'json') app.text += (app.count > 0 ? ',' : '') + deltaInstanceJson(context, change);
    else app.text += toXml({ instance: deltaInstance(context, change) });
    app.count += 1;
  }
  endSlice();
  const hashCode = await build.hashCode();
  const json = format === 'json';
  const chunks: Buffer[] = [
    Buffer.from(
      json
        ? `{"applications":{"versions__delta":${JSON.stringify(String(build.version))},"apps__hashcode":${JSON.stringify(hashCode)},"application":[`
        : `<applications>${toXml({ versions__delta: String(build.version) })}${toXml({ apps__hashcode: hashCode })}`,
    ),
  ];
  let first = true;
  for (const app of apps.values()) {
    chunks.push(Buffer.from(json ? `${first ? '' : ','}{"name":${JSON.stringify(app.name)},"instance":[` : `<application>${toXml({ name: app.name })}`));
    chunks.push(...app.parts);
    chunks.push(Buffer.from(json ? ']}' : '</application>'));
    first = false;
  }
  chunks.push(Buffer.from(json ? ']}}' : '</applications>'));
  return chunks;
}
