/** Every state a peer can be in, from this peer's point of view. */
export const peerStates = ['up', 'suspect', 'down'] as const;

/** A peer's liveness from this peer's point of view. */
export type PeerState = (typeof peerStates)[number];

/**
 * What a probe round found: the peer answered (directly or through another peer), it did
 * not, or it stayed suspect past the suspicion timeout.
 */
export type ProbeOutcome = 'ack' | 'no-ack' | 'suspicion-timeout';

/**
 * The membership state machine. An answer always means up. A missed probe makes an up peer
 * suspect (a suspect still counts as alive: one lost packet must not start grace leases);
 * only a suspicion that times out makes it down. A down peer stays down until it answers.
 */
export function nextState(state: PeerState, outcome: ProbeOutcome): PeerState {
  switch (outcome) {
    case 'ack':
      return 'up';
    case 'no-ack':
      return state === 'up' ? 'suspect' : state;
    case 'suspicion-timeout':
      return state === 'suspect' ? 'down' : state;
  }
}
