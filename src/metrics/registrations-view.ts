import type { RegistryReads } from '../app/reads.js';
import { KeptBuilds, sliceServices, type SlicedBuild } from '../http/namespace-slices.js';
import type { ChunkedBody } from '../http/send-chunks.js';
import type { ServiceViews } from '../views/service-views.js';
import type { StableView } from '../views/stable-views.js';
import { registeredThrough } from './protocols-view.js';

/**
 * `GET /v1/dashboard/registrations` (docs/dashboard.md, "Registered through"): per service of a
 * namespace, how many of its served instances each protocol registered, and the instances of one
 * service. Each service's counts are kept with its stable view (one pass per change of the
 * service); the namespace's list of them is built once per change, in slices that yield to the
 * loop (src/http/namespace-slices.ts, as `GET /v1/services` is), kept as JSON and shared by every
 * dashboard that polls it, rather than put together again, in one piece, for each request.
 */

/** What a view's instances were registered through: kept with the view (one pass per change). */
interface ViewRegistrations {
  protocols: Record<string, number>;
  byInstance: Array<{ instanceId: string; protocol: string }>;
}

const ENCODING = 'dashboard-registered-through';

/** Namespaces whose list is kept at most (a dashboard polls one at a time): the oldest go first. */
export const KEPT_REGISTRATIONS_MAX = 16;

/** The counts of one service's stable view, built once per change of the view. */
export function registrationsOf(views: ServiceViews, view: StableView): ViewRegistrations {
  return views.stableEncoding(view, ENCODING, (built): ViewRegistrations => {
    const protocols: Record<string, number> = {};
    const byInstance = built.served.map((entry) => {
      const protocol = registeredThrough(entry.record.data);
      protocols[protocol] = (protocols[protocol] ?? 0) + 1;
      return { instanceId: entry.record.instanceId, protocol };
    });
    return { protocols, byInstance };
  });
}

/** A namespace's list: the JSON of its `services` array, as the bytes a reply sends (never joined again). */
interface RegistrationsList extends SlicedBuild, ChunkedBody {}

type Reads = Pick<RegistryReads, 'views' | 'leaseView'>;

export class RegistrationsViews {
  private readonly kept: KeptBuilds<RegistrationsList>;

  constructor(private readonly reads: Reads) {
    this.kept = new KeptBuilds(reads, KEPT_REGISTRATIONS_MAX);
  }

  /** How many namespaces' lists are kept (for tests of the bound). */
  get keptCount(): number {
    return this.kept.keptCount;
  }

  /**
   * The body, as JSON bytes: `{namespace, services: [{service, protocols}], instances?: [{instanceId, protocol}]}`;
   * `instances` when `service` is given (read from that service's kept counts). The kept list's
   * bytes are sent as they are (src/http/send-chunks.ts), between a head and a tail of this request.
   */
  async body(namespace: string, service: string | null): Promise<ChunkedBody> {
    const list = await this.kept.get(namespace, () => this.build(namespace));
    const { views } = this.reads;
    const instances = service === null ? '' : `,"instances":${JSON.stringify(registrationsOf(views, views.stable(namespace, service, this.reads.leaseView())).byInstance)}`;
    const head = Buffer.from(`{"namespace":${JSON.stringify(namespace)},"services":`);
    const tail = Buffer.from(`${instances}}`);
    return { chunks: [head, ...list.chunks, tail], bytes: head.length + list.bytes + tail.length };
  }

  private async build(namespace: string): Promise<RegistrationsList> {
    const chunks: Buffer[] = [];
    let text = '[';
    let listed = 0;
    const walked = await sliceServices(
      this.reads,
      namespace,
      (_service, view) => {
        // The view's own spelling of the name (as first registered), as every listing shows it.
        text += `${listed > 0 ? ',' : ''}{"service":${JSON.stringify(view.service)},"protocols":${JSON.stringify(registrationsOf(this.reads.views, view).protocols)}}`;
        listed += 1;
      },
      () => {
        chunks.push(Buffer.from(text));
        text = '';
      },
    );
    chunks.push(Buffer.from(`${text}]`));
    return { ...walked, chunks, bytes: chunks.reduce((sum, chunk) => sum + chunk.length, 0) };
  }
}
