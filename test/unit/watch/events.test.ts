import { describe, expect, it } from 'vitest';
import { formatEvent, SNAPSHOT_PIECE_INSTANCES, WatchFrame, type SnapshotEvent } from '../../../src/watch/events.js';
import type { InstanceView } from '../../../src/registry/view.js';

function snapshot(count: number): SnapshotEvent {
  const instances = Array.from({ length: count }, (_, i) => ({ instanceId: `i-${i}`, host: '10.0.0.1', port: 1 + i, metadata: { note: i % 2 ? 'ünïcode 😀' : '"quoted"' } }) as unknown as InstanceView);
  return { type: 'snapshot', namespace: 'default', service: 'big', revision: 42, instances };
}

describe('WatchFrame', () => {
  it.each([2 * SNAPSHOT_PIECE_INSTANCES + 1, 3 * SNAPSHOT_PIECE_INSTANCES, 3 * SNAPSHOT_PIECE_INSTANCES + 7])(
    'writes a large snapshot (%i instances) in pieces whose bytes, in order, are the event as formatEvent writes it',
    (count) => {
      const frame = new WatchFrame(snapshot(count));
      expect(frame.large).toBe(true);
      const pieces: Buffer[] = [];
      for (let i = 0; ; i++) {
        const piece = frame.piece(i);
        if (piece === undefined) break;
        pieces.push(piece);
      }
      // A head, a piece per SNAPSHOT_PIECE_INSTANCES instances, a tail.
      expect(pieces).toHaveLength(Math.ceil(count / SNAPSHOT_PIECE_INSTANCES) + 2);
      const whole = Buffer.from(formatEvent(frame.event));
      expect(Buffer.concat(pieces).equals(whole)).toBe(true);
      expect(frame.bytes().equals(whole)).toBe(true);
      // Shared: asked again, the same buffers.
      expect(frame.piece(1)).toBe(pieces[1]);
    },
  );

  it('is one piece for any other frame', () => {
    const small = new WatchFrame(snapshot(10));
    expect(small.large).toBe(false);
    expect(small.piece(0)).toBe(small.bytes());
    expect(small.piece(1)).toBeUndefined();
    const delta = new WatchFrame({ type: 'delta', namespace: 'default', service: 'big', revision: 3, added: [], changed: [], removed: [{ instanceId: 'x' }] });
    expect(delta.large).toBe(false);
    expect(delta.piece(0)!.toString()).toBe(formatEvent(delta.event));
  });
});
