/**
 * The processes of the xDS fan-out benchmark (bench/xds.ts) other than the peers:
 * - Stream clients: processes that each open a share of the 1,000 ADS streams (over channels
 *   with wide receive windows), ACK every response as a gRPC client does, and keep when each
 *   stream received each change (found by the churning instance's address in the bytes) or
 *   each response. Out of the bench's own process, so that the time to reach the last stream
 *   is not bound by the bench's own event loop (it registers the changes and polls).
 * - The floor: a bare @grpc/grpc-js server with the same ADS service (no registry) holding as
 *   many streams and writing the same, already serialized DiscoveryResponse bytes to each of
 *   them per round (a pass-through serializer; grpc-js still frames each write), and decoding
 *   each ACK as the peer must. Its CPU per round is what sending a push costs grpc-js and
 *   Node's HTTP/2 alone: the reference for the peer's CPU per change.
 * Every process is driven over stdin and answers on stdout; times are epoch milliseconds
 * (`performance.timeOrigin + performance.now()`), comparable between processes. Loopback
 * only; each process is killed by its own pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

/** Epoch milliseconds with performance.now()'s resolution (the clock the child processes report in). */
export const epochNow = (): number => performance.timeOrigin + performance.now();

const STREAM_CLIENTS = `
const [grpcJsUrl, protosUrl, port, streamCount, channelCount, service, typeUrl, hostPrefix, changeCount] = process.argv.slice(1);
const { credentials, makeClientConstructor } = await import(grpcJsUrl);
const { XdsProtos } = await import(protosUrl);
const readline = await import('node:readline');
const now = () => performance.timeOrigin + performance.now();
// Change c moves the churning instance to \`\${hostPrefix}\${100 + c}.1\`: one search for the prefix finds which change a response carries.
const prefix = Buffer.from(hostPrefix);
const changes = Number(changeCount);
const protos = new XdsProtos();
const Client = makeClientConstructor(protos.ads, 'AggregatedDiscoveryService');
const options = { 'grpc.use_local_subchannel_pool': 1, 'grpc-node.flow_control_window': 8 * 1024 * 1024 };
const channels = Array.from({ length: Number(channelCount) }, () => new Client('127.0.0.1:' + port, credentials.createInsecure(), options));
const streams = Number(streamCount);
let measuring = false;
let firstResponses = 0;
let received = 0;
// Per stream: when a response first carried each change (by the churning address), and every response's time.
const changeAt = Array.from({ length: streams }, () => []);
const responseAt = Array.from({ length: streams }, () => []);
const calls = [];
for (let s = 0; s < streams; s += 1) {
  const call = channels[s % channels.length].StreamAggregatedResources();
  let first = true;
  call.on('data', (response) => {
    const at = now();
    if (first) {
      first = false;
      firstResponses += 1;
    } else if (measuring) {
      received += 1;
      responseAt[s].push(at);
      const bytes = response.resources[0]?.value;
      const found = bytes ? bytes.indexOf(prefix) : -1;
      if (found >= 0) {
        const c = Number(bytes.toString('latin1', found + prefix.length, found + prefix.length + 3)) - 100;
        if (c >= 0 && c < changes) changeAt[s][c] ??= at;
      }
    }
    call.write({ type_url: typeUrl, resource_names: [service], version_info: response.version_info, response_nonce: response.nonce });
  });
  call.on('error', () => {});
  call.write({ node: { id: 'bench-' + process.pid + '-' + s }, type_url: typeUrl, resource_names: [service] });
  calls.push(call);
}
const opened = setInterval(() => {
  if (firstResponses < streams) return;
  clearInterval(opened);
  process.stdout.write('ready ' + streams + '\\n');
}, 20);
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'measure') {
    measuring = true;
    process.stdout.write('ok\\n');
  } else if (line === 'count') {
    process.stdout.write('count ' + received + '\\n');
  } else if (line === 'last') {
    process.stdout.write('last ' + changeAt.filter((times) => times[changes - 1] !== undefined).length + '\\n');
  } else if (line === 'report') {
    process.stdout.write(JSON.stringify({ changeAt: changeAt.map((times) => Array.from(times, (t) => t ?? null)), responseAt }) + '\\n');
  } else if (line === 'close') {
    for (const call of calls) call.cancel();
    for (const channel of channels) channel.close();
    process.stdout.write('closed\\n');
  }
});
`;

const FLOOR = `
const [grpcJsUrl, protosUrl, bytesFile] = process.argv.slice(1);
const { Server, ServerCredentials } = await import(grpcJsUrl);
const { XdsProtos } = await import(protosUrl);
const readline = await import('node:readline');
const bytes = (await import('node:fs')).readFileSync(bytesFile);
const ads = new XdsProtos().ads;
// The bytes as they are: the same serialized response to every stream (grpc-js frames each write).
const service = { ...ads, StreamAggregatedResources: { ...ads.StreamAggregatedResources, responseSerialize: (value) => value } };
const streams = new Set();
const server = new Server();
server.addService(service, {
  StreamAggregatedResources: (call) => {
    streams.add(call);
    // A first request (no nonce) is answered; an ACK is decoded (by grpc-js) and read, as the peer must.
    call.on('data', (request) => { if (!request.response_nonce) call.write(bytes); });
    const end = () => streams.delete(call);
    call.on('end', () => { end(); call.end(); });
    call.on('error', end);
    call.on('cancelled', end);
  },
  DeltaAggregatedResources: (call) => call.end(),
});
server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.stdout.write('ready ' + port + '\\n');
  readline.createInterface({ input: process.stdin }).on('line', () => {
    for (const stream of streams) stream.write(bytes);
    process.stdout.write('sent\\n');
  });
});
`;

const HTTP2_FLOOR = `
const [bytesFile] = process.argv.slice(1);
const http2 = await import('node:http2');
const readline = await import('node:readline');
const bytes = (await import('node:fs')).readFileSync(bytesFile);
// The gRPC frame of the response, built once: flag 0, 4-byte length, the message.
const frame = Buffer.alloc(bytes.length + 5);
frame.writeUInt32BE(bytes.length, 1);
bytes.copy(frame, 5);
const streams = new Set();
// As grpc-js's server: no session memory limit, unlimited header blocks.
const server = http2.createServer({ maxSessionMemory: Number.MAX_SAFE_INTEGER, maxSendHeaderBlockLength: Number.MAX_SAFE_INTEGER });
server.on('stream', (stream) => {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
  streams.add(stream);
  // The first request is answered; ACKs are read and not decoded.
  let answered = false;
  stream.on('data', () => {
    if (answered) return;
    answered = true;
    stream.write(frame);
  });
  const end = () => streams.delete(stream);
  stream.on('close', end);
  stream.on('error', end);
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write('ready ' + server.address().port + '\\n');
  readline.createInterface({ input: process.stdin }).on('line', () => {
    for (const stream of streams) stream.write(frame);
    process.stdout.write('sent\\n');
  });
});
`;

/** A child process answering one line per command on stdout. */
interface LineProcess {
  pid: number;
  /** The first line it wrote (its `ready ...`). */
  ready: string;
  /** Sends a command and waits for its one-line answer. */
  ask(command: string, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
}

function startLineProcess(args: string[], readyTimeoutMs: number): Promise<LineProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--input-type=module', '-e', ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (line) => waiting.shift()?.(line));
  const next = (timeoutMs: number) =>
    new Promise<string>((resolveLine, reject) => {
      const timer = setTimeout(() => reject(new Error(`process ${child.pid} did not answer in ${timeoutMs} ms`)), timeoutMs);
      waiting.push((line) => {
        clearTimeout(timer);
        resolveLine(line);
      });
    });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGKILL');
    await exited;
  };
  return next(readyTimeoutMs).then(
    (ready) => ({
      pid: child.pid!,
      ready,
      ask(command: string, timeoutMs = 30_000) {
        const answer = next(timeoutMs);
        child.stdin!.write(`${command}\n`);
        return answer;
      },
      stop,
    }),
    async (error: unknown) => {
      await stop();
      throw error;
    },
  );
}

const grpcJsUrl = () => pathToFileURL(createRequire(import.meta.url).resolve('@grpc/grpc-js')).href;
const protosUrl = () => pathToFileURL(resolve('dist/xds/protos.js')).href;

/** What the stream clients kept, per stream (in the order of the processes). */
export interface StreamArrivals {
  /** Per stream, per change: when a response first carried it (epoch ms), or null. */
  changeAt: (number | null)[][];
  /** Per stream: when each response since `measure` came (epoch ms). */
  responseAt: number[][];
}

export interface StreamClients {
  pids: number[];
  streams: number;
  /** From now on, responses are timed. */
  measure(): Promise<void>;
  /** Responses received since `measure`, every process together. */
  count(): Promise<number>;
  /** Streams that received the last change, every process together. */
  holdingLast(): Promise<number>;
  report(): Promise<StreamArrivals>;
  stop(): Promise<void>;
}

/**
 * `streams` ADS streams to 127.0.0.1:`port`, all subscribed to `service`'s resources of
 * `typeUrl`, split over `processes` processes of `channels / processes` channels each;
 * resolves once every stream has its first response. Change c (of `changes`) is the one whose
 * bytes hold `${hostPrefix}${100 + c}` (one search per response: a search per change cost the
 * clients 0.4 MB of scanning per response).
 */
export async function startStreamClients(options: { port: number; streams: number; processes: number; channels: number; service: string; typeUrl: string; hostPrefix: string; changes: number }): Promise<StreamClients> {
  const shares = Array.from({ length: options.processes }, (_, i) => Math.floor(options.streams / options.processes) + (i < options.streams % options.processes ? 1 : 0));
  const channels = Math.max(1, Math.round(options.channels / options.processes));
  const started = await Promise.allSettled(
    shares.map((share) =>
      startLineProcess([STREAM_CLIENTS, grpcJsUrl(), protosUrl(), String(options.port), String(share), String(channels), options.service, options.typeUrl, options.hostPrefix, String(options.changes)], 120_000),
    ),
  );
  const processes = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  const failed = started.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failed) {
    await Promise.all(processes.map((child) => child.stop()));
    throw failed.reason as Error;
  }
  return {
    pids: processes.map((child) => child.pid),
    streams: options.streams,
    async measure() {
      await Promise.all(processes.map((child) => child.ask('measure')));
    },
    async count() {
      const answers = await Promise.all(processes.map((child) => child.ask('count')));
      return answers.reduce((sum, answer) => sum + Number(answer.split(' ')[1]), 0);
    },
    async holdingLast() {
      const answers = await Promise.all(processes.map((child) => child.ask('last')));
      return answers.reduce((sum, answer) => sum + Number(answer.split(' ')[1]), 0);
    },
    async report() {
      const reports = (await Promise.all(processes.map((child) => child.ask('report', 60_000)))).map((line) => JSON.parse(line) as StreamArrivals);
      return { changeAt: reports.flatMap((report) => report.changeAt), responseAt: reports.flatMap((report) => report.responseAt) };
    },
    async stop() {
      await Promise.all(processes.map((child) => child.ask('close', 10_000).catch(() => '')));
      await Promise.all(processes.map((child) => child.stop()));
    },
  };
}

export interface XdsFloor {
  pid: number;
  port: number;
  /** Writes the bytes to every stream once; resolves when the floor has written them all. */
  round(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The floor: a bare grpc-js ADS server writing `response` (a serialized DiscoveryResponse) to
 * every stream per round; with `http2`, a node:http2 server with no gRPC library writing the
 * response's gRPC frame (built once) to every stream, reading the ACKs without decoding them:
 * what the HTTP/2 sending alone costs, below any gRPC library.
 */
export async function startXdsFloor(response: Buffer, kind: 'grpc-js' | 'http2' = 'grpc-js'): Promise<XdsFloor> {
  const file = join(tmpdir(), `xds-bench-floor-${process.pid}.bin`);
  writeFileSync(file, response);
  const child = await startLineProcess(kind === 'grpc-js' ? [FLOOR, grpcJsUrl(), protosUrl(), file] : [HTTP2_FLOOR, file], 30_000);
  return {
    pid: child.pid,
    port: Number(child.ready.split(' ')[1]),
    async round() {
      await child.ask('go');
    },
    stop: () => child.stop(),
  };
}
