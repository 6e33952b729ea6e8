import { describe, expect, it } from 'vitest';
import type { InstanceView } from '../../../src/registry/view.js';
import type { ServiceView } from '../../../src/views/service-views.js';
import {
  ASSEMBLY_STEP_PARTS,
  assemblingTargetGroups,
  encodeTargetGroups,
  joinTargetGroups,
  labelsOf,
  sanitizeLabelName,
  targetAddress,
  targetGroupJson,
  targetGroupPieces,
} from '../../../src/prometheus/target-groups.js';
import { fakeInstance } from '../../support/fake-http.js';

/** An instance view: the client's instance object plus the view's own fields. */
function instance(instanceId: string, extra: Partial<InstanceView> = {}): InstanceView {
  return { ...fakeInstance(instanceId), group: 'DEFAULT_GROUP', region: null, ...extra };
}

function view(instances: InstanceView[]): ServiceView {
  return { namespace: 'default', service: 'orders', revision: 1, builtAtMs: 0, served: [], instances };
}

describe('sanitizeLabelName', () => {
  it.each([
    ['version', 'version'],
    ['prometheus.io/port', 'prometheus_io_port'],
    ['metrics-path', 'metrics_path'],
    ['A_b9', 'A_b9'],
    ['9lives', '9lives'],
    ['key with spaces', 'key_with_spaces'],
    // One `_` per character, as Go's regexp replaces one rune at a time.
    ['zoné', 'zon_'],
    ['日本', '__'],
    ['😀', '_'],
    ['$', '_'],
  ])('%s -> %s', (key, label) => {
    expect(sanitizeLabelName(key)).toBe(label);
  });
});

describe('targetAddress', () => {
  it('joins host and port, with brackets around an IPv6 address', () => {
    expect(targetAddress('10.0.0.1', 80)).toBe('10.0.0.1:80');
    expect(targetAddress('orders.internal', 8080)).toBe('orders.internal:8080');
    expect(targetAddress('::1', 9090)).toBe('[::1]:9090');
    expect(targetAddress('fe80::1', 1)).toBe('[fe80::1]:1');
  });
});

/** The labels of an instance as Prometheus reads them: from the JSON of its target group. */
function labelsSent(view: InstanceView): Record<string, string> {
  return (JSON.parse(targetGroupJson(view)) as { labels: Record<string, string> }).labels;
}

describe('labels', () => {
  it('sets the fixed labels and one label per metadata key', () => {
    const labels = labelsSent(
      instance('i-1', { zone: 'eu-1a', region: 'eu', group: 'blue', metadata: { 'prometheus.io/path': '/stats', version: '1.2' } }),
    );
    expect(labels).toEqual({
      __meta_registry_namespace: 'default',
      __meta_registry_service: 'orders',
      __meta_registry_instance_id: 'i-1',
      __meta_registry_host: '10.0.0.1',
      __meta_registry_port: '8080',
      __meta_registry_zone: 'eu-1a',
      __meta_registry_region: 'eu',
      __meta_registry_group: 'blue',
      __meta_registry_status: 'UP',
      __meta_registry_metadata_prometheus_io_path: '/stats',
      __meta_registry_metadata_version: '1.2',
    });
    // Every name is one Prometheus accepts.
    for (const name of Object.keys(labels)) expect(name).toMatch(/^[a-zA-Z_][a-zA-Z0-9_]*$/);
  });

  it('gives an empty region when the zone maps to none', () => {
    expect(labelsSent(instance('i-1'))['__meta_registry_region']).toBe('');
  });

  it('keeps the value of the first key in sorted order when two keys sanitise alike, whatever order they came in', () => {
    const one = labelsOf(instance('i-1', { metadata: { 'a.b': 'dot', 'a-b': 'dash', 'a/b': 'slash' } }));
    const other = labelsOf(instance('i-1', { metadata: { 'a/b': 'slash', 'a.b': 'dot', 'a-b': 'dash' } }));
    expect(one.filter(([name]) => name === '__meta_registry_metadata_a_b')).toEqual([['__meta_registry_metadata_a_b', 'dash']]); // '-' sorts first
    expect(other).toEqual(one);
  });

  it('never lets a metadata key reach a fixed label', () => {
    const labels = labelsSent(instance('i-1', { metadata: JSON.parse('{"__proto__":"x","status":"DOWN"}') as Record<string, string> }));
    expect(labels['__meta_registry_status']).toBe('UP');
    expect(labels['__meta_registry_metadata_status']).toBe('DOWN');
    expect(labels['__meta_registry_metadata___proto__']).toBe('x');
  });

  it('writes the same JSON as JSON.stringify of the group, whatever the values hold', () => {
    const values = ['plain', 'quote " and backslash \\', 'new\nline\ttab\u0000nul', 'café 日本 😀', '\u2028\u2029', '</script>', ''];
    for (const value of values) {
      const view = instance(value === '' ? 'i' : value.slice(0, 10).replace(/[\s/?#%\\]/g, '_'), { host: 'h', metadata: { k: value, 'k.2': value } });
      const labels = Object.fromEntries(labelsOf(view));
      expect(targetGroupJson(view)).toBe(JSON.stringify({ targets: ['h:8080'], labels }));
    }
  });
});

describe('encodeTargetGroups', () => {
  it('is one group of one target per UP instance, in the view order', () => {
    const encoded = encodeTargetGroups(
      view([instance('a', { port: 1 }), instance('b', { status: 'DOWN' }), instance('c', { host: '::1', port: 3, zone: 'z' })]),
    );
    const groups = JSON.parse(`[${encoded.bytes.toString()}]`) as { targets: string[]; labels: Record<string, string> }[];
    expect(groups.map((group) => group.targets)).toEqual([['10.0.0.1:1'], ['[::1]:3']]);
    expect(groups.map((group) => group.labels['__meta_registry_instance_id'])).toEqual(['a', 'c']);
    expect(encoded.parts.map((part) => [part.group, part.zone])).toEqual([
      ['DEFAULT_GROUP', ''],
      ['DEFAULT_GROUP', 'z'],
    ]);
    // Each part is its own group's JSON, a view of the joined bytes.
    expect(encoded.parts.map((part) => JSON.parse(part.bytes.toString()))).toEqual(groups);
    expect(encoded.parts[1]!.bytes.buffer).toBe(encoded.bytes.buffer);
  });

  it('cuts the parts at the right bytes when labels hold characters of several bytes', () => {
    const encoded = encodeTargetGroups(
      view([instance('a', { metadata: { note: 'café 日本 😀' } }), instance('b', { metadata: { 'zoné': 'ü' } }), instance('c')]),
    );
    const parsed = encoded.parts.map((part) => JSON.parse(part.bytes.toString()) as { labels: Record<string, string> });
    expect(parsed.map((group) => group.labels['__meta_registry_instance_id'])).toEqual(['a', 'b', 'c']);
    expect(parsed[0]!.labels['__meta_registry_metadata_note']).toBe('café 日本 😀');
    expect(parsed[1]!.labels['__meta_registry_metadata_zon_']).toBe('ü');
  });

  it('is empty for a service with no UP instance', () => {
    expect(encodeTargetGroups(view([instance('a', { status: 'STARTING' })]))).toEqual({ parts: [], bytes: Buffer.alloc(0) });
    expect(encodeTargetGroups(view([]))).toEqual({ parts: [], bytes: Buffer.alloc(0) });
  });
});

describe('assemblingTargetGroups', () => {
  it('pauses every ASSEMBLY_STEP_PARTS parts, and assembles what JSON.stringify of the groups would', () => {
    const count = ASSEMBLY_STEP_PARTS * 2 + 5;
    const instances = Array.from({ length: count }, (_, i) => instance(`i-${i}`, { port: 1 + i, zone: i % 2 ? 'a' : 'b' }));
    const encoded = instances.map((one) => Buffer.from(targetGroupJson(one)));
    const steps = assemblingTargetGroups(instances, encoded);
    let pauses = 0;
    let step = steps.next();
    while (!step.done) {
      pauses += 1;
      step = steps.next();
    }
    expect(pauses).toBe(2);
    const groups = step.value;
    expect(groups.bytes.equals(encodeTargetGroups(view(instances)).bytes)).toBe(true);
    expect(JSON.parse(`[${groups.bytes.toString()}]`)).toEqual(instances.map((one) => JSON.parse(targetGroupJson(one))));
    expect(groups.parts.map((part) => part.zone)).toEqual(instances.map((one) => one.zone));
    expect(groups.parts.map((part) => part.bytes.toString())).toEqual(encoded.map((bytes) => bytes.toString()));
  });
});

describe('joinTargetGroups', () => {
  const orders = encodeTargetGroups(
    view([instance('a', { zone: 'z1' }), instance('b', { zone: 'z2', group: 'blue' }), instance('c', { zone: 'z1', group: 'blue' })]),
  );
  const empty = encodeTargetGroups(view([]));
  const ids = (json: Buffer) => (JSON.parse(json.toString()) as { labels: Record<string, string> }[]).map((group) => group.labels['__meta_registry_instance_id']);

  it('concatenates the services in the order given, skipping empty ones', () => {
    const billing = encodeTargetGroups({ ...view([instance('x', { service: 'billing' })]), service: 'billing' });
    const json = joinTargetGroups([empty, orders, empty, billing], { group: null, zone: null });
    expect(ids(json)).toEqual(['a', 'b', 'c', 'x']);
    expect(joinTargetGroups([], { group: null, zone: null }).toString()).toBe('[]');
    expect(joinTargetGroups([empty], { group: null, zone: null }).toString()).toBe('[]');
  });

  it('keeps one group, one zone, or both', () => {
    expect(ids(joinTargetGroups([orders], { group: 'blue', zone: null }))).toEqual(['b', 'c']);
    expect(ids(joinTargetGroups([orders], { group: null, zone: 'z1' }))).toEqual(['a', 'c']);
    expect(ids(joinTargetGroups([orders], { group: 'blue', zone: 'z1' }))).toEqual(['c']);
    expect(ids(joinTargetGroups([orders], { group: 'green', zone: null }))).toEqual([]);
  });
});

describe('targetGroupPieces', () => {
  const zones = ['z1', 'z1', 'z2', 'z1', 'z2', 'z2', 'z1'];
  const orders = encodeTargetGroups(
    view(zones.map((zone, i) => instance(`o-${i}`, { zone, group: i % 3 === 0 ? 'blue' : 'DEFAULT_GROUP', metadata: { note: `é ${i} 日本` } }))),
  );
  const billing = encodeTargetGroups({ ...view([instance('b-1', { service: 'billing', zone: 'z2' }), instance('b-2', { service: 'billing', zone: 'z1' })]), service: 'billing' });
  const empty = encodeTargetGroups(view([]));
  const services = [empty, orders, empty, billing];

  /** The join as it was written before the answer was sent in pieces: one piece per part, copied into one buffer. */
  function oldJoin(selected: typeof services, filter: { group: string | null; zone: string | null }): Buffer {
    const pieces: Buffer[] = [Buffer.from('[')];
    const add = (piece: Buffer) => {
      if (pieces.length > 1) pieces.push(Buffer.from(','));
      pieces.push(piece);
    };
    for (const service of selected) {
      if (filter.group === null && filter.zone === null) {
        if (service.bytes.length > 0) add(service.bytes);
        continue;
      }
      for (const part of service.parts) if ((filter.group === null || part.group === filter.group) && (filter.zone === null || part.zone === filter.zone)) add(part.bytes);
    }
    pieces.push(Buffer.from(']'));
    return Buffer.concat(pieces);
  }

  it.each([
    [null, null],
    [null, 'z1'],
    [null, 'z2'],
    ['blue', null],
    ['blue', 'z1'],
    ['green', null],
    [null, 'nowhere'],
  ])('are the bytes of the old join, with their exact length, for group %s and zone %s', (group, zone) => {
    const filter = { group, zone };
    const { chunks, bytes } = targetGroupPieces(services, filter);
    const joined = Buffer.concat(chunks);
    expect(joined.equals(oldJoin(services, filter))).toBe(true);
    expect(bytes).toBe(joined.length);
    expect(joinTargetGroups(services, filter).equals(joined)).toBe(true);
    expect(Array.isArray(JSON.parse(joined.toString()))).toBe(true);
  });

  it('are views of the shared buffers, never copies, one per run of consecutive matching groups', () => {
    const unfiltered = targetGroupPieces(services, { group: null, zone: null });
    // [, orders, comma, billing, ]
    expect(unfiltered.chunks).toHaveLength(5);
    expect(unfiltered.chunks[1]).toBe(orders.bytes);
    expect(unfiltered.chunks[3]).toBe(billing.bytes);
    const z1 = targetGroupPieces([orders], { group: null, zone: 'z1' });
    // Runs o-0..o-1, o-3, o-6: three pieces and two commas between the brackets.
    expect(z1.chunks).toHaveLength(2 + 3 + 2);
    for (const piece of z1.chunks.slice(1, -1)) expect(piece.buffer).toBe(orders.bytes.buffer);
    expect(JSON.parse(`[${z1.chunks[1]!.toString()}]`)).toHaveLength(2);
  });
});
