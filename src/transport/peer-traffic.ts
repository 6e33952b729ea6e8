import { peerMethods } from './peer-calls.js';

export type TrafficDirection = 'sent' | 'received';

/** Most peer ids counted apart; bytes of any further id are counted under `other` (ids come from callers' bodies). */
export const TRAFFIC_PEERS_MAX = 256;
export const OTHER_PEER = 'other';

/** The calls counted apart: every method of `/v1/peer/{method}`, and the snapshot stream. */
export const trafficCalls = [...peerMethods, 'snapshot-stream'] as const;
export type TrafficCall = (typeof trafficCalls)[number];

const CALL_INDEX = new Map<string, number>(trafficCalls.map((call, index) => [call, index]));
const WIDTH = trafficCalls.length * 2;

/**
 * Bytes on the wire between this peer and each other one, by peer-API call and direction, as
 * the HTTP edge sees them (compressed when they travel compressed): what this peer sent and
 * received as a caller (its requests, their answers) and as a responder (their requests, its
 * answers). Read by `/metrics` as `registry_peer_bytes_total`. One map lookup and an array
 * increment per call; the peer ids are bounded (`TRAFFIC_PEERS_MAX`).
 */
export class PeerTrafficCounts {
  private readonly byPeer = new Map<string, Float64Array>();

  /** Counts `bytes` exchanged with `peerId` for `call` (an unknown call name is not counted). */
  count(peerId: string, call: TrafficCall | string, direction: TrafficDirection, bytes: number): void {
    const callIndex = CALL_INDEX.get(call);
    if (callIndex === undefined || !(bytes > 0)) return;
    let counts = this.byPeer.get(peerId);
    if (!counts) {
      const id = this.byPeer.size < TRAFFIC_PEERS_MAX ? peerId : OTHER_PEER;
      counts = this.byPeer.get(id);
      if (!counts) this.byPeer.set(id, (counts = new Float64Array(WIDTH)));
    }
    counts[callIndex * 2 + (direction === 'sent' ? 0 : 1)]! += bytes;
  }

  /** Every non-zero count (scrape time). */
  *entries(): Generator<{ peer: string; call: TrafficCall; direction: TrafficDirection; bytes: number }> {
    for (const [peer, counts] of this.byPeer) {
      for (let i = 0; i < WIDTH; i++) {
        if (counts[i]! > 0) yield { peer, call: trafficCalls[i >> 1]!, direction: i % 2 === 0 ? 'sent' : 'received', bytes: counts[i]! };
      }
    }
  }
}
