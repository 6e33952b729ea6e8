import { afterEach, describe, expect, it } from 'vitest';
import { createRegistryClient, RegistryClientError } from '../../src/client/index.js';
import { startPeerProcess, type PeerProcess } from '../support/process.js';

const started: PeerProcess[] = [];
afterEach(() => {
  for (const peer of started.splice(0)) peer.kill('SIGKILL');
});

const TOKEN = 'app-token-0123456789abcdef';

describe('the client against a peer that requires tokens', () => {
  it('registers and discovers with its token, and is refused 401 without one', async () => {
    const peer = await startPeerProcess(['--port', '0', '--profile', 'local'], {
      REGISTRY_TOKENS: JSON.stringify([{ name: 'app', token: TOKEN, namespaces: ['*'], scopes: ['write'] }]),
    });
    started.push(peer);

    const client = createRegistryClient({ peers: [peer.url], token: TOKEN, failoverBudgetMs: 2_000 });
    try {
      await client.register({ service: 'secured', host: '127.0.0.1', port: 9000, instanceId: 'a' });
      const found = await client.discover('secured');
      expect(found.instances.map((instance) => instance.instanceId)).toEqual(['a']);
    } finally {
      await client.close();
    }

    const anonymous = createRegistryClient({ peers: [peer.url], failoverBudgetMs: 1_000 });
    try {
      const error = await anonymous.register({ service: 'secured', host: '127.0.0.1', port: 9001 }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(RegistryClientError);
      expect(error).toMatchObject({ code: 'REG_ERR_UNAUTHORIZED', status: 401 });
    } finally {
      await anonymous.close();
    }
  });
});
