import { callPeer } from '../transport/peer-answers.js';
import type { SnapshotRequest } from '../transport/peer-calls.js';
import { PeerCallError, type PeerDescriptor, type PeerTransport } from '../transport/transport.js';
import type { Inbox } from './inbox.js';
import { SNAPSHOT_FRAME_LIMIT_BYTES, SnapshotStreamReader } from './snapshot-frames.js';
import { SNAPSHOT_STREAM_MAX_DURATION_MS } from './snapshot-stream.js';

/** What pulling a snapshot needs: the transport, the one inbound path for records, and where members go. */
export interface SnapshotPullComponents {
  transport: PeerTransport;
  inbox: Inbox;
  learn(members: PeerDescriptor[]): void;
}

export interface SnapshotPullInit {
  selfId: string;
  /** A page's call timeout; for a stream, the longest wait for its answer or its next bytes. */
  callTimeoutMs: number;
  /** Digest buckets asked for per snapshot page. */
  bucketsPerPage: number;
}

/** Records received so far from one peer: what a failed pull leaves merged in the store. */
export interface PullProgress {
  records: number;
  /**
   * What the serving peer said of its registry when the pull began (the stream's start frame,
   * the first page): true when settled, false when it knows it to be partial; undefined until
   * it has said. A peer of an older version says nothing, which reads as settled.
   */
  settled?: boolean;
  /** Called once, as soon as `settled` is known (before any record of the pull is merged). */
  onSettled?(settled: boolean): void;
}

/** Sets `progress.settled` the first time the serving peer says it, and tells `onSettled`. */
function heard(progress: PullProgress, settled: boolean): void {
  if (progress.settled !== undefined) return;
  progress.settled = settled;
  progress.onSettled?.(settled);
}

/**
 * Statuses an older peer answers `POST /v1/peer/snapshot-stream` with: 400 (its `/v1/peer/:method`
 * route does not know the method), 404 or 405. The joining peer then reads pages, as it did.
 */
const STREAM_UNSUPPORTED = new Set([400, 404, 405]);

/** True when a stream call failed because the peer does not serve streams (a peer of an older version). */
export function streamUnsupported(error: unknown): boolean {
  return error instanceof PeerCallError && error.status !== undefined && STREAM_UNSUPPORTED.has(error.status);
}

/**
 * Pulls `peer`'s whole registry: its snapshot stream when the transport can stream and the peer
 * serves one, otherwise its snapshot pages. Every record goes through the inbox (checked, then
 * merged last-writer-wins as any replicated record), counted in `progress` as it is applied, so
 * that a caller whose pull fails knows it holds part of a registry. Throws on any failure.
 * `settled` is what the serving peer said of its registry when the pull began: a complete pull
 * of a registry its peer knew to be partial is no complete registry (bootstrap.ts).
 */
export async function pullSnapshot(
  peer: PeerDescriptor,
  components: SnapshotPullComponents,
  init: SnapshotPullInit,
  progress: PullProgress,
): Promise<{ via: 'stream' | 'pages'; settled: boolean }> {
  if (components.transport.streamSnapshot) {
    try {
      await pullStream(peer, components, init, progress);
      return { via: 'stream', settled: progress.settled ?? true };
    } catch (error) {
      if (!streamUnsupported(error) || progress.records > 0) throw error;
    }
  }
  await pullPages(peer, components, init, progress);
  return { via: 'pages', settled: progress.settled ?? true };
}

/** The stream: one call, frames applied as they come, checked for order, caps and completeness. */
async function pullStream(peer: PeerDescriptor, components: SnapshotPullComponents, init: SnapshotPullInit, progress: PullProgress): Promise<void> {
  const lines = components.transport.streamSnapshot!(
    peer,
    { from: init.selfId },
    { idleTimeoutMs: init.callTimeoutMs, maxDurationMs: SNAPSHOT_STREAM_MAX_DURATION_MS, maxLineBytes: SNAPSHOT_FRAME_LIMIT_BYTES },
  );
  const reader = new SnapshotStreamReader();
  for await (const line of lines) {
    const frame = reader.accept(line);
    if (frame.t === 'start') {
      components.learn(frame.members);
      heard(progress, frame.settled);
    } else if (frame.t === 'records') {
      components.inbox.apply(peer.id, frame.records, 'repair');
      progress.records += frame.records.length;
    }
  }
  reader.finish();
}

/** The pages (`snapshot`), bucket range after bucket range, as every version reads them. */
async function pullPages(peer: PeerDescriptor, components: SnapshotPullComponents, init: SnapshotPullInit, progress: PullProgress): Promise<void> {
  let fromBucket: number | null = 0;
  while (fromBucket !== null) {
    const request: SnapshotRequest = { from: init.selfId, fromBucket, bucketSpan: init.bucketsPerPage };
    const page = await callPeer(components.transport, peer, 'snapshot', request, { timeoutMs: init.callTimeoutMs });
    // The first page's word holds for the pull (a stream says it once, in its start frame).
    heard(progress, page.settled);
    components.inbox.apply(peer.id, page.records, 'repair');
    progress.records += page.records.length;
    components.learn(page.members);
    fromBucket = page.nextBucket !== null && page.nextBucket > fromBucket ? page.nextBucket : null;
  }
}
