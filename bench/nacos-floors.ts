/**
 * The floors of the Nacos push benchmark (bench/nacos.ts): bare Node processes that do only
 * the sending a change's pushes need, so the peer's CPU per change can be set beside the cost
 * of the sending alone, measured in the same run on the same machine.
 * - UDP: one dgram socket sending the same datagram to every subscriber port (and taking the
 *   ack each subscriber sends back), as the peer's push does once per change.
 * - gRPC: a bare @grpc/grpc-js server with the same `Payload` services (dist/nacos/grpc/protocol.js),
 *   writing the same NotifySubscriberRequest to every open bi-stream, serialized per write as
 *   grpc-js does by itself.
 * Each is driven over stdin (`go` per round) and answers `sent` on stdout once the round is out.
 * Loopback only; each process is killed by its own pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

export interface FloorProcess {
  pid: number;
  /** The gRPC floor's port (0 for UDP). */
  port: number;
  /** Sends one round (one change's pushes) and waits until the process says it is out. */
  round(): Promise<void>;
  stop(): Promise<void>;
}

const UDP_FLOOR = `
const dgram = require('node:dgram');
const fs = require('node:fs');
const payload = fs.readFileSync(process.argv[1]);
const ports = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const socket = dgram.createSocket('udp4');
let acks = 0;
socket.on('message', () => { acks += 1; });
socket.bind(0, '127.0.0.1', () => {
  process.stdout.write('ready 0\\n');
  require('node:readline').createInterface({ input: process.stdin }).on('line', () => {
    for (const port of ports) socket.send(payload, port, '127.0.0.1');
    process.stdout.write('sent\\n');
  });
});
`;

const GRPC_FLOOR = `
const { Server, ServerCredentials } = await import(process.argv[1]);
const readline = await import('node:readline');
const { nacosPackage, payloadOfJson } = await import(process.argv[2]);
const json = (await import('node:fs')).readFileSync(process.argv[3]);
const definitions = nacosPackage();
const streams = new Set();
const server = new Server();
server.addService(definitions.Request, { request: (call, callback) => callback(null, payloadOfJson('ServerCheckResponse', Buffer.from('{"resultCode":200}'))) });
server.addService(definitions.BiRequestStream, {
  requestBiStream: (call) => {
    streams.add(call);
    call.on('data', () => {});
    const end = () => streams.delete(call);
    call.on('end', () => { end(); call.end(); });
    call.on('error', end);
    call.on('cancelled', end);
  },
});
server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.stdout.write('ready ' + port + '\\n');
  readline.createInterface({ input: process.stdin }).on('line', () => {
    // The same message to every stream, each write serialized by grpc-js.
    for (const stream of streams) stream.write(payloadOfJson('NotifySubscriberRequest', json));
    process.stdout.write('sent\\n');
  });
});
`;

function startFloor(args: string[]): Promise<FloorProcess> {
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (line) => waiting.shift()?.(line));
  const next = (timeoutMs: number) =>
    new Promise<string>((resolveLine, reject) => {
      const timer = setTimeout(() => reject(new Error(`floor process ${child.pid} did not answer in ${timeoutMs} ms`)), timeoutMs);
      waiting.push((line) => {
        clearTimeout(timer);
        resolveLine(line);
      });
    });
  return next(30_000).then((ready) => ({
    pid: child.pid!,
    port: Number(ready.split(' ')[1]),
    async round() {
      const sent = next(30_000);
      child.stdin!.write('go\n');
      await sent;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGKILL');
      await exited;
    },
  }));
}

/** The UDP floor: `payload` to each of `ports` on 127.0.0.1 per round. */
export function startUdpFloor(payload: Buffer, ports: readonly number[]): Promise<FloorProcess> {
  const payloadFile = join(tmpdir(), `nacos-bench-floor-payload-${process.pid}`);
  const portsFile = join(tmpdir(), `nacos-bench-floor-ports-${process.pid}.json`);
  writeFileSync(payloadFile, payload);
  writeFileSync(portsFile, JSON.stringify(ports));
  return startFloor(['-e', UDP_FLOOR, payloadFile, portsFile]);
}

/** The gRPC floor: a bare grpc-js server writing `json` as a NotifySubscriberRequest to every open bi-stream per round. */
export function startGrpcFloor(json: Buffer): Promise<FloorProcess> {
  const jsonFile = join(tmpdir(), `nacos-bench-floor-grpc-${process.pid}.json`);
  writeFileSync(jsonFile, json);
  const grpcJs = pathToFileURL(createRequire(import.meta.url).resolve('@grpc/grpc-js')).href;
  const protocol = pathToFileURL(resolve('dist/nacos/grpc/protocol.js')).href;
  return startFloor(['--input-type=module', '-e', GRPC_FLOOR, grpcJs, protocol, jsonFile]);
}
