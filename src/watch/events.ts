import type { InstanceView } from '../registry/view.js';

/** The first event of a subscription, one per service: everything served now. */
export interface SnapshotEvent {
  type: 'snapshot';
  namespace: string;
  service: string;
  revision: number;
  instances: InstanceView[];
}

/** What changed in one service since the last event, coalesced over the window. */
export interface DeltaEvent {
  type: 'delta';
  namespace: string;
  service: string;
  revision: number;
  added: InstanceView[];
  changed: InstanceView[];
  removed: { instanceId: string }[];
}

/** The subscriber fell too far behind and is dropped; it should reconnect (and get a new snapshot). */
export interface DroppedEvent {
  type: 'dropped';
  code: 'REG_ERR_WATCH_TOO_SLOW';
  message: string;
}

export type WatchEvent = SnapshotEvent | DeltaEvent | DroppedEvent;

/**
 * One event as every subscriber of it gets it: the event (shared, never to be changed by a
 * sink) and its server-sent-events bytes, encoded on first use and then shared, so that a
 * frame written to 5,000 sockets is encoded once and each socket holds a reference to the
 * same buffer, not a copy.
 */
export class WatchFrame {
  private encoded: Buffer | undefined;

  constructor(readonly event: WatchEvent) {}

  /** `event: <type>\nid: <revision>\ndata: <JSON>\n\n` (no id for `dropped`). */
  bytes(): Buffer {
    this.encoded ??= Buffer.from(formatEvent(this.event));
    return this.encoded;
  }
}

/** One server-sent event: the type, the revision as id, and the payload as JSON. */
export function formatEvent(event: WatchEvent): string {
  const { type, ...payload } = event;
  const id = 'revision' in event ? `id: ${event.revision}\n` : '';
  return `event: ${type}\n${id}data: ${JSON.stringify(payload)}\n\n`;
}

export const DROPPED_FRAME = new WatchFrame({
  type: 'dropped',
  code: 'REG_ERR_WATCH_TOO_SLOW',
  message: 'this subscriber fell behind and was dropped; reconnect for a new snapshot',
});
