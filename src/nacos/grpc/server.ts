import { Server, ServerCredentials, setLogger, status, type sendUnaryData, type ServerDuplexStream, type ServerUnaryCall, type ServiceDefinition } from '@grpc/grpc-js';
import type { ServerTls } from '../../http/server.js';
import type { NacosApp, NacosNode } from '../app.js';
import { GrpcConnections } from './connections.js';
import { nacosPackage, payloadCodecOf, sharedPushDefinition, type Payload } from './protocol.js';

export interface NacosGrpcOptions {
  node: NacosNode;
  nacos: Pick<NacosApp, 'access' | 'reads' | 'writes' | 'logger' | 'metrics' | 'hold'>;
  host: string;
  port: number;
  tls?: ServerTls;
}

export interface NacosGrpcServer {
  port: number;
  connections: GrpcConnections;
  close(): Promise<void>;
}

function bindAddressOf(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The Nacos 2.x gRPC API (docs/nacos.md) on a gRPC server of its own: `Request/request` for
 * the naming requests, `BiRequestStream/requestBiStream` for the connection's setup and the
 * pushes. What each request does is in handlers.ts, what a connection holds in connections.ts.
 */
export async function startNacosGrpc(options: NacosGrpcOptions): Promise<NacosGrpcServer> {
  const { node, nacos } = options;
  const { logger } = nacos;
  const { cluster } = node.config;
  const settings = node.config.protocols.nacos;
  const application = node.ports;
  const definitions = nacosPackage();
  const connections = new GrpcConnections(
    {
      access: nacos.access,
      reads: nacos.reads,
      writes: nacos.writes,
      metrics: nacos.metrics,
      hold: (subject) => nacos.hold('grpcConnections', subject),
      services: application.reads,
      ready: () => node.ready,
      perConnectionMax: settings.pushTargetsPerSourceMax,
      clock: node.components.clock,
      views: node.ports.reads.views,
      logger,
      codec: payloadCodecOf(definitions),
    },
    { renewIntervalMs: Math.max(100, Math.min(cluster.heartbeatIntervalMs, Math.floor(cluster.leaseDurationMs / 3))), streamlessIdleMs: cluster.leaseDurationMs },
  );
  // grpc-js writes its own errors to stderr (a taken port among them); they go to the peer's log.
  setLogger({ error: (...args: unknown[]) => logger.warn({ grpc: args.map(String).join(' ') }, 'grpc'), info: () => {}, debug: () => {} });
  const server = new Server({ 'grpc.max_receive_message_length': 4 * 1_048_576 });
  server.addService(definitions.Request as ServiceDefinition, {
    request: (call: ServerUnaryCall<Payload, Payload>, callback: sendUnaryData<Payload>) => {
      connections.request(call.getPeer(), call.request).then(
        (answer) => callback(null, answer),
        (error: unknown) => callback({ code: status.INTERNAL, details: (error as Error).message }),
      );
    },
  });
  // Pushes are serialized once for all their streams (connections.ts): the bi-stream writes their bytes as they are.
  server.addService(sharedPushDefinition(definitions), {
    requestBiStream: (call: ServerDuplexStream<Payload, Payload>) => {
      const peer = call.getPeer();
      call.on('data', (payload: Payload) => {
        try {
          connections.streamed(peer, call, payload);
        } catch (error) {
          call.destroy(error as Error);
        }
      });
      const end = () => connections.closed(peer, call);
      call.on('end', () => {
        end();
        call.end();
      });
      call.on('error', end);
      call.on('cancelled', end);
      call.on('close', end);
    },
  });
  const credentials = options.tls
    ? ServerCredentials.createSsl(null, [{ cert_chain: options.tls.cert, private_key: options.tls.key }], false)
    : ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(bindAddressOf(options.host, options.port), credentials, (error, bound) => {
      if (!error) return resolve(bound);
      const code = /\b(EADDRINUSE|EACCES|EADDRNOTAVAIL)\b/.exec(error.message)?.[1];
      reject(code === undefined ? error : Object.assign(new Error(error.message), { code, port: options.port }));
    });
  });
  return {
    port,
    connections,
    async close() {
      connections.close();
      // Open bi-streams never end by themselves: a graceful shutdown would wait for them.
      server.forceShutdown();
    },
  };
}
