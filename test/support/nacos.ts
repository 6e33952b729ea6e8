import { gunzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { applicationOf } from '../../src/app/application.js';
import type { Clock } from '../../src/clock/clock.js';
import { buildNacosApp, type NacosApp } from '../../src/nacos/app.js';
import { GrpcConnections } from '../../src/nacos/grpc/connections.js';
import type { PushSocket } from '../../src/nacos/push.js';
import { buildServer } from '../../src/http/server.js';
import { createTestNode, type TestNode } from './node.js';

/** A datagram the Nacos push sent, decoded. */
export interface SentPush {
  port: number;
  address: string;
  gzipped: boolean;
  packet: { type: string; data: string; lastRefTime: number };
}

/** A push socket that records what it is asked to send. */
export class RecordingSocket implements PushSocket {
  readonly sent: SentPush[] = [];
  readonly raw: Buffer[] = [];

  send(bytes: Buffer, port: number, address: string): void {
    this.raw.push(bytes);
    const gzipped = bytes[0] === 0x1f && bytes[1] === 0x8b;
    const text = (gzipped ? gunzipSync(bytes) : bytes).toString('utf8');
    this.sent.push({ port, address, gzipped, packet: JSON.parse(text) as SentPush['packet'] });
  }
}

/** One peer on a fake clock with its Nacos app (and a recording push socket) and its native app. */
export interface TestNacos extends TestNode, NacosApp {
  native: FastifyInstance;
  socket: RecordingSocket;
  close(): Promise<void>;
}

export async function createTestNacos(options: Parameters<typeof createTestNode>[0] = {}): Promise<TestNacos> {
  const base = await createTestNode(options);
  const socket = new RecordingSocket();
  const nacos = await buildNacosApp({ node: base.node, socket });
  const native = await buildServer({ node: base.node });
  return {
    ...base,
    ...nacos,
    socket,
    native,
    async close() {
      await nacos.app.close();
      await native.close();
      await base.node.stop();
    },
  };
}

/** A form body from fields. */
export function form(fields: Record<string, string>): { payload: string; headers: Record<string, string> } {
  return { payload: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
}

/** A gRPC connection table on a test peer's Nacos app, as the gRPC server makes it (src/nacos/grpc/server.ts). */
export function testGrpcConnections(
  t: TestNacos,
  init: { perConnectionMax: number; renewIntervalMs?: number; streamlessIdleMs?: number; renewSliceInstances?: number; clock?: Clock },
): GrpcConnections {
  return new GrpcConnections(
    {
      access: t.access,
      reads: t.reads,
      writes: t.writes,
      services: applicationOf(t.node).reads,
      ready: () => t.node.ready,
      perConnectionMax: init.perConnectionMax,
      clock: init.clock ?? t.clock,
      views: t.node.views,
      logger: t.logger,
      hold: (subject) => t.hold('grpcConnections', subject),
      metrics: t.metrics,
    },
    {
      renewIntervalMs: init.renewIntervalMs ?? 1_000,
      streamlessIdleMs: init.streamlessIdleMs ?? 60_000,
      ...(init.renewSliceInstances === undefined ? {} : { renewSliceInstances: init.renewSliceInstances }),
    },
  );
}
