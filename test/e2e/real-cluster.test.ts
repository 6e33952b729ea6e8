import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../support/fault-proxy.js';
import { callJson } from '../support/http.js';
import { PeerStartError, startFailure, waitFor } from '../support/process.js';
import { RealCluster } from '../support/real-cluster.js';

/**
 * The e2e harness itself: a peer whose pre-picked port was taken before it could listen
 * (what an outgoing connection's ephemeral port does now and then) must move to a new port,
 * and a peer that cannot start must say why, at once.
 */

/** Listening sockets on 127.0.0.1 that hold a port; they accept and never answer, as a stuck holder would. */
class PortHolders {
  private readonly servers: net.Server[] = [];
  private readonly sockets = new Set<net.Socket>();

  /** Holds `port` (a free one by default) and returns it. */
  async hold(port = 0): Promise<number> {
    const server = net.createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.servers.push(server);
    return (server.address() as net.AddressInfo).port;
  }

  get ports(): number[] {
    return this.servers.map((server) => (server.address() as net.AddressInfo).port);
  }

  /** Accepted connections are never read, so they never end by themselves: cut them, then close. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(this.servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }
}

let cluster: RealCluster | undefined;
let holders = new PortHolders();
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
  await holders.close();
  holders = new PortHolders();
});

const register = (url: string, instanceId: string) =>
  callJson('POST', `${url}/v1/instances`, { service: 'orders', host: '127.0.0.1', port: 9000, instanceId, leaseDurationMs: 60_000 });

async function listed(url: string): Promise<string[]> {
  const { body } = await callJson('GET', `${url}/v1/services/orders`);
  return (body.instances as { instanceId: string }[]).map((i) => i.instanceId);
}

describe('RealCluster on a taken port', () => {
  it('moves a peer whose port was taken to a new one, proxies included, and the cluster comes up', async () => {
    let picks = 0;
    // peer-a's port (the first pick) is taken before it starts; every later pick is free.
    const pickPort = async () => (picks++ === 0 ? holders.hold() : freePort());
    cluster = await RealCluster.start({ size: 2, pickPort });
    const [taken] = holders.ports;
    expect(cluster.ports.get('peer-a')).not.toBe(taken);
    expect(cluster.proxy('peer-b', 'peer-a').targetPort).toBe(cluster.ports.get('peer-a'));
    expect(picks).toBe(3); // two at set-up, one for the move

    // With peer-a unable to pull, a write reaches it only through the retargeted proxy b->a.
    cluster.proxy('peer-a', 'peer-b').set('reset');
    expect((await register(cluster.url('peer-b'), 'on-b')).status).toBe(201);
    await waitFor(async () => (await listed(cluster!.url('peer-a'))).includes('on-b'), 15_000, 'peer-a to get the write pushed by peer-b');
  });

  it('moves a restarted peer whose old port was taken while it was down', async () => {
    cluster = await RealCluster.start({ size: 2 });
    const old = cluster.ports.get('peer-b')!;
    await cluster.kill('peer-b');
    await holders.hold(old);
    await cluster.startPeer('peer-b');
    await cluster.waitReady('peer-b');
    expect(cluster.ports.get('peer-b')).not.toBe(old);
    // With peer-b unable to pull, a write reaches it only through the retargeted proxy a->b.
    cluster.proxy('peer-b', 'peer-a').set('reset');
    expect((await register(cluster.url('peer-a'), 'after-restart')).status).toBe(201);
    await waitFor(async () => (await listed(cluster!.url('peer-b'))).includes('after-restart'), 15_000, 'peer-b to get the write pushed by peer-a');
  });

  it('gives up after three taken ports, with the peer fatal log line', async () => {
    let picks = 0;
    const pickPort = async () => {
      picks += 1;
      return holders.hold();
    };
    const failure = await RealCluster.start({ size: 1, pickPort }).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure).toBeInstanceOf(Error);
    expect(picks).toBe(3);
    expect(failure!.message).toContain(`peer-a found each of 3 ports taken (${holders.ports.join(', ')})`);
    expect(failure!.message).toContain('cannot listen: listen EADDRINUSE');
    expect(failure!.message).toContain('"msg":"cannot listen"');
    expect(failure!.cause).toBeInstanceOf(PeerStartError);
    expect((failure!.cause as PeerStartError).exitCode).toBe(2);
  });

  it('throws any other start failure at once, with what the peer said', async () => {
    let picks = 0;
    const pickPort = async () => {
      picks += 1;
      return freePort();
    };
    const failure = await RealCluster.start({ size: 1, pickPort, args: ['--log-level', 'loud'] }).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure).toBeInstanceOf(PeerStartError);
    expect((failure as PeerStartError).addressInUse).toBe(false);
    expect(failure!.message).toMatch(/^peer exited with code 2 before it was up: stderr: registry: bad configuration: .*log/);
    expect(picks).toBe(1);
  });
});

describe('startFailure', () => {
  const end = { code: 2, signal: null };

  it('names the fatal log line, without its stack, and tells a taken port from other failures', () => {
    const listen = {
      level: 60,
      msg: 'cannot listen',
      err: { type: 'Error', message: 'listen EADDRINUSE: address already in use 127.0.0.1:4000', code: 'EADDRINUSE', stack: 'Error: at ...' },
    };
    const taken = startFailure(end, [{ level: 40, msg: 'dev mode' }, listen], '');
    expect(taken.addressInUse).toBe(true);
    expect(taken.message).toBe(
      'peer exited with code 2 before it was up: cannot listen: listen EADDRINUSE: address already in use 127.0.0.1:4000 ' +
        '(log line: {"level":60,"msg":"cannot listen","err":{"type":"Error","message":"listen EADDRINUSE: address already in use 127.0.0.1:4000","code":"EADDRINUSE"}})',
    );

    const disk = startFailure(end, [{ level: 60, msg: 'cannot use the data dir', problem: 'locked' }], '');
    expect(disk.addressInUse).toBe(false);
    expect(disk.reason).toBe('cannot use the data dir (log line: {"level":60,"msg":"cannot use the data dir","problem":"locked"})');
  });

  it('falls back on the last lines of stderr and stdout, or says there were none', () => {
    const lines = Array.from({ length: 8 }, (_, i) => ({ msg: `line ${i}` }));
    const failure = startFailure({ code: null, signal: 'SIGKILL' }, lines, 'first\nboom\n');
    expect(failure.message).toBe(
      'peer exited on SIGKILL before it was up: stderr: first\nboom; stdout: ' + lines.slice(-5).map((line) => JSON.stringify(line)).join('\n'),
    );
    expect(startFailure(end, [], '').reason).toBe('no output');
  });
});
