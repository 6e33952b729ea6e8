import type { WatchEvent, WatchFrame } from './events.js';

/*
 * What a watch subscription is to its caller (an SSE stream, a test): its filter, its sink, and
 * how its snapshots keep to its reader. The hub (hub.ts) serves it.
 */

/**
 * Receives the events of one subscription; answers false when it cannot take more (its
 * connection's buffer is full), and the hub then drops it.
 */
export type WatchSink = (event: WatchEvent) => boolean;

/** As WatchSink, given the shared frame (the event and its encoded bytes). */
export type FrameSink = (frame: WatchFrame) => boolean;

export interface WatchFilter {
  namespace: string;
  /** Services to watch; null watches every service of the namespace (present and future). */
  services: string[] | null;
  /** Only instances of this group (an instance that leaves it is `removed`); null or absent: every group. */
  group?: string | null;
}

/**
 * How a subscription's snapshots keep to its reader (optional): before each snapshot the hub
 * asks `ready()`; while the reader is not, the rest wait, in no turn and on no timer, for the
 * subscription's `resume()`. An SSE stream: `ready: () => !raw.writableNeedDrain`, and
 * `resume()` on the socket's 'drain'. Without one, the snapshots go out a turn's units per turn
 * whatever the reader's pace, and a sink that answers false is dropped (as for any frame).
 */
export interface SnapshotPace {
  ready(): boolean;
}

/** A started subscription. */
export interface WatchSubscription {
  /** Ends it: no sink call after this; onClose is told. */
  close(): void;
  /** The reader can take more (after `SnapshotPace.ready` said no): its snapshots go on in the coming turns. */
  resume(): void;
}
