import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { resolveConfig, type RegistryConfig } from '../../src/config/load.js';
import { decideStartup, startupFacts } from '../../src/security/startup-policy.js';

/** What the examples' environment gives every peer: a cluster secret and a token list. */
const SECRETS = {
  REGISTRY_CLUSTER_SECRET: 'f'.repeat(64),
  REGISTRY_TOKENS: JSON.stringify([{ name: 'ops', token: 'an-ops-token-of-some-length', namespaces: ['*'], scopes: ['read', 'write', 'admin'] }]),
};

/** Whether a peer with this configuration starts (on 0.0.0.0, as in the examples). */
const starts = (config: RegistryConfig): boolean => decideStartup(startupFacts(config)).start;

const read = (path: string) => readFileSync(new URL(`../../deploy/multi-region/${path}`, import.meta.url), 'utf8');

describe('the multi-region deployment examples', () => {
  it('ship a valid two-region cluster file', () => {
    const file = JSON.parse(read('cluster.json')) as { peers: { id: string; region: string }[] };
    expect(new Set(file.peers.map((peer) => peer.region))).toEqual(new Set(['eu', 'us']));
    for (const peer of file.peers) {
      const config = resolveConfig(file, {}, { id: peer.id, host: '0.0.0.0', port: '8761' });
      expect(config.profile).toBe('wan');
      expect(config.self.region).toBe(peer.region);
    }
  });

  it('pass the cluster secret and the tokens to every peer, without which they would refuse to start', () => {
    const compose = read('docker-compose.yml');
    expect(compose).toContain('REGISTRY_CLUSTER_SECRET: ${REGISTRY_CLUSTER_SECRET:?');
    expect(compose).toContain('REGISTRY_TOKENS: ${REGISTRY_TOKENS:?');
    for (const region of ['eu', 'us']) {
      const manifest = read(`kubernetes/region-${region}.yaml`);
      expect(manifest).toContain('secretKeyRef: { name: registry-secrets, key: cluster-secret }');
      expect(manifest).toContain('secretKeyRef: { name: registry-secrets, key: tokens }');
    }
    const file = JSON.parse(read('cluster.json')) as unknown;
    expect(starts(resolveConfig(file, {}, { id: 'eu-a', host: '0.0.0.0', port: '8761' }))).toBe(false);
    expect(starts(resolveConfig(file, SECRETS, { id: 'eu-a', host: '0.0.0.0', port: '8761' }))).toBe(true);
  });

  it('start every compose service as a peer of the cluster file, on its region network and wan', () => {
    const compose = read('docker-compose.yml');
    const file = JSON.parse(read('cluster.json')) as { peers: { id: string; region: string }[] };
    for (const peer of file.peers) {
      const block = compose.slice(compose.indexOf(`  ${peer.id}:\n`));
      expect(block).toContain(`REGISTRY_ID: ${peer.id} }`);
      expect(block.slice(0, block.indexOf('ports:'))).toContain(`networks: [${peer.region}, wan]`);
    }
  });

  it('give the Kubernetes pods ids that the cluster file lists', () => {
    const configMap = read('kubernetes/configmap.yaml');
    const json = configMap.slice(configMap.indexOf('{'), configMap.lastIndexOf('}') + 1);
    const file = JSON.parse(json) as { peers: { id: string; url: string; region: string }[] };
    for (const region of ['eu', 'us']) {
      const manifest = read(`kubernetes/region-${region}.yaml`);
      const replicas = Number(/replicas: (\d+)/.exec(manifest)?.[1]);
      expect(manifest).toContain(`serviceName: registry-${region}`);
      for (let ordinal = 0; ordinal < replicas; ordinal++) {
        const id = `registry-${region}-${ordinal}`;
        const peer = file.peers.find((p) => p.id === id);
        expect(peer, id).toBeDefined();
        expect(peer!.url).toBe(`http://${id}.registry-${region}:8761`);
        expect(resolveConfig(file, {}, { id, host: '0.0.0.0', port: '8761' }).self.region).toBe(region);
      }
    }
  });
});
