import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../../src/config/load.js';
import { CONSUL_DEFAULTS } from '../../../src/consul/declaration.js';
import { NACOS_DEFAULTS } from '../../../src/nacos/declaration.js';
import { XDS_DEFAULTS } from '../../../src/xds/declaration.js';
import { configError } from '../../support/errors.js';
import exampleCluster from '../../../cluster.example.json' with { type: 'json' };


describe('resolveConfig', () => {
  it('runs one peer on 127.0.0.1:8761 with no configuration at all', () => {
    const config = resolveConfig(undefined, {}, {});
    expect(config).toMatchObject({ host: '127.0.0.1', port: 8761, dataDir: null, logLevel: 'info', profile: 'lan', seeds: [] });
    expect(config.self).toEqual({ id: 'peer-1', url: 'http://127.0.0.1:8761', region: 'default', zone: '' });
    expect(config.cluster).toMatchObject({
      heartbeatIntervalMs: 10_000,
      leaseDurationMs: 30_000,
      minLeaseDurationMs: 1_000,
      maxLeaseDurationMs: 600_000,
      evictionIntervalMs: 1_000,
    });
  });

  it('takes listen address, region and zone of the chosen peer from the cluster file', () => {
    const config = resolveConfig(exampleCluster, {}, { id: 'peer-b' });
    expect(config.self).toEqual({ id: 'peer-b', url: 'http://127.0.0.1:8762', region: 'local', zone: 'b' });
    expect(config).toMatchObject({ host: '127.0.0.1', port: 8762, clusterName: 'dev' });
    expect(config.seeds.map((peer) => peer.id)).toEqual(['peer-a', 'peer-c']);
  });

  it('lets flags beat the environment, which beats the file, which beats the profile', () => {
    const file = { port: 9000, logLevel: 'warn', cluster: { profile: 'local', leaseDurationMs: 4_000 } };
    expect(resolveConfig(file, {}, {})).toMatchObject({ port: 9000, logLevel: 'warn' });
    expect(resolveConfig(file, {}, {}).cluster).toMatchObject({ leaseDurationMs: 4_000, heartbeatIntervalMs: 1_000 });
    expect(resolveConfig(file, { REGISTRY_PORT: '9001', REGISTRY_LOG_LEVEL: 'debug' }, {})).toMatchObject({
      port: 9001,
      logLevel: 'debug',
    });
    expect(resolveConfig(file, { REGISTRY_PORT: '9001' }, { port: '9002', logLevel: 'error' })).toMatchObject({
      port: 9002,
      logLevel: 'error',
    });
    expect(resolveConfig({}, { REGISTRY_PROFILE: 'local' }, {}).cluster.leaseDurationMs).toBe(3_000);
    expect(resolveConfig({}, { REGISTRY_DATA_DIR: '/data' }, {}).dataDir).toBe('/data');
  });

  it('keeps the peer in memory by default and reads the storage settings, the sync policy layered', () => {
    expect(resolveConfig(undefined, {}, {}).storage).toEqual({
      syncPolicy: 'interval',
      syncIntervalMs: 200,
      snapshotIntervalMs: 600_000,
      snapshotLogBytes: 64 * 1024 * 1024,
      lockWaitMs: 3_000,
      retryIntervalMs: 5_000,
    });
    const file = { dataDir: '/var/lib/registry', storage: { syncPolicy: 'never', syncIntervalMs: 50 } };
    expect(resolveConfig(file, {}, {})).toMatchObject({ dataDir: '/var/lib/registry', storage: { syncPolicy: 'never', syncIntervalMs: 50 } });
    expect(resolveConfig(file, { REGISTRY_SYNC_POLICY: 'always' }, {}).storage.syncPolicy).toBe('always');
    expect(resolveConfig(file, { REGISTRY_SYNC_POLICY: 'always' }, { syncPolicy: 'interval' }).storage.syncPolicy).toBe('interval');
  });

  it('refuses an id that is not in a file that lists peers, naming the ids it has', () => {
    for (const [env, flags, field] of [
      [{}, { id: 'peer-z' }, '--id'],
      [{ REGISTRY_ID: 'peer-z' }, {}, 'REGISTRY_ID'],
    ] as const) {
      expect(configError(exampleCluster, env, flags).message).toBe(
        `${field}: peer-z is not one of the peers in the cluster file (peer-a, peer-b, peer-c); pass one of them, or, to join the cluster as a new peer, give its own address too with --port or --url`,
      );
    }
    expect(() => resolveConfig({ ...exampleCluster, id: 'peer-z' }, {}, {})).toThrow(/^id: peer-z is not one of the peers/);
  });

  it('lets an unlisted id join when it is given an address of its own, and any id without a file', () => {
    expect(resolveConfig(exampleCluster, {}, { id: 'peer-z', url: 'http://127.0.0.1:8799' }).self.url).toBe('http://127.0.0.1:8799');
    expect(resolveConfig(exampleCluster, { REGISTRY_PORT: '8799' }, { id: 'peer-z' }).port).toBe(8799);
    expect(resolveConfig({}, {}, { id: 'peer-z' }).self).toMatchObject({ id: 'peer-z', url: 'http://127.0.0.1:8761' });
  });

  it('lets a peer that is not in the file join with the file as seeds', () => {
    const config = resolveConfig(exampleCluster, {}, { id: 'peer-d', port: '8764' });
    expect(config.self.url).toBe('http://127.0.0.1:8764');
    expect(config.seeds).toHaveLength(3);
  });

  it.each([
    [{ cluster: { leaseDurationMs: 'soon' } }, {}, {}, 'cluster.leaseDurationMs', 'must be an integer'],
    [{ cluster: { leaseDurationMs: 100 } }, {}, {}, 'cluster.leaseDurationMs', 'from 500'],
    [{ cluster: { heartbeatIntervalMs: 40_000 } }, {}, {}, 'cluster.heartbeatIntervalMs', 'below cluster.leaseDurationMs'],
    [{ cluster: { minLeaseDurationMs: 50_000 } }, {}, {}, 'cluster.leaseDurationMs', 'between'],
    [{ cluster: { leaseDuration: 1 } }, {}, {}, 'cluster.leaseDuration', 'not a known setting'],
    [{ cluster: { profile: 'fast' } }, {}, {}, 'cluster.profile', 'lan, wan, local'],
    [{ port: 70_000 }, {}, {}, 'port', 'from 0 to 65535'],
    [{}, { REGISTRY_PORT: 'eighty' }, {}, 'REGISTRY_PORT', 'from 0 to 65535'],
    [{}, {}, { port: '-1' }, '--port', 'from 0 to 65535'],
    [{}, {}, { logLevel: 'loud' }, '--log-level', 'must be one of'],
    [{ peers: {} }, {}, {}, 'peers', 'must be an array'],
    [{ peers: [{ id: 'a' }] }, {}, {}, 'peers[0].url', 'is required'],
    [{ peers: [{ id: 'a', url: 'ftp://x' }] }, {}, {}, 'peers[0].url', 'http or https'],
    [{ peers: [{ id: 'a', url: 'http://x:1/path' }] }, {}, {}, 'peers[0].url', 'no path'],
    [{ peers: [{ id: 'a b', url: 'http://x:1' }] }, {}, {}, 'peers[0].id', 'letters, digits'],
    [{ peers: [{ id: 'a', url: 'http://x:1' }, { id: 'a', url: 'http://x:2' }] }, {}, {}, 'peers[1].id', 'duplicates'],
    [exampleCluster, {}, {}, 'id', 'pass --id'],
    [{ colour: 'blue' }, {}, {}, 'colour', 'not a known setting'],
    [[1, 2], {}, {}, 'config', 'JSON object'],
    [{ limits: { bodyMaxBytes: 1 } }, {}, {}, 'limits.bodyMaxBytes', 'from 1024'],
    [{ cluster: { renewalThresholdRatio: 1.5 } }, {}, {}, 'cluster.renewalThresholdRatio', 'from 0 to 1'],
    [{ services: [] }, {}, {}, 'services', 'keyed by service name'],
    [{ services: { 'a/b/c': {} } }, {}, {}, 'services.a/b/c', 'namespace/service'],
    [{ services: { orders: { protectThresholdRatio: 2 } } }, {}, {}, 'services.orders.protectThresholdRatio', 'from 0 to 1'],
    [{ services: { orders: { weight: 2 } } }, {}, {}, 'services.orders.weight', 'not a known setting'],
    [{ storage: { syncPolicy: 'sometimes' } }, {}, {}, 'storage.syncPolicy', 'always, interval, never'],
    [{}, { REGISTRY_SYNC_POLICY: 'fast' }, {}, 'REGISTRY_SYNC_POLICY', 'always, interval, never'],
    [{}, {}, { syncPolicy: 'x' }, '--sync-policy', 'always, interval, never'],
    [{ storage: { syncIntervalMs: 0 } }, {}, {}, 'storage.syncIntervalMs', 'from 1'],
    [{ storage: { snapshotLogBytes: 10 } }, {}, {}, 'storage.snapshotLogBytes', 'from 65536'],
    [{ storage: { fsync: true } }, {}, {}, 'storage.fsync', 'not a known setting'],
    [{ storage: 'fast' }, {}, {}, 'storage', 'must be an object'],
  ])('refuses %j (env %j, flags %j) naming %s', (file, env, flags, field, problem) => {
    const caught = configError(file, env, flags);
    expect(caught.field).toBe(field);
    expect(caught.message).toContain(problem);
  });
});

describe('protocol listeners (dns, xds, consul)', () => {
  it('are off by default and serve the default namespace', () => {
    const config = resolveConfig({}, {}, {});
    expect(config.protocols).toEqual({
      dns: { port: null, namespaces: ['default'], domain: 'registry.', ttlSeconds: 5, allowFrom: ['127.0.0.0/8', '::1/128'], maxUdpPayloadBytes: 1232, udpRateLimitPerSecond: 2_000, udpRateLimitBurst: 4_000 },
      xds: { port: null, namespaces: ['default'], pushCoalesceMs: 50, ...XDS_DEFAULTS },
      consul: { port: null, namespaces: ['default'], ...CONSUL_DEFAULTS },
      nacos: { port: null, grpcPort: null, namespaces: ['default'], ...NACOS_DEFAULTS },
    });
  });

  it('take their port from a flag over the environment over the file', () => {
    const file = { dns: { port: 5300 }, xds: { port: 5400, namespaces: ['default', 'team-a'] }, consul: { port: 5500 } };
    const config = resolveConfig(file, { REGISTRY_XDS_PORT: '6400', REGISTRY_CONSUL_PORT: '6500' }, { consulPort: '7500' });
    expect(config.protocols.dns.port).toBe(5300);
    expect(config.protocols.xds).toEqual({ port: 6400, namespaces: ['default', 'team-a'], pushCoalesceMs: 50, ...XDS_DEFAULTS });
    expect(config.protocols.consul.port).toBe(7500);
  });

  it('read the DNS settings: domain lower-cased with its dot, networks as CIDR', () => {
    const config = resolveConfig({ dns: { domain: 'Svc.Example.COM', ttlSeconds: 0, allowFrom: ['10.0.0.0/8', '::1', '192.168.1.7'], maxUdpPayloadBytes: 4096 } }, {}, {});
    expect(config.protocols.dns).toMatchObject({ domain: 'svc.example.com.', ttlSeconds: 0, allowFrom: ['10.0.0.0/8', '::1/128', '192.168.1.7/32'], maxUdpPayloadBytes: 4096 });
  });

  it('read the xDS balancing policy and push window from the file', () => {
    const config = resolveConfig({ xds: { lbPolicy: 'round_robin', pushCoalesceMs: 0 } }, {}, {});
    expect(config.protocols.xds).toMatchObject({ lbPolicy: 'round_robin', pushCoalesceMs: 0 });
  });

  it.each([
    [{ dns: { port: 70000 } }, {}, 'dns.port', 'integer from 0 to 65535'],
    [{}, { dnsPort: 'x' }, '--dns-port', 'integer from 0 to 65535'],
    [{ xds: { colour: 1 } }, {}, 'xds.colour', 'not a known setting'],
    [{ consul: { namespaces: [] } }, {}, 'consul.namespaces', 'non-empty array'],
    [{ consul: { maxWaitMs: 10 } }, {}, 'consul.maxWaitMs', 'integer between 1000 and 3600000'],
    [{ consul: { defaultWaitMs: 700_000 } }, {}, 'consul.defaultWaitMs', 'not be longer than consul.maxWaitMs'],
    [{ xds: { lbPolicy: 'random' } }, {}, 'xds.lbPolicy', 'auto, ring_hash, round_robin'],
    [{ xds: { allowAnonymous: 'yes' } }, {}, 'xds.allowAnonymous', 'true or false'],
    [{ xds: { streamsMax: 0 } }, {}, 'xds.streamsMax', 'from 1 to'],
    [{ xds: { resourceNamesPerPrincipalMax: 1.5 } }, {}, 'xds.resourceNamesPerPrincipalMax', 'integer'],
    [{ xds: { pushCoalesceMs: -1 } }, {}, 'xds.pushCoalesceMs', 'from 0 to 10000'],
    [{ dns: 'on' }, {}, 'dns', 'must be an object'],
    [{ dns: { domain: 'bad name.' } }, {}, 'dns.domain', 'must be a DNS name'],
    [{ dns: { domain: '' } }, {}, 'dns.domain', 'must be a DNS name'],
    [{ dns: { ttlSeconds: -1 } }, {}, 'dns.ttlSeconds', 'integer from 0 to 86400'],
    [{ dns: { ttlSeconds: 1.5 } }, {}, 'dns.ttlSeconds', 'integer from 0 to 86400'],
    [{ dns: { allowFrom: ['10.0.0.0/33'] } }, {}, 'dns.allowFrom', 'array of networks'],
    [{ dns: { allowFrom: ['not-an-address'] } }, {}, 'dns.allowFrom', 'array of networks'],
    [{ dns: { allowFrom: '127.0.0.1' } }, {}, 'dns.allowFrom', 'array of networks'],
    [{ dns: { maxUdpPayloadBytes: 100 } }, {}, 'dns.maxUdpPayloadBytes', 'integer from 512 to 65535'],
    [{ dns: { udpRateLimitPerSecond: -1 } }, {}, 'dns.udpRateLimitPerSecond', 'integer from 0 to 1000000'],
    [{ dns: { udpRateLimitBurst: 0 } }, {}, 'dns.udpRateLimitBurst', 'integer from 1 to 1000000'],
    [{ dns: { namespaces: ['Team', 'team'] } }, {}, 'dns.namespaces', 'differ only in case'],
  ])('refuse %j %j naming %s', (file, flags, field, problem) => {
    expect(() => resolveConfig(file, {}, flags)).toThrow(expect.objectContaining({ field, message: expect.stringContaining(problem) }));
  });
});
