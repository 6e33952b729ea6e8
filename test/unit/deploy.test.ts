import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { SECURITY_ENV } from '../../src/config/security.js';
import { envNames, resolveConfig } from '../../src/config/load.js';
import { buildServer } from '../../src/http/server.js';
import { createTestNode } from '../support/node.js';

/**
 * The deployment files under deploy/ are parsed and checked against what the peer really
 * accepts: the cluster file in the ConfigMap goes through the config loader with the
 * environment Kubernetes would give each pod, and the probe and metrics paths are real routes.
 */
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

type Doc = Record<string, any>;

function documents(path: string): Doc[] {
  const parsed = parseAllDocuments(read(path));
  for (const doc of parsed) expect(doc.errors, `${path}: ${doc.errors.join('; ')}`).toEqual([]);
  return parsed.map((doc) => doc.toJS() as Doc);
}

async function routes(): Promise<Set<string>> {
  const { node } = await createTestNode({ start: false });
  const found = new Set<string>();
  const app = await buildServer({ node, onRoute: (method, url) => found.add(`${method} ${url}`) });
  await app.ready();
  await app.close();
  return found;
}

/** Kubernetes' `$(VAR)` expansion of a container's env, in order. */
function expandEnv(
  env: { name: string; value?: string; valueFrom?: { secretKeyRef?: unknown } }[],
  pod: { name: string; namespace: string },
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of env) {
    // Values from a Secret are not the configuration loader's business (the security layer reads them).
    if (item.valueFrom?.secretKeyRef) continue;
    if (item.value === undefined) out[item.name] = item.name === 'POD_NAME' ? pod.name : pod.namespace;
    else out[item.name] = item.value.replace(/\$\((\w+)\)/g, (_, name: string) => out[name] ?? '');
  }
  return out;
}

describe('deploy/kubernetes/registry.yaml', () => {
  const docs = documents('deploy/kubernetes/registry.yaml');
  const find = (kind: string, name?: string) => docs.find((doc) => doc.kind === kind && (name === undefined || doc.metadata.name === name));

  it('holds well-formed objects of the kinds a StatefulSet deployment needs', () => {
    for (const doc of docs) {
      expect(typeof doc.apiVersion).toBe('string');
      expect(typeof doc.kind).toBe('string');
      expect(doc.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    }
    expect(docs.map((doc) => doc.kind).sort()).toEqual(['ConfigMap', 'Namespace', 'PodDisruptionBudget', 'Service', 'Service', 'StatefulSet']);
  });

  it('discovers peers through a headless service whose pod DNS names the cluster file lists', () => {
    const set = find('StatefulSet')!;
    const namespace = set.metadata.namespace as string;
    const headless = find('Service', set.spec.serviceName)!;
    expect(headless.spec.clusterIP).toBe('None');
    expect(headless.spec.publishNotReadyAddresses).toBe(true);
    const labels = set.spec.template.metadata.labels;
    expect(set.spec.selector.matchLabels).toEqual(labels);
    for (const service of docs.filter((doc) => doc.kind === 'Service')) {
      for (const [key, value] of Object.entries(service.spec.selector)) expect(labels[key]).toBe(value);
    }
    const file = JSON.parse(find('ConfigMap')!.data['cluster.json']);
    const peers = file.peers as { id: string; url: string }[];
    expect(peers).toHaveLength(set.spec.replicas);
    peers.forEach((peer, ordinal) => {
      expect(peer.id).toBe(`${set.metadata.name}-${ordinal}`);
      expect(new URL(peer.url).hostname).toBe(`${peer.id}.${headless.metadata.name}.${namespace}.svc.cluster.local`);
    });
  });

  it('gives every pod, and one scaled beyond the list, a configuration the peer accepts', () => {
    const set = find('StatefulSet')!;
    const container = set.spec.template.spec.containers[0];
    const file = JSON.parse(find('ConfigMap')!.data['cluster.json']);
    const known = [...Object.values(envNames), ...Object.values(SECURITY_ENV)];
    for (const item of container.env) {
      if (!item.name.startsWith('POD_')) expect(known, item.name).toContain(item.name);
    }
    // Peers listen on every interface of the pod: the cluster secret and the tokens come from a Secret.
    for (const name of Object.values(SECURITY_ENV)) {
      expect(container.env.find((item: Doc) => item.name === name)?.valueFrom?.secretKeyRef, name).toBeDefined();
    }
    for (let ordinal = 0; ordinal <= set.spec.replicas; ordinal++) {
      const pod = { name: `${set.metadata.name}-${ordinal}`, namespace: set.metadata.namespace };
      const env = expandEnv(container.env, pod);
      const config = resolveConfig(file, env, {});
      expect(config.self.id).toBe(pod.name);
      expect(config.self.url).toBe(`http://${pod.name}.registry-peers.${pod.namespace}.svc.cluster.local:8761`);
      expect(config.host).toBe('0.0.0.0');
      expect(config.port).toBe(container.ports[0].containerPort);
      // A listed pod has the other two as seeds; one beyond the list joins through all three.
      expect(config.seeds.length).toBe(ordinal < set.spec.replicas ? set.spec.replicas - 1 : set.spec.replicas);
    }
    const mount = container.volumeMounts.find((m: Doc) => m.name === 'config');
    expect(container.env.find((e: Doc) => e.name === 'REGISTRY_CONFIG').value.startsWith(mount.mountPath)).toBe(true);
  });

  it('probes and scrapes routes the peer really serves', async () => {
    const served = await routes();
    const template = find('StatefulSet')!.spec.template;
    const container = template.spec.containers[0];
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
      expect(served.has(`GET ${container[probe].httpGet.path}`), probe).toBe(true);
      expect(container[probe].httpGet.port).toBe(container.ports[0].name);
    }
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(served.has(`GET ${template.metadata.annotations['prometheus.io/path']}`)).toBe(true);
  });
});

describe('deploy/docker/compose.yaml', () => {
  it('starts every peer of its cluster file, each with a configuration the peer accepts', () => {
    const [compose] = documents('deploy/docker/compose.yaml');
    const file = JSON.parse(read('deploy/docker/cluster.json'));
    const ids = Object.values(compose!.services as Record<string, Doc>).map((service) => service.environment.REGISTRY_ID as string);
    expect(ids.sort()).toEqual(file.peers.map((peer: { id: string }) => peer.id).sort());
    for (const id of ids) {
      // The image sets REGISTRY_HOST=0.0.0.0 and REGISTRY_PORT=8761 (Dockerfile).
      const config = resolveConfig(file, { REGISTRY_ID: id, REGISTRY_HOST: '0.0.0.0', REGISTRY_PORT: '8761' }, {});
      expect(config.self.url).toBe(`http://${id}:8761`);
      expect(config.seeds).toHaveLength(2);
    }
    expect(read('Dockerfile')).toContain('REGISTRY_HOST=0.0.0.0');
  });
});
