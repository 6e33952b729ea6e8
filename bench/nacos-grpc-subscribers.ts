/**
 * Nacos 2.x subscribers for bench/nacos.ts: each a grpc-js client on a connection of its own
 * (a local subchannel pool, as 1,000 client processes would each have one), with its bi-stream
 * open (ConnectionSetupRequest) and, against the peer, a SubscribeServiceRequest on the same
 * connection. It answers every NotifySubscriberRequest with a NotifySubscriberResponse, as
 * the Nacos SDKs do, and keeps when the first push of each host count came.
 */
import { credentials, loadPackageDefinition, type ClientDuplexStream, type ServiceClientConstructor } from '@grpc/grpc-js';
import { messageOf, nacosPackage, payloadOf, type Payload } from '../src/nacos/grpc/protocol.js';

export interface GrpcSubscriber {
  /** When the first push with each number of hosts came (performance.now()). */
  received: Map<number, number>;
  /** Pushes received, and the JSON of the last. */
  messages: number;
  lastJson: Buffer | null;
  close(): void;
}

interface Constructors {
  Request: ServiceClientConstructor;
  BiRequestStream: ServiceClientConstructor;
}

/** The client constructors of the Payload services (one load for many subscribers). */
export function grpcConstructors(): Constructors {
  return loadPackageDefinition(nacosPackage()) as unknown as Constructors;
}

/** A subscriber on its own connection to 127.0.0.1:`port`; with `service`, subscribed to it there. */
export async function grpcSubscriber(constructors: Constructors, port: number, service: string | null): Promise<GrpcSubscriber> {
  const address = `127.0.0.1:${port}`;
  const bi = new constructors.BiRequestStream(address, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  const call = (bi as unknown as { requestBiStream(): ClientDuplexStream<Payload, Payload> }).requestBiStream();
  const subscriber: GrpcSubscriber = {
    received: new Map(),
    messages: 0,
    lastJson: null,
    close() {
      call.cancel();
      bi.close();
    },
  };
  call.on('error', () => {});
  call.on('data', (payload: Payload) => {
    const at = performance.now();
    const message = messageOf(payload);
    if (message?.type !== 'NotifySubscriberRequest') return;
    subscriber.messages += 1;
    subscriber.lastJson = payload.body?.value ?? null;
    const info = message.body.serviceInfo as { hosts?: unknown[] } | undefined;
    const hosts = info?.hosts?.length ?? 0;
    if (!subscriber.received.has(hosts)) subscriber.received.set(hosts, at);
    call.write(payloadOf('NotifySubscriberResponse', { requestId: message.body.requestId, resultCode: 200, errorCode: 0, success: true }));
  });
  call.write(payloadOf('ConnectionSetupRequest', { clientVersion: 'bench', tenant: '', labels: {}, abilities: {} }));
  if (service !== null) {
    // On the same channel, hence the same connection (the server names a connection by its peer address).
    const unary = new constructors.Request(address, credentials.createInsecure(), { channelOverride: bi.getChannel() });
    const answer = await new Promise<Payload>((resolve, reject) =>
      (unary as unknown as { request(p: Payload, done: (error: Error | null, answer: Payload) => void): void }).request(
        payloadOf('SubscribeServiceRequest', { namespace: '', serviceName: service, groupName: 'DEFAULT_GROUP', clusters: '', subscribe: true, headers: {}, requestId: 's' }),
        (error, answer) => (error ? reject(error) : resolve(answer)),
      ),
    );
    if (messageOf(answer)?.type !== 'SubscribeServiceResponse') throw new Error(`subscribe answered ${JSON.stringify(messageOf(answer))}`);
  }
  return subscriber;
}
