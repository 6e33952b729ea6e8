import type { InstanceView } from '../registry/view.js';
import type { ServiceView } from '../views/service-views.js';

/**
 * Prometheus HTTP service discovery (`http_sd_configs`): the registry's served instances as
 * the JSON list of target groups Prometheus expects, `[{"targets": ["host:port"], "labels":
 * {...}}, ...]`. A group's labels apply to every target in it, and each instance has labels of
 * its own (id, zone, metadata), so every instance is a group of one target; a service's groups
 * are one part of the answer, built once per change of its view (ServiceViews.encoding) and
 * shared by every scraper, and an answer is the concatenation of the parts it selects.
 */

/** The name under which the parts are kept with a view (ServiceViews.encoding). */
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

/**
 * The labels of one instance. Metadata keys that sanitise to the same label name (`a.b` and
 * `a-b`) give one label: the key first in sorted order wins, so the answer does not depend on
 * the order a client sent its metadata in.
 */
export function labelsOf(instance: InstanceView): Record<string, string> {
  const labels: Record<string, string> = {
    [`${META_PREFIX}namespace`]: instance.namespace,
    [`${META_PREFIX}service`]: instance.service,
    [`${META_PREFIX}instance_id`]: instance.instanceId,
    [`${META_PREFIX}host`]: instance.host,
    [`${META_PREFIX}port`]: String(instance.port),
    [`${META_PREFIX}zone`]: instance.zone,
    [`${META_PREFIX}region`]: instance.region ?? '',
    [`${META_PREFIX}group`]: instance.group,
    [`${META_PREFIX}status`]: instance.status,
  };
  for (const key of Object.keys(instance.metadata).sort()) {
    const name = METADATA_PREFIX + sanitizeLabelName(key);
    if (!Object.hasOwn(labels, name)) labels[name] = instance.metadata[key]!;
  }
  return labels;
}

/** One instance's target group, as JSON, with what a selection filters it on. */
export interface TargetGroupPart {
  group: string;
  zone: string;
  json: string;
}

/** A service's part of the answer: its instances' groups, each alone and all of them joined. */
export interface ServiceTargetGroups {
  parts: readonly TargetGroupPart[];
  /** Every part's JSON joined by commas ('' when the service has no target). */
  json: string;
}

/**
 * The target groups of a view: one per instance that is UP and served (lease live, or held by
 * an eviction guard, as the native listing serves it), in instance id order.
 */
export function encodeTargetGroups(view: ServiceView): ServiceTargetGroups {
  const parts: TargetGroupPart[] = [];
  for (const instance of view.instances) {
    if (instance.status !== 'UP') continue;
    const json = JSON.stringify({ targets: [targetAddress(instance.host, instance.port)], labels: labelsOf(instance) });
    parts.push({ group: instance.group, zone: instance.zone, json });
  }
  return { parts, json: parts.map((part) => part.json).join(',') };
}

/** What a request keeps of each service's groups: one group, one zone, or both (null: any). */
export interface PartFilter {
  group: string | null;
  zone: string | null;
}

/**
 * The answer: the JSON array of the selected services' groups. Without a group or zone filter
 * each service costs one string copy (its joined part); with one, only the parts' JSON is
 * picked, never re-encoded.
 */
export function joinTargetGroups(services: readonly ServiceTargetGroups[], filter: PartFilter): string {
  const pieces: string[] = [];
  const unfiltered = filter.group === null && filter.zone === null;
  for (const service of services) {
    if (unfiltered) {
      if (service.json !== '') pieces.push(service.json);
      continue;
    }
    for (const part of service.parts) {
      if ((filter.group === null || part.group === filter.group) && (filter.zone === null || part.zone === filter.zone)) pieces.push(part.json);
    }
  }
  return `[${pieces.join(',')}]`;
}
