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
  /** A large snapshot's bytes in pieces, as far as they were encoded. */
  private readonly encodedPieces: Buffer[] = [];

  constructor(readonly event: WatchEvent) {}

  /** `event: <type>\nid: <revision>\ndata: <JSON>\n\n` (no id for `dropped`). */
  bytes(): Buffer {
    if (this.encoded !== undefined) return this.encoded;
    if (!this.large) return (this.encoded = Buffer.from(formatEvent(this.event)));
    const pieces: Buffer[] = [];
    for (let i = 0; ; i++) {
      const piece = this.piece(i);
      if (piece === undefined) break;
      pieces.push(piece);
    }
    return (this.encoded = Buffer.concat(pieces));
  }

  /**
   * Whether the frame is a snapshot of more than 2 x SNAPSHOT_PIECE_INSTANCES instances, which a
   * stream writes a piece a turn (`piece`): the event of a 100,000-instance service is about
   * 45 MB of JSON, and encoded whole it held the event loop for about 185 ms.
   */
  get large(): boolean {
    return this.event.type === 'snapshot' && this.event.instances.length > 2 * SNAPSHOT_PIECE_INSTANCES;
  }

  /**
   * Piece `index` of the frame's bytes, undefined past the last: the pieces, in order, are the
   * bytes of `bytes()`. A large snapshot's are its head, one piece per SNAPSHOT_PIECE_INSTANCES
   * instances, and its tail, each encoded once, when first asked, and shared by every stream
   * written the frame; any other frame is one piece.
   */
  piece(index: number): Buffer | undefined {
    if (!this.large) return index === 0 ? this.bytes() : undefined;
    const pieces = this.encodedPieces;
    while (pieces.length <= index) {
      const next = this.encodePiece(pieces.length);
      if (next === undefined) return undefined;
      pieces.push(next);
    }
    return pieces[index];
  }

  private encodePiece(index: number): Buffer | undefined {
    const event = this.event as SnapshotEvent;
    const { type: _type, ...payload } = event;
    if (index === 0) {
      // The payload as JSON.stringify writes it, up to and with the instances' opening bracket.
      const head = JSON.stringify({ ...payload, instances: [] });
      return Buffer.from(`event: ${event.type}\nid: ${event.revision}\ndata: ${head.slice(0, -2)}`);
    }
    const { instances } = event;
    const slices = Math.ceil(instances.length / SNAPSHOT_PIECE_INSTANCES);
    if (index === slices + 1) return Buffer.from(']}\n\n');
    if (index > slices + 1) return undefined;
    const from = (index - 1) * SNAPSHOT_PIECE_INSTANCES;
    let text = '';
    const to = Math.min(instances.length, from + SNAPSHOT_PIECE_INSTANCES);
    for (let i = from; i < to; i++) text += (i === 0 ? '' : ',') + JSON.stringify(instances[i]);
    return Buffer.from(text);
  }
}

/** Instances per piece of a large snapshot's bytes (WatchFrame.piece). */
export const SNAPSHOT_PIECE_INSTANCES = 1_000;

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
