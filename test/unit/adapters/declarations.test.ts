import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { addPeerOptions } from '../../../src/cli/peer-options.js';
import { ConfigError, envNames, resolveConfig, type ConfigFlags } from '../../../src/config/load.js';
import type { ListenerConfig } from '../../../src/config/listener-settings.js';
import { renderConfigReference } from '../../../src/config/reference.js';
import { registeredThrough } from '../../../src/metrics/protocols-view.js';
import { protocolTarget } from '../../../src/peer.js';
import { startProtocolListeners } from '../../../src/protocol-listeners.js';
import { silentLogger } from '../../../src/log/logger.js';
import { createTestNode } from '../../support/node.js';
import { createTestServer, type TestServer } from '../../support/server.js';
import { pigeon, type PigeonConfig } from './pigeon/declaration.js';

/**
 * Adding a protocol is one folder plus one line (docs/architecture.md, "Adding a protocol"):
 * a fake protocol, `pigeon`, declared in its folder (./pigeon/declaration.ts) as a real one is,
 * is added to LISTENER_ADAPTERS (the one line: the mock below appends it to the real list) and
 * gets, with no other edit, its section of the file and its port from flag, environment or
 * file, its CLI flag, its rows in the configuration reference, its listener started with the
 * peer's, its "port in use" line, and its row in the protocols view and the dashboard's filter.
 * The real adapters' flags and sections still read as they did before their declarations.
 */

// The one line: the real list, plus the new protocol's declaration.
vi.mock('../../../src/adapters/listeners.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../src/adapters/listeners.js')>();
  const { pigeonDeclaration } = await import('./pigeon/declaration.js');
  return { ...real, LISTENER_ADAPTERS: [...real.LISTENER_ADAPTERS, pigeonDeclaration] };
});

const flagsOf = (argv: string[]): ConfigFlags => addPeerOptions(new Command().exitOverride()).parse(argv, { from: 'user' }).opts<ConfigFlags>();
const pigeonOf = (config: { protocols: unknown }) => (config.protocols as Record<string, PigeonConfig>).pigeon;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
  pigeon.starts.length = 0;
});

describe('a new protocol is one folder and one line', () => {
  it('gets its section of the file, its port from flag, environment or file, and its errors', () => {
    expect(pigeonOf(resolveConfig({}, {}, {}))).toEqual({ port: null, namespaces: ['default'], coos: 3 });
    expect(pigeonOf(resolveConfig({ pigeon: { port: 7000, coos: 5, namespaces: ['team-a'] } }, {}, {}))).toEqual({ port: 7000, namespaces: ['team-a'], coos: 5 });
    expect(pigeonOf(resolveConfig({ pigeon: { port: 7000 } }, { REGISTRY_PIGEON_PORT: '7100' }, {}))?.port).toBe(7100);
    expect(pigeonOf(resolveConfig({ pigeon: { port: 7000 } }, { REGISTRY_PIGEON_PORT: '7100' }, flagsOf(['--pigeon-port', '7200'])))?.port).toBe(7200);
    const refused = (file: Record<string, unknown>, env: Record<string, string> = {}) => {
      try {
        resolveConfig(file, env, {});
      } catch (error) {
        return error instanceof ConfigError ? error.message : String(error);
      }
      return 'accepted';
    };
    expect(refused({ pigeon: { coos: 11 } })).toBe('pigeon.coos: must be an integer from 1 to 10 (got 11)');
    expect(refused({ pigeon: { wings: 2 } })).toMatch(/^pigeon\.wings: is not a known setting/);
    expect(refused({}, { REGISTRY_PIGEON_PORT: 'soon' })).toMatch(/^REGISTRY_PIGEON_PORT: /);
    expect(envNames).toMatchObject({ pigeonPort: 'REGISTRY_PIGEON_PORT' });
  });

  it('gets its CLI flag with its environment variable in the help', () => {
    const option = addPeerOptions(new Command()).options.find((candidate) => candidate.long === '--pigeon-port');
    expect(option?.description).toBe('serve carrier pigeons on this port; off by default (env REGISTRY_PIGEON_PORT)');
    expect(flagsOf(['--pigeon-port', '7000'])).toMatchObject({ pigeonPort: '7000' });
  });

  it('gets its rows, its flag and its name in the configuration reference', () => {
    const reference = renderConfigReference();
    expect(reference).toContain('| `--pigeon-port` | `REGISTRY_PIGEON_PORT` |');
    expect(reference).toContain('| `pigeon.coos` | count | 3 | 1 to 10: coos per answer |');
    expect(reference).toMatch(/a peer can serve DNS, gRPC xDS, a Consul-compatible HTTP API, the Nacos naming API and carrier pigeons,/);
  });

  it('has its listener started with the others when its port is set, its code not even loaded when not', async () => {
    const { node } = await createTestNode();
    const loadsBefore = pigeon.loads;
    expect(await startProtocolListeners({ node, config: node.config, logger: silentLogger })).toEqual([]);
    expect(pigeon.loads).toBe(loadsBefore);
    const config = resolveConfig({ pigeon: { port: 7000 } }, {}, {});
    const listeners = await startProtocolListeners({ node, config, logger: silentLogger });
    expect(listeners.map((listener) => listener.name)).toEqual(['pigeon']);
    expect(pigeon.starts).toEqual([{ port: 7000 }]);
  });

  it('names its setting when its port is in use', () => {
    const config = resolveConfig({ pigeon: { port: 7000 } }, {}, {});
    expect(protocolTarget(config, { port: 7000 })).toEqual({
      what: 'the pigeon loft',
      host: '127.0.0.1',
      port: 7000,
      portSetting: '--pigeon-port (REGISTRY_PIGEON_PORT, or `pigeon.port` in the config file)',
    });
    expect(protocolTarget(config, { port: 7001 })).toBeNull();
  });

  it('has its row in the protocols view and its choice in the dashboard, and its records recognised', async () => {
    server = await createTestServer({ file: { pigeon: { port: 7000 } } });
    const body = (await server.app.inject({ url: '/v1/dashboard/protocols' })).json() as {
      listeners: Array<Record<string, unknown>>;
      registering: Array<Record<string, unknown>>;
    };
    expect(body.listeners.find((listener) => listener.protocol === 'pigeon')).toEqual({ protocol: 'pigeon', label: 'Carrier pigeon', on: true, address: '127.0.0.1:7000', transport: 'IPoAC' });
    expect(body.registering).toContainEqual({ protocol: 'pigeon', label: 'Carrier pigeon' });
    expect(registeredThrough({ host: '10.0.0.1', port: 1, securePort: null, status: 'UP', weight: 1, zone: '', metadata: { 'pigeon.ring': 'r-1' } })).toBe('pigeon');
  });
});

describe("each real adapter's declaration", () => {
  it.each(['dns', 'xds', 'consul', 'nacos'])('%s: its docs page exists and documents its flag; its metric families are in docs/metrics.md', async (name) => {
    const { readFileSync } = await import('node:fs');
    const { LISTENER_ADAPTERS } = await import('../../../src/adapters/listeners.js');
    const declaration = LISTENER_ADAPTERS.find((adapter) => adapter.name === name)!;
    expect(readFileSync(declaration.docs, 'utf8')).toContain(declaration.settings.flag);
    const metricsDoc = readFileSync('docs/metrics.md', 'utf8');
    for (const family of declaration.metrics) expect(metricsDoc).toContain(`\`${family}\``);
    expect(declaration.reference.rows.slice(0, 1).map((row) => row.field)).toEqual(['port']);
  });
});

describe('the files a protocol touches outside its folder', () => {
  it.each(['dns', 'xds', 'consul', 'nacos'])('%s: only its line in src/adapters/listeners.ts imports its folder', async (name) => {
    const { readdirSync, readFileSync } = await import('node:fs');
    const importsIt = new RegExp(`from '(?:\\.{1,2}/)+${name}/`);
    const files = (readdirSync('src', { recursive: true }) as string[]).filter((file) => file.endsWith('.ts') && !file.startsWith(`${name}/`));
    expect(files.filter((file) => importsIt.test(readFileSync(`src/${file}`, 'utf8'))).map((file) => `src/${file}`)).toEqual(['src/adapters/listeners.ts']);
  });
});

/** The real adapters' ports, as CONTRACT.md names them: flag, environment variable, file field. */
const REAL = [
  ['dns', '--dns-port', 'REGISTRY_DNS_PORT'],
  ['xds', '--xds-port', 'REGISTRY_XDS_PORT'],
  ['consul', '--consul-port', 'REGISTRY_CONSUL_PORT'],
  ['nacos', '--nacos-port', 'REGISTRY_NACOS_PORT'],
] as const;

describe("the existing adapters' flags and sections read as before", () => {
  it.each(REAL)('%s: %s beats %s, which beats the file; off by default', (name, flag, env) => {
    const section = (config: { protocols: unknown }) => (config.protocols as Record<string, ListenerConfig>)[name]!;
    expect(section(resolveConfig({}, {}, {})).port).toBeNull();
    expect(section(resolveConfig({ [name]: { port: 5001 } }, {}, {})).port).toBe(5001);
    expect(section(resolveConfig({ [name]: { port: 5001 } }, { [env]: '5002' }, {})).port).toBe(5002);
    expect(section(resolveConfig({ [name]: { port: 5001 } }, { [env]: '5002' }, flagsOf([flag, '5003']))).port).toBe(5003);
    expect(() => resolveConfig({}, {}, flagsOf([flag, 'x']))).toThrow(new RegExp(`^${flag}: `));
    expect(() => resolveConfig({ [name]: { nope: 1 } }, {}, {})).toThrow(new RegExp(`^${name}\\.nope: is not a known setting`));
  });

  it('keeps every default of every section', () => {
    const { protocols } = resolveConfig({}, {}, {});
    const { pigeon: _fake, ...real } = protocols as unknown as Record<string, unknown>;
    expect(real).toEqual({
      dns: { port: null, namespaces: ['default'], domain: 'registry.', ttlSeconds: 5, allowFrom: ['127.0.0.0/8', '::1/128'], maxUdpPayloadBytes: 1232, udpRateLimitPerSecond: 2000, udpRateLimitBurst: 4000 },
      xds: { port: null, namespaces: ['default'], lbPolicy: 'auto', pushCoalesceMs: 50, allowAnonymous: false, streamsMax: 10_000, resourceNamesPerPrincipalMax: 100_000 },
      consul: { port: null, namespaces: ['default'], defaultWaitMs: 300_000, maxWaitMs: 600_000, blockingQueriesMax: 10_000, ttlSweepIntervalMs: 1_000, allowGetWrites: false },
      nacos: { port: null, namespaces: ['default'], grpcPort: null, pushTargetsMax: 10_000, pushTargetsPerSourceMax: 256, pushSubscriptionTtlMs: 30_000, pushRetryIntervalMs: 1_000, pushRetriesMax: 3 },
    });
    expect(resolveConfig({ nacos: { port: 8848 } }, {}, {}).protocols.nacos.grpcPort).toBe(9848);
    expect(protocolTarget(resolveConfig({ nacos: { port: 8848 } }, {}, {}), { port: 9848 })).toMatchObject({
      what: 'the Nacos gRPC listener',
      portSetting: '--nacos-port (REGISTRY_NACOS_PORT, or `nacos.port` in the config file; gRPC: `nacos.grpcPort`, default port + 1000)',
    });
  });

  it('keeps the flags in the help, in the order they were', () => {
    const longs = addPeerOptions(new Command()).options.map((option) => option.long);
    expect(longs.slice(longs.indexOf('--tls-ca') + 1)).toEqual(['--dns-port', '--xds-port', '--consul-port', '--nacos-port', '--pigeon-port', '--insecure']);
  });
});
