import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildServer } from '../../src/http/server.js';
import { createTestNode } from '../support/node.js';
import { parsePrometheusText, type Family } from '../support/prom-text.js';

/**
 * The Grafana dashboard and the Prometheus alerting rules under deploy/ name only series a peer
 * exports: each name in their expressions is looked up in the /metrics of a peer built here.
 */
const path = (file: string) => fileURLToPath(new URL(`../../${file}`, import.meta.url));
const read = (file: string) => readFileSync(path(file), 'utf8');
const PROMTOOL = '/usr/bin/promtool';

/** A real peer's /metrics (with the process figures), every protocol series with samples in it. */
async function scrapeText(): Promise<string> {
  const { node } = await createTestNode();
  const app = await buildServer({ node, processMetrics: true });
  await app.ready();
  try {
    await app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: 8080 } });
    const consul = node.adapterMetrics.adapter('consul', ['catalog.service']);
    consul.operation('catalog.service').observe('ok', 0.002);
    consul.pool('blocking_queries', { held: 2, heaviest: () => [{ owner: 'token:ops', held: 2 }] }).refused('principal');
    consul.pushes.pushed(node.clock.nowMs() - 30);
    node.adapterMetrics.dns.answered('udp', 33, 0);
    node.adapterMetrics.xds.nack('type.googleapis.com/envoy.config.cluster.v3.Cluster');
    return (await app.inject({ url: '/metrics' })).body;
  } finally {
    await app.close();
    await node.stop();
  }
}

/** Every series a peer exports. */
async function exported(): Promise<Map<string, Family>> {
  return parsePrometheusText(await scrapeText());
}

/** The metric names an expression or a template names: the project's and the process's. */
function seriesNamed(text: string): string[] {
  return [...new Set(text.match(/\b(?:registry|process|nodejs)_[a-z0-9_]+\b/g) ?? [])];
}

/** Whether `name` is a family of the scrape, or a histogram's `_bucket`, `_sum` or `_count` series. */
function exists(families: Map<string, Family>, name: string): boolean {
  if (families.has(name)) return true;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && families.get(base)?.type === 'histogram';
}

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: Array<{ expr: string; refId: string; datasource: { uid: string } }>;
}

describe('deploy/grafana and deploy/prometheus', () => {
  it('the dashboard is importable JSON whose every query names exported series, through the datasource variable', async () => {
    const dashboard = JSON.parse(read('deploy/grafana/registry-dashboard.json')) as { uid: string; panels: Panel[]; templating: { list: Array<{ name: string; type: string }> } };
    expect(dashboard.uid).toBe('peer-registry');
    expect(dashboard.templating.list.map((variable) => [variable.name, variable.type])).toEqual([['datasource', 'datasource'], ['instance', 'query']]);
    const ids = dashboard.panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    const families = await exported();
    const queries = dashboard.panels.flatMap((panel) => panel.targets ?? []);
    expect(queries.length).toBeGreaterThan(30);
    const named = new Set<string>();
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
      expect(panel.datasource?.uid, panel.title).toBe('${datasource}');
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets!) {
        expect(target.datasource.uid).toBe('${datasource}');
        for (const name of seriesNamed(target.expr)) {
          named.add(name);
          expect(exists(families, name), `${panel.title}: ${name} is not exported`).toBe(true);
        }
      }
    }
    // The protocols' series and the core's are all on it.
    for (const name of ['registry_adapter_requests_total', 'registry_adapter_held', 'registry_xds_nacks_total', 'registry_dns_queries_total', 'registry_peer_bytes_total', 'registry_self_preservation_active']) {
      expect(named.has(name), name).toBe(true);
    }
  });

  it('the alerting rules parse, cover what an operator must hear of, and name exported series only', async () => {
    const rules = parse(read('deploy/prometheus/alerts.yml')) as { groups: Array<{ name: string; rules: Array<{ alert: string; expr: string; labels: { severity: string }; annotations: Record<string, string> }> }> };
    const all = rules.groups.flatMap((group) => group.rules);
    expect(all.map((rule) => rule.alert)).toEqual(expect.arrayContaining([
      'RegistrySelfPreservationOn', 'RegistryPartitionGuardOn', 'RegistryPeerDown', 'RegistryReplicationLag', 'RegistryXdsNacks', 'RegistryRefusedAtCap',
    ]));
    const families = await exported();
    for (const rule of all) {
      expect(['critical', 'warning', 'info']).toContain(rule.labels.severity);
      expect(rule.annotations.summary, rule.alert).toBeTruthy();
      for (const name of seriesNamed(`${rule.expr} ${Object.values(rule.annotations).join(' ')}`)) {
        expect(exists(families, name), `${rule.alert}: ${name} is not exported`).toBe(true);
      }
    }
  });

  it.runIf(existsSync(PROMTOOL))('promtool checks the rules, and they fire on the series they watch', () => {
    const check = spawnSync(PROMTOOL, ['check', 'rules', path('deploy/prometheus/alerts.yml')], { encoding: 'utf8' });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    const test = spawnSync(PROMTOOL, ['test', 'rules', path('test/unit/deploy/alerts.test.yml')], { encoding: 'utf8' });
    expect(test.status, test.stdout + test.stderr).toBe(0);
  });

  it.runIf(existsSync(PROMTOOL))('Prometheus reads the protocol, peer-traffic and start-up series without a complaint', async () => {
    const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: await scrapeText(), encoding: 'utf8' });
    // 1 is a parse error; 3 lint findings, of which only those of the new series matter here.
    expect(check.status, check.stdout + check.stderr).not.toBe(1);
    const findings = `${check.stdout}${check.stderr}`.split('\n').filter((line) => /registry_(adapter|dns|xds|peer_bytes|startup_sync)/.test(line));
    expect(findings).toEqual([]);
  });
});
