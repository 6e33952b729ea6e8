import { createSocket, type Socket } from 'node:dgram';
import { isIPv4, isIPv6 } from 'node:net';
import type { ListenerStarter } from '../protocol-listeners.js';
import { buildNacosApp } from './app.js';
import { unmappedAddress } from './push.js';

/** Opens the UDP socket pushes go out from (an ephemeral port of the peer's host, as Nacos does). */
async function openPushSocket(host: string): Promise<Socket> {
  const socket = createSocket({ type: isIPv6(host) ? 'udp6' : 'udp4' });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  return socket;
}

/**
 * Starts the Nacos naming API on `nacos.port` of the peer's host (off when the port is null):
 * v1 over HTTP with UDP push, and the Nacos 2.x gRPC API on `nacos.grpcPort` (port + 1000).
 */
export const startNacosListener: ListenerStarter = async ({ node, config, ports, tls }) => {
  const settings = config.protocols.nacos;
  if (settings.port === null) return null;
  // The contract's logger: redacts credentials anywhere, samples repeated lines.
  const log = ports.logger.child({ component: 'nacos' });
  const udp = await openPushSocket(config.host);
  udp.on('error', (error) => log.warn({ err: error }, 'nacos: UDP push socket error'));
  // On an IPv6 host the socket is dual-stack: IPv4 clients are reached, and answer, as IPv4-mapped addresses.
  const ipv6 = isIPv6(config.host);
  const nacos = await buildNacosApp({
    node,
    ...(tls ? { tls } : {}),
    socket: { send: (bytes, port, address) => udp.send(bytes, port, ipv6 && isIPv4(address) ? `::ffff:${address}` : address) },
  });
  udp.on('message', (message, remote) => nacos.push?.receive(message, unmappedAddress(remote.address), remote.port));
  let grpc: { port: number; close(): Promise<void> } | null = null;
  try {
    await nacos.app.listen({ host: config.host, port: settings.port });
    if (settings.grpcPort !== null) {
      // Loaded only when Nacos is on: grpc-js and protobufjs are many modules a peer without it would carry.
      const { startNacosGrpc } = await import('./grpc/server.js');
      grpc = await startNacosGrpc({ node, nacos, host: config.host, port: settings.grpcPort, ...(tls ? { tls } : {}) });
    }
  } catch (error) {
    await nacos.app.close();
    udp.close();
    throw error;
  }
  const address = nacos.app.server.address();
  const port = typeof address === 'object' && address ? address.port : settings.port;
  log.info({ host: config.host, port, grpcPort: grpc?.port ?? null, udpPort: udp.address().port }, 'Nacos API listening');
  return {
    name: 'nacos',
    async close() {
      await grpc?.close();
      await nacos.app.close();
      udp.close();
    },
  };
};
