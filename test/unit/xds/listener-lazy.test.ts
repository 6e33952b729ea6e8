import { expect, it, vi } from 'vitest';
import { silentLogger } from '../../../src/log/logger.js';
import { startProtocolListeners } from '../../../src/protocol-listeners.js';
import { createTestNode } from '../../support/node.js';

// Records whether grpc-js (with protobufjs and the protos, about 110 modules and several MB of
// RSS) is ever imported; the module itself is the real one.
const grpc = vi.hoisted(() => ({ loaded: false }));
vi.mock('@grpc/grpc-js', async (importOriginal) => {
  grpc.loaded = true;
  return importOriginal();
});

it('does not load grpc-js for a peer without an xDS port, and loads it once one is set', async () => {
  const { node } = await createTestNode();
  const config = node.config;
  expect(await startProtocolListeners({ node, config, logger: silentLogger })).toEqual([]);
  expect(grpc.loaded).toBe(false);
  const withXds = { ...config, host: '127.0.0.1', protocols: { ...config.protocols, xds: { ...config.protocols.xds, port: 0 } } };
  const listeners = await startProtocolListeners({ node, config: withXds, logger: silentLogger });
  try {
    expect(listeners.map((listener) => listener.name)).toEqual(['xds']);
    expect(grpc.loaded).toBe(true);
  } finally {
    for (const listener of listeners) await listener.close();
  }
});
