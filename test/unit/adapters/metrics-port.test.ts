import { afterEach, describe, expect, it } from 'vitest';
import { metricsPortOf } from '../../../src/adapters/metrics.js';
import { createTestNode, type TestNode } from '../../support/node.js';

let t: TestNode | undefined;
afterEach(async () => {
  await t?.node.stop();
  t = undefined;
});

describe('the metrics port of the adapter contract', () => {
  it("is the peer's adapter metrics in node.ports, so an adapter records where /metrics reads", async () => {
    t = await createTestNode();
    expect(t.node.ports.metrics).toBe(t.node.adapterMetrics);
    expect(metricsPortOf(t.node.ports)).toBe(t.node.adapterMetrics);
    metricsPortOf(t.node.ports).adapter('someproto', ['op']).operation('op').observe('ok', 0.001);
    expect([...t.node.adapterMetrics.all()].map((adapter) => adapter.adapter)).toContain('someproto');
  });

  it('answers a detached recorder for ports made without one (nothing is exported from it)', async () => {
    t = await createTestNode();
    const detached = metricsPortOf({});
    detached.adapter('x', ['op']).operation('op').observe('ok', 0.001);
    expect(detached.adapter('x').operation('op').count('ok')).toBe(1);
    // ...and it is no peer's: a node's metrics never see it.
    expect([...t.node.adapterMetrics.all()].map((adapter) => adapter.adapter)).not.toContain('x');
  });
});
