/**
 * One chaos run: real peer processes on 127.0.0.1 behind fault proxies, clients doing random
 * work against random peers, a nemesis partitioning, cutting, delaying, dropping, flapping
 * links and killing peers; then every fault healed, every peer up, writes stopped but
 * heartbeats, and full reads of every peer until they agree (or the time is up). Returns the
 * recorded history and the checker's verdict. Bounded in time: the run's duration plus the
 * final phase (at most a minute).
 */
import { seededRng } from '../src/clock/rng.js';
import { profiles } from '../src/config/profiles.js';
import { clusterSettings } from '../src/config/settings.js';
import { RealCluster } from '../test/support/real-cluster.js';
import { checkHistory, sameEverywhere, type CheckResult } from './checker.js';
import type { CheckSettings, FinalRound, History } from './history.js';
import { defaultNemesis, Nemesis, type KillMode } from './nemesis.js';
import { Observer } from './observer.js';
import { PeerTable, type PeerLog } from './peers.js';
import { defaultWorkload, Workload } from './workload.js';

export interface ChaosOptions {
  seed: number;
  peers: number;
  /** How long faults are injected (the final phase comes on top). */
  durationMs: number;
  clients: number;
  /** How killed peers restart; `with`/`both` need a peer that keeps its data dir (see data-dir-probe.ts). */
  restarts: 'with' | 'without' | 'both';
  /** Whether and when killed peers restart: see NemesisInit.kills. */
  kills: KillMode;
  /** One fault at a time instead of overlapping network faults and kills. */
  serial?: boolean;
  /** Time between two polls of every peer. */
  pollIntervalMs?: number;
  /** The peers' log level (default warn); their logs come back with the history. */
  peerLogLevel?: 'warn' | 'info' | 'debug';
  settings?: Partial<CheckSettings>;
  log?: (line: string) => void;
}

/**
 * Convergence target after the last heal: a healed peer is probed again within one probe
 * interval (250 ms in the local profile), a peer coming back triggers an anti-entropy round
 * at once, and rounds run every second (+50% jitter) anyway; a restarted peer syncs before it
 * is ready. 5 s leaves room for several rounds on a loaded two-core machine.
 */
export const CONVERGENCE_TARGET_MS = 5_000;

/** The peers run the `local` profile: a start-up sync call gives up after its peer call timeout. */
const PEER_CALL_TIMEOUT_MS = profiles.local.overrides.peerCallTimeoutMs ?? 2_000;

function defaultSettings(peers: number): CheckSettings {
  return {
    convergenceTargetMs: CONVERGENCE_TARGET_MS,
    leaseSlackMs: 50,
    replicationAllowanceMs: 1_000,
    // Every other peer asked in turn, then starting alone; a second for the process itself.
    startupAllowanceMs: (peers - 1) * PEER_CALL_TIMEOUT_MS + 1_000,
    replicationBatchDelayMs: profiles.local.overrides.replicationBatchDelayMs ?? clusterSettings.replicationBatchDelayMs.default,
  };
}

/** Calls from clients and the observer give up after this long (a peer on loopback answers in ms). */
const CALL_TIMEOUT_MS = 3_000;
/** The final phase reads every peer for at most this long after the last heal. */
const FINAL_PHASE_MAX_MS = 30_000;

export async function runChaos(options: ChaosOptions): Promise<{ history: History; result: CheckResult; peerLogs: PeerLog[] }> {
  const log = options.log ?? (() => {});
  const settings = { ...defaultSettings(options.peers), ...options.settings };
  const rng = seededRng(options.seed);
  const dataDirs = options.restarts !== 'without';
  log(`chaos seed ${options.seed}: ${options.peers} peers, ${options.clients} clients, ${Math.round(options.durationMs / 1_000)} s of faults, restarts ${options.restarts} data dir, kills: ${options.kills}${options.serial ? ', one fault at a time' : ''}`);
  // Every client of the run connects from 127.0.0.1: the per-address rate limit would count
  // them as one client, so it is off (real clients come from many addresses).
  const cluster = await RealCluster.start({
    size: options.peers,
    seed: options.seed,
    dataDirs,
    file: { limits: { rateLimitPerSecond: 0 } },
    args: ['--log-level', options.peerLogLevel ?? 'warn'],
    startOneByOne: true,
  });
  const peers = new PeerTable(cluster, CALL_TIMEOUT_MS, dataDirs ? 'keep' : 'none');
  const workload = new Workload(peers, seededRng(rng.next() * 2 ** 32), { ...defaultWorkload, clients: options.clients });
  const observer = new Observer(peers, defaultWorkload.services, options.pollIntervalMs ?? 250);
  const nemesis = new Nemesis(peers, seededRng(rng.next() * 2 ** 32), { ...defaultNemesis, restarts: options.restarts, kills: options.kills, overlap: !options.serial, dataDirs, log });
  if (!(await answeringPromptly(peers))) log(`the peers did not all answer within ${PROMPT_ANSWER_MS} ms ${PROMPT_ROUNDS} times in a row within ${WARM_UP_MAX_MS / 1_000} s; starting anyway`);
  const startedAtMs = Date.now();
  const rounds: FinalRound[] = [];
  let quiescedAtMs = startedAtMs;
  let lastHealAtMs = startedAtMs;
  try {
    workload.start();
    observer.start();
    // Let the clients register before the first fault.
    await sleep(2_000);
    nemesis.start();
    let lastReportMs = Date.now();
    while (Date.now() - startedAtMs < options.durationMs) {
      await sleep(250);
      if (Date.now() - lastReportMs >= 10_000) {
        lastReportMs = Date.now();
        log(`${Math.round((Date.now() - startedAtMs) / 1_000)} s: ${workload.ops.length} client operations, ${nemesis.faults.length} faults so far`);
      }
    }
    log('final phase: every fault healed, every peer restarted, writes stopped (heartbeats go on)');
    await nemesis.stop();
    cluster.heal();
    workload.mode = 'quiet';
    quiescedAtMs = Date.now();
    // Convergence is timed from here: the network is whole and every peer process runs again
    // (a restarted one may still be syncing: that time counts).
    lastHealAtMs = Date.now();
    if (!(await peers.waitAllReady(20_000))) log('not every peer became ready within 20 s');
    // Read every peer until they agree, and a little longer to see that they stay agreed.
    let agreedRounds = 0;
    while (Date.now() - lastHealAtMs < FINAL_PHASE_MAX_MS && agreedRounds < 3) {
      const round = await observer.finalRound();
      rounds.push(round);
      agreedRounds = sameEverywhere(round, cluster.ids) ? agreedRounds + 1 : 0;
      if (agreedRounds === 0 && Date.now() - lastHealAtMs > settings.convergenceTargetMs * 3) break;
      await sleep(250);
    }
  } finally {
    await workload.stop();
    await observer.stop();
    try {
      await nemesis.stop();
    } finally {
      // Whatever went wrong, no peer process of this run is left running.
      await peers.stop();
    }
  }
  const history: History = {
    seed: options.seed,
    peers: cluster.ids,
    startedAtMs,
    endedAtMs: Date.now(),
    settings,
    ops: workload.ops,
    abandoned: workload.abandoned,
    runs: peers.runs,
    faults: nemesis.faults,
    observations: observer.observations,
    final: { lastHealAtMs, quiescedAtMs, rounds },
  };
  return { history, result: checkHistory(history), peerLogs: peers.logs };
}

/**
 * Before the run starts: every peer answers a read within PROMPT_ANSWER_MS, PROMPT_ROUNDS
 * rounds in a row (at most WARM_UP_MAX_MS). Freshly started processes on a loaded machine may
 * take seconds to answer their first calls (code still being compiled, the processes of other
 * work competing for the CPU); the run's clients would otherwise begin with calls that time
 * out before any fault was injected. Nothing of the run is recorded yet.
 */
const PROMPT_ANSWER_MS = 500;
const PROMPT_ROUNDS = 3;
const WARM_UP_MAX_MS = 30_000;

async function answeringPromptly(peers: PeerTable): Promise<boolean> {
  const deadline = Date.now() + WARM_UP_MAX_MS;
  let rounds = 0;
  while (Date.now() < deadline) {
    const startedMs = Date.now();
    const answers = await Promise.all(peers.ids.map((id) => peers.call(id, 'GET', '/v1/services')));
    const prompt = Date.now() - startedMs <= PROMPT_ANSWER_MS && answers.every((answer) => answer.status === 200);
    rounds = prompt ? rounds + 1 : 0;
    if (rounds >= PROMPT_ROUNDS) return true;
    await sleep(100);
  }
  return false;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
