import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NacosNamingClient as V1Client } from 'nacos';
import { NacosNamingClient as V2Client } from 'nacos-sdk-rust-binding-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/fault-proxy.js';
import { nacosPortsOf, quietNacosLogger } from '../support/nacos-process.js';
import { retryWhenPortTaken } from '../support/ports.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

/** Both Nacos clients with a registry token as their password (docs/nacos.md, Credentials). */
const TOKEN = 'nacos-writer-token-0123456789';
let peer: PeerProcess;
let nacosPort: number;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'nacos-auth-'));
  const config = join(dir, 'peer.json');
  writeFileSync(config, JSON.stringify({ security: { tokens: [{ name: 'writer', token: TOKEN, namespaces: ['*'], scopes: ['write'] }] } }));
  peer = await retryWhenPortTaken(async () => {
    nacosPort = await freePort();
    while (nacosPort > 64_000) nacosPort = await freePort();
    return startPeerProcess(['--config', config, '--port', '0', '--nacos-port', String(nacosPort)]);
  });
  await nacosPortsOf(peer);
}, 120_000);

afterAll(async () => {
  peer?.kill();
  await peer?.exited;
  rmSync(dir, { recursive: true, force: true });
});

describe('Nacos clients with a registry token as password', () => {
  it('npm nacos (v1, username and password on every call) registers with it and is refused without it', async () => {
    const good = new V1Client({ logger: quietNacosLogger() as never, serverList: `127.0.0.1:${nacosPort}`, namespace: 'public', username: 'writer', password: TOKEN } as never);
    const noneLogger = quietNacosLogger();
    const none = new V1Client({ logger: noneLogger as never, serverList: `127.0.0.1:${nacosPort}`, namespace: 'public' });
    try {
      await good.ready();
      await none.ready();
      await good.registerInstance('auth-v1', { ip: '127.0.0.1', port: 9501 } as never);
      expect((await good.getAllInstances('auth-v1', undefined, undefined, false)).length).toBe(1);
      await expect(none.registerInstance('auth-v1', { ip: '127.0.0.1', port: 9502 } as never)).rejects.toThrow(/failed to req API/);
      expect(noneLogger.lines.join('\n')).toContain('code: 401');
    } finally {
      for (const client of [good, none]) await (client as unknown as { close(): Promise<void> }).close();
    }
  }, 60_000);

  it('the Rust SDK (v2) logs in over HTTP and registers over gRPC with the accessToken; a wrong password is refused', async () => {
    const good = new V2Client({ serverAddr: `127.0.0.1:${nacosPort}`, namespace: '', username: 'writer', password: TOKEN });
    await good.registerInstance('auth-v2', 'DEFAULT_GROUP', { ip: '127.0.0.1', port: 9601 });
    await waitFor(async () => (await good.getAllInstances('auth-v2', 'DEFAULT_GROUP', [], false)).length === 1, 20_000, 'the instance');
    const wrong = new V2Client({ serverAddr: `127.0.0.1:${nacosPort}`, namespace: '', username: 'writer', password: 'not-the-token-0123456789' });
    await expect(wrong.registerInstance('auth-v2', 'DEFAULT_GROUP', { ip: '127.0.0.1', port: 9602 })).rejects.toThrow(/error_code:401 .*REG_ERR_UNAUTHORIZED/);
  }, 60_000);
});
