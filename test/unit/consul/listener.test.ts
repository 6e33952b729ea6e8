import { afterEach, describe, expect, it } from 'vitest';
import { startConsulListener } from '../../../src/consul/listener.js';
import { silentLogger } from '../../../src/log/logger.js';
import { createTestNode, type TestNode } from '../../support/node.js';

let t: TestNode | undefined;
afterEach(async () => t?.node.stop());

describe('startConsulListener', () => {
  it('starts nothing when consul.port is not set (the default)', async () => {
    t = await createTestNode();
    expect(t.node.config.protocols.consul.port).toBeNull();
    expect(await startConsulListener({ node: t.node, config: t.node.config, logger: silentLogger, ports: t.node.ports })).toBeNull();
  });
});
