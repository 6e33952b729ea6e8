import { describe, expect, it } from 'vitest';
import { formatVerdict } from '../../chaos/report.js';
import { runChaos } from '../../chaos/run.js';

// A short chaos run in the test suite: three real peers behind fault proxies, 30 clients doing
// random registers, heartbeats, status changes, re-registers and cancels against random peers,
// 60 s of partitions, one-way cuts, delays, drops and flapping links, then the history checker
// (convergence, presence, no eviction, cancels, availability). Fixed seed; on failure the
// message is the seed and the failing history. `npm run chaos` runs the wider and longer forms.
//
// Scope: network faults only, 3 peers. Runs that also SIGKILL and restart peers, and long runs
// with 5 peers, fail today on the no-eviction property, for reasons in the product recorded
// with their seeds in bench/RESULTS.md (findings): a peer restarted without its data takes its
// former instances back from the start-up snapshot and evicts them, although their clients
// failed over elsewhere; and a peer owning less than `partitionGuardRatio` of the registry,
// held down for longer than a grace lease, has its instances hidden elsewhere while their
// clients heartbeat it. Widen this run (`kills: 'both'`, 5 peers) once those are settled.
const SEED = 20_261_129;

describe('chaos (short run)', () => {
  it(
    'keeps every promise the history checker checks',
    async () => {
      const lines: string[] = [];
      const { history, result } = await runChaos({
        seed: SEED,
        peers: 3,
        durationMs: 60_000,
        clients: 30,
        restarts: 'without',
        kills: 'none',
        log: (line) => lines.push(line),
      });
      expect(result.ok, `${formatVerdict(history, result)}\n\nrun log:\n${lines.join('\n')}`).toBe(true);
      // The run did what it is for: faults, partitions among them, and client work.
      expect(result.figures.faults).toBeGreaterThanOrEqual(5);
      expect(result.figures.partitions).toBeGreaterThanOrEqual(1);
      expect(result.figures.callsToLivePeers).toBeGreaterThan(1_000);
      expect(result.figures.convergedAfterMs).not.toBeNull();
    },
    150_000,
  );
});
