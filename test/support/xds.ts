import { EventEmitter } from 'node:events';
import { credentials, makeGenericClientConstructor, Metadata, Server, ServerCredentials, type Client, type ServiceDefinition } from '@grpc/grpc-js';
import { waitFor, type PeerProcess } from './process.js';

/**
 * A tiny gRPC service for the xDS tests, with no proto file: one unary method whose request
 * and response are raw bytes (grpc-js generic service definitions); each server answers its
 * own name, so a test sees which instance took a call.
 */
const identity = (value: Buffer) => value;
export const greeterService: ServiceDefinition = {
  SayHello: {
    path: '/registry.test.Greeter/SayHello',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

export interface GreeterServer {
  name: string;
  port: number;
  calls: number;
  close(): void;
}

/** A greeter on 127.0.0.1 (a free port) answering `name`. */
export async function startGreeter(name: string): Promise<GreeterServer> {
  const server = new Server();
  const greeter: GreeterServer = { name, port: 0, calls: 0, close: () => server.forceShutdown() };
  server.addService(greeterService, {
    SayHello: (_call: unknown, callback: (error: null, value: Buffer) => void) => {
      greeter.calls += 1;
      callback(null, Buffer.from(name));
    },
  });
  greeter.port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port))),
  );
  return greeter;
}

const GreeterClient = makeGenericClientConstructor(greeterService, 'Greeter');

/** A client of `target` (`xds:///greeter`); `hello` answers the name of the server that took the call. */
export function greeterClient(target: string): { client: Client; hello(deadlineMs?: number): Promise<string> } {
  const client = new GreeterClient(target, credentials.createInsecure());
  const call = client as unknown as Record<string, (request: Buffer, options: object, callback: (error: Error | null, value?: Buffer) => void) => void>;
  return {
    client,
    hello: (deadlineMs = 5_000) =>
      new Promise<string>((resolve, reject) => {
        call.SayHello!(Buffer.from('hi'), { deadline: Date.now() + deadlineMs }, (error, value) => (error ? reject(error) : resolve(value!.toString())));
      }),
  };
}

/**
 * The port a peer process's xDS listener took (`xds.port: 0`), from its log line; waits for it.
 * The listener starts after the start-up sync and first loads grpc-js and the xDS protos (about
 * 0.5 s on a quiet machine; a clean-clone CI run once waited past 20 s for the second of two
 * peers), hence the generous bound. A peer that ended, or a wait that runs out, is reported
 * with the peer's last log lines and stderr, so a failure says what the peer was doing.
 */
export async function xdsPortOf(peer: PeerProcess, timeoutMs = 60_000): Promise<number> {
  const ended = () => peer.child.exitCode !== null || peer.child.signalCode !== null;
  try {
    const line = await waitFor(
      () => peer.logs.find((entry) => entry.msg === 'xds: serving the Aggregated Discovery Service') ?? (ended() && { ended: true }),
      timeoutMs,
      'the xDS listener to start',
    );
    if ('ended' in line) throw new Error(`the peer ended (code ${peer.child.exitCode}, signal ${peer.child.signalCode}) before its xDS listener started`);
    return line.port as number;
  } catch (error) {
    const lastLines = peer.logs.slice(-8).map((entry) => JSON.stringify(entry)).join('\n');
    throw new Error(`${(error as Error).message}\nlast log lines:\n${lastLines}\nstderr: ${peer.stderr().slice(-2_000)}`, { cause: error });
  }
}

/**
 * An ADS call without a socket, for the unit tests: requests go in as 'data', responses are
 * kept; `peer` is what `getPeer()` answers, `metadata` what the client sent (a token).
 */
export class FakeAdsCall<Request, Response> extends EventEmitter {
  readonly responses: Response[] = [];
  readonly metadata = new Metadata();
  constructor(
    private readonly peer = '127.0.0.1:50000',
    token?: string,
  ) {
    super();
    if (token !== undefined) this.metadata.set('authorization', `Bearer ${token}`);
  }
  getPeer(): string {
    return this.peer;
  }
  write(response: Response): boolean {
    this.responses.push(response);
    return true;
  }
  end(): void {}
  send(request: Request): void {
    this.emit('data', request);
  }
  last(): Response {
    return this.responses.at(-1)!;
  }
}

/** A FakeAdsCall that keeps the errors the server ends it with (a refused or cut stream), for tests that expect them. */
export class RecordingAdsCall<Request, Response> extends FakeAdsCall<Request, Response> {
  readonly errors: { code: number; details: string }[] = [];
  constructor(peer?: string, token?: string) {
    super(peer, token);
    this.on('error', (error: { code: number; details: string }) => this.errors.push(error));
  }
}
