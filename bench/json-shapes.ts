/**
 * JSON.stringify of the same Consul catalog entry (500 bytes) built two ways: an object literal
 * that starts with a spread of a helper's fields and then adds the rest, and the same fields
 * written out (what src/consul/payloads.ts does). In process, prints microseconds per entry.
 * `npx tsx bench/json-shapes.ts`
 */
const instance = { id: 'i-1', service: 'svc-1', host: '10.0.0.1', port: 8001, datacenter: 'dc1', tags: ['blue', 'green'], meta: { a: 'x', b: 'y' }, weights: { Passing: 1, Warning: 1 }, index: 5 };
type Instance = typeof instance;
const nodeFields = (i: Instance) => ({ ID: '', Node: i.host, Address: i.host, Datacenter: i.datacenter, TaggedAddresses: { lan: i.host, wan: i.host } });
const rest = (i: Instance) => ({ NodeMeta: {}, ServiceKind: '', ServiceID: i.id, ServiceName: i.service, ServiceTags: i.tags, ServiceAddress: i.host, ServiceTaggedAddresses: {}, ServiceWeights: i.weights, ServiceMeta: i.meta, ServicePort: i.port, ServiceEnableTagOverride: false, ServiceProxy: { MeshGateway: {}, Expose: {} }, ServiceConnect: {}, CreateIndex: i.index, ModifyIndex: i.index });
const shapes: Record<string, (i: Instance) => unknown> = {
  'spread, then fields': (i) => ({ ...nodeFields(i), ...rest(i) }),
  'spread, then literal fields': (i) => ({ ...nodeFields(i), NodeMeta: {}, ServiceKind: '', ServiceID: i.id, ServiceName: i.service, ServiceTags: i.tags, ServiceAddress: i.host, ServiceTaggedAddresses: {}, ServiceWeights: i.weights, ServiceMeta: i.meta, ServicePort: i.port, ServiceEnableTagOverride: false, ServiceProxy: { MeshGateway: {}, Expose: {} }, ServiceConnect: {}, CreateIndex: i.index, ModifyIndex: i.index }),
  'written out': (i) => ({ ID: '', Node: i.host, Address: i.host, Datacenter: i.datacenter, TaggedAddresses: { lan: i.host, wan: i.host }, NodeMeta: {}, ServiceKind: '', ServiceID: i.id, ServiceName: i.service, ServiceTags: i.tags, ServiceAddress: i.host, ServiceTaggedAddresses: {}, ServiceWeights: i.weights, ServiceMeta: i.meta, ServicePort: i.port, ServiceEnableTagOverride: false, ServiceProxy: { MeshGateway: {}, Expose: {} }, ServiceConnect: {}, CreateIndex: i.index, ModifyIndex: i.index }),
};
const COUNT = 20_000;
for (let round = 0; round < 3; round++) {
  for (const [name, shape] of Object.entries(shapes)) {
    const startedMs = performance.now();
    let bytes = 0;
    for (let n = 0; n < COUNT; n++) bytes += JSON.stringify(shape(instance)).length;
    console.log(`${name}: ${(((performance.now() - startedMs) / COUNT) * 1_000).toFixed(2)} us per entry (${bytes / COUNT} bytes)`);
  }
}
