import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log/logger.js';
import { startNacosListener } from '../../../src/nacos/listener.js';
import { createTestNode, type TestNode } from '../../support/node.js';

let t: TestNode | undefined;
afterEach(async () => t?.node.stop());

describe('startNacosListener', () => {
  it('starts nothing when nacos.port is not set (the default)', async () => {
    t = await createTestNode();
    expect(t.node.config.protocols.nacos.port).toBeNull();
    expect(await startNacosListener({ node: t.node, config: t.node.config, logger: silentLogger, ports: t.node.ports })).toBeNull();
  });
});
