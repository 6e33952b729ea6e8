import { describe, expect, it } from 'vitest';
import { formatVerdict } from '../../chaos/report.js';
import { runChaos } from '../../chaos/run.js';

// A short chaos run in the test suite: three real peers behind fault proxies, 30 clients, 60 s
// of partitions, one-way cuts, delays, drops, flaps and SIGKILLs with restarts (without a data
// dir: the peer does not keep one yet), then the history checker. Fixed seed; on failure the
// message is the seed and the failing history. `npm run chaos` runs the long and wider forms.
//
// Scope: one fault at a time, and a killed peer comes back once the others hold it down. The
// wider form (kills overlapping partitions, quick bounces) fails today on a product defect,
// reported with its seeds in bench/RESULTS.md: a peer restarted without its data takes its
// former instances back from the start-up snapshot with a fresh lease, although their clients
// failed over elsewhere, and evicts them when that lease runs out. Widen this run (drop
// `serial`, `kills: 'both'`) once that is fixed.
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
        kills: 'detected',
        serial: true,
        log: (line) => lines.push(line),
      });
      expect(result.ok, `${formatVerdict(history, result)}\n\nrun log:\n${lines.join('\n')}`).toBe(true);
      // The run did what it is for: faults of each lane, client work, and an answer to every call to a running peer.
      expect(result.figures.faults).toBeGreaterThanOrEqual(5);
      expect(result.figures.kills).toBeGreaterThanOrEqual(1);
      expect(result.figures.partitions).toBeGreaterThanOrEqual(1);
      expect(result.figures.callsToLivePeers).toBeGreaterThan(1_000);
      expect(result.figures.convergedAfterMs).not.toBeNull();
    },
    150_000,
  );
});
