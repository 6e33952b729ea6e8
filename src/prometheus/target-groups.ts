import type { ChunkedBody } from '../http/send-chunks.js';
import { groupOf, type StoredInstance } from '../registry/types.js';
import { zoneRegion, type InstanceView } from '../registry/view.js';
import type { ServiceView } from '../views/service-views.js';

/**
 * Prometheus HTTP service discovery (`http_sd_configs`): the registry's served instances as
 * the JSON list of target groups Prometheus expects, `[{"targets": ["host:port"], "labels":
 * {...}}, ...]`. A group's labels apply to every target in it, and each instance has labels of
 * its own (id, zone, metadata), so every instance is a group of one target; a service's groups
 * are one part of the answer, built once per change of its stable view (shared-groups.ts) and
 * shared by every scraper, and an answer is the list of the parts it selects, sent as they
 * are (never joined into one buffer when big: src/http/send-chunks.ts).
 */

/** The name under which the parts are kept with a stable view (ServiceViews.stableEncoding). */
export const TARGET_GROUPS_ENCODING = 'prometheus-sd';

/** The prefix of every label this discovery sets; Prometheus drops `__meta_*` labels after relabelling. */
export const META_PREFIX = '__meta_registry_';
const METADATA_PREFIX = `${META_PREFIX}metadata_`;

// Prometheus's own rule (strutil.SanitizeLabelName): anything but ASCII letters, digits and
// `_` becomes `_`, one `_` per character (code point). Written out because Prometheus has no
// JavaScript library; what it must match is Prometheus's Go code, not a JS label library.
const INVALID_LABEL_CHAR = /[^a-zA-Z0-9_]/gu;

/**
 * A metadata key as the rest of a label name, sanitised as Prometheus sanitises the keys its own
 * discoveries turn into labels (Consul, Eureka, Kubernetes): every character that cannot be in
 * a label name becomes `_`. `prometheus.io/port` -> `prometheus_io_port`.
 */
export function sanitizeLabelName(name: string): string {
  return name.replace(INVALID_LABEL_CHAR, '_');
}

/** `host:port`, with an IPv6 address in brackets (as Go's net.JoinHostPort writes it). */
export function targetAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** What a target group is written from: an instance's key, address, placement, status and metadata. */
export type TargetInstance = Pick<InstanceView, 'namespace' | 'service' | 'instanceId' | 'host' | 'port' | 'zone' | 'region' | 'group' | 'status' | 'metadata'>;

/**
 * A stored instance as a target group needs it, without the lease fields of a native view:
 * target groups carry nothing that moves with time, so they are built from the read layer's
 * stable views (kept until a change), not from the views rebuilt every second.
 */
export function targetInstanceOf(entry: StoredInstance, regionOfZone: (zone: string) => string | undefined): TargetInstance {
  const { record } = entry;
  const { data } = record;
  return {
    namespace: record.namespace,
    service: record.service,
    instanceId: record.instanceId,
    host: data.host,
    port: data.port,
    zone: data.zone,
    region: zoneRegion(data.zone, regionOfZone),
    group: groupOf(data),
    status: data.status,
    metadata: data.metadata,
  };
}

/** Sanitised label names of metadata keys, for one encoding run: keys repeat across instances. */
export type LabelNameCache = Map<string, string>;

/**
 * The labels of one instance, as `[name, value]` pairs in a fixed order (the fixed labels,
 * then the metadata by key). Metadata keys that sanitise to the same label name (`a.b` and
 * `a-b`) give one label: the key first in sorted order wins, so the answer does not depend on
 * the order a client sent its metadata in.
 */
export function labelsOf(instance: TargetInstance, names: LabelNameCache = new Map()): [string, string][] {
  const labels: [string, string][] = [
    [`${META_PREFIX}namespace`, instance.namespace],
    [`${META_PREFIX}service`, instance.service],
    [`${META_PREFIX}instance_id`, instance.instanceId],
    [`${META_PREFIX}host`, instance.host],
    [`${META_PREFIX}port`, String(instance.port)],
    [`${META_PREFIX}zone`, instance.zone],
    [`${META_PREFIX}region`, instance.region ?? ''],
    [`${META_PREFIX}group`, instance.group],
    [`${META_PREFIX}status`, instance.status],
  ];
  const keys = Object.keys(instance.metadata);
  if (keys.length === 0) return labels;
  const seen = new Set<string>();
  for (const key of keys.sort()) {
    let name = names.get(key);
    if (name === undefined) names.set(key, (name = METADATA_PREFIX + sanitizeLabelName(key)));
    if (seen.has(name)) continue;
    seen.add(name);
    labels.push([name, instance.metadata[key]!]);
  }
  return labels;
}

/**
 * One instance's target group as JSON, written from the label pairs rather than through an
 * object and JSON.stringify: no object per instance whose keys differ from instance to
 * instance. Label names are `[a-zA-Z0-9_]` only, so they need no escaping; every value goes
 * through JSON.stringify; a unit test holds the output to JSON.stringify's of the same group.
 */
export function targetGroupJson(instance: TargetInstance, names: LabelNameCache = new Map()): string {
  let labels = '';
  for (const [name, value] of labelsOf(instance, names)) labels += `${labels === '' ? '' : ','}"${name}":${JSON.stringify(value)}`;
  return `{"targets":[${JSON.stringify(targetAddress(instance.host, instance.port))}],"labels":{${labels}}}`;
}

/** One instance's target group, as JSON bytes, with what a selection filters it on. */
export interface TargetGroupPart {
  group: string;
  zone: string;
  /** A view into the service's `bytes` (no copy of its own). */
  bytes: Buffer;
}

/** A service's part of the answer: its instances' groups, all of them joined and each alone. */
export interface ServiceTargetGroups {
  parts: readonly TargetGroupPart[];
  /** Every group's JSON, UTF-8, joined by commas (empty when the service has no target). */
  bytes: Buffer;
}

const COMMA = Buffer.from(',');
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');

/**
 * The target groups of a service's instances: one per instance that is UP (of the served
 * ones, lease live or held by an eviction guard, as the native listing serves them), in the
 * order given (instance id order in a view). Kept as bytes, once: an answer is then the
 * selected bytes, with no string to build or encode per request (10,000 instances are about
 * 5 MB). Takes a native view too.
 */
export function encodeTargetGroups(view: ServiceView | { readonly instances: readonly TargetInstance[] }): ServiceTargetGroups {
  const selected = view.instances.filter((instance) => instance.status === 'UP');
  const names: LabelNameCache = new Map();
  return assembleTargetGroups(
    selected,
    selected.map((instance) => Buffer.from(targetGroupJson(instance, names))),
  );
}

/**
 * A service's target groups from its UP instances and each one's group JSON (`encoded[i]` is
 * `targetGroupJson(selected[i])` as bytes): what encodeTargetGroups does after encoding, for a
 * build that encodes in slices (shared-groups.ts).
 */
export function assembleTargetGroups(selected: readonly TargetInstance[], encoded: readonly Buffer[]): ServiceTargetGroups {
  const steps = assemblingTargetGroups(selected, encoded);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Parts copied between two pauses of `assemblingTargetGroups`. */
export const ASSEMBLY_STEP_PARTS = 1_000;

/**
 * `assembleTargetGroups` in steps: it pauses (yields) every `ASSEMBLY_STEP_PARTS` parts copied,
 * so that a build in slices can give the loop back there (100,000 instances are about 40 MB
 * to copy, and the copy with its parts took tens of ms in one turn).
 */
export function* assemblingTargetGroups(selected: readonly TargetInstance[], encoded: readonly Buffer[]): Generator<void, ServiceTargetGroups> {
  // One buffer for the service, the parts joined by commas; each part is a view into it.
  let length = Math.max(0, encoded.length - 1) * COMMA.length;
  for (const part of encoded) length += part.length;
  const bytes = Buffer.allocUnsafe(length);
  const parts: TargetGroupPart[] = [];
  let offset = 0;
  for (let i = 0; i < encoded.length; i++) {
    if (i > 0 && i % ASSEMBLY_STEP_PARTS === 0) yield;
    if (i > 0) {
      bytes.set(COMMA, offset);
      offset += COMMA.length;
    }
    const part = encoded[i]!;
    bytes.set(part, offset);
    const instance = selected[i]!;
    parts.push({ group: instance.group, zone: instance.zone, bytes: bytes.subarray(offset, offset + part.length) });
    offset += part.length;
  }
  return { parts, bytes };
}

/** What a request keeps of each service's groups: one group, one zone, or both (null: any). */
export interface PartFilter {
  group: string | null;
  zone: string | null;
}

/**
 * What a filter keeps of one service, as views of its shared buffer, never copies: without a
 * group or zone filter its joined bytes (nothing when it has no target); with one, each run of
 * consecutive matching parts as one view, from the start of its first part to the end of its
 * last (the commas between them included).
 */
export function selectedRuns(service: ServiceTargetGroups, filter: PartFilter): Buffer[] {
  if (filter.group === null && filter.zone === null) return service.bytes.length > 0 ? [service.bytes] : [];
  const runs: Buffer[] = [];
  let runStart = -1;
  let runEnd = -1;
  for (const part of service.parts) {
    const start = part.bytes.byteOffset - service.bytes.byteOffset;
    if ((filter.group === null || part.group === filter.group) && (filter.zone === null || part.zone === filter.zone)) {
      if (runStart < 0) runStart = start;
      runEnd = start + part.bytes.length;
    } else if (runStart >= 0) {
      runs.push(service.bytes.subarray(runStart, runEnd));
      runStart = -1;
    }
  }
  if (runStart >= 0) runs.push(service.bytes.subarray(runStart, runEnd));
  return runs;
}

/**
 * The answer as the list of its pieces, none of them copied: `[`, the runs of every service in
 * order with a comma between any two, `]`; and its exact length. The bytes are the JSON array
 * of the selected groups, in service order, then instance order.
 */
export function answerPieces(runsByService: readonly (readonly Buffer[])[]): ChunkedBody {
  const chunks: Buffer[] = [OPEN];
  let bytes = OPEN.length + CLOSE.length;
  for (const runs of runsByService) {
    for (const run of runs) {
      if (chunks.length > 1) {
        chunks.push(COMMA);
        bytes += COMMA.length;
      }
      chunks.push(run);
      bytes += run.length;
    }
  }
  chunks.push(CLOSE);
  return { chunks, bytes };
}

/** The answer for `filter` over `services`, as pieces (selectedRuns, then answerPieces). */
export function targetGroupPieces(services: readonly ServiceTargetGroups[], filter: PartFilter): ChunkedBody {
  return answerPieces(services.map((service) => selectedRuns(service, filter)));
}

/** The answer as one buffer, its pieces joined: the fresh build the tests hold answers to (sendChunks joins small answers itself). */
export function joinTargetGroups(services: readonly ServiceTargetGroups[], filter: PartFilter): Buffer {
  const { chunks, bytes } = targetGroupPieces(services, filter);
  return Buffer.concat(chunks, bytes);
}
