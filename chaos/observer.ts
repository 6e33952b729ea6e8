/**
 * Polls what every running peer serves (each workload service, `?status=all`: every instance
 * with a live or held lease, whatever its status) and records it as observations (changes
 * since the previous poll of the same peer incarnation), and, after the last heal, as full
 * final rounds. Bounded: one poll round at a time, each call bounded by the call timeout.
 */
import { diffServed, type FinalRound, type Observation, type ServedInstance } from './history.js';
import type { PeerTable } from './peers.js';

interface ListedInstance {
  instanceId: string;
  version: string;
  status: string;
  evictionHeld?: boolean;
}

export class Observer {
  readonly observations: Observation[] = [];
  private readonly last = new Map<string, Map<string, ServedInstance>>();
  private round = 0;
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly peers: PeerTable,
    private readonly services: readonly string[],
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        const startedMs = Date.now();
        await this.pollRound();
        await sleep(Math.max(0, this.intervalMs - (Date.now() - startedMs)));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /** One full read of every peer, for the final phase (peers that do not answer are left out). */
  async finalRound(): Promise<FinalRound> {
    const atMs = Date.now();
    const reads = await Promise.all(this.peers.ids.map(async (id) => [id, await this.read(id)] as const));
    const perPeer: FinalRound['perPeer'] = {};
    for (const [id, served] of reads) {
      if (served) perPeer[id] = Object.fromEntries([...served].map(([key, instance]) => [key, instance.version]));
    }
    return { atMs, doneAtMs: Date.now(), perPeer };
  }

  private async pollRound(): Promise<void> {
    this.round += 1;
    const round = this.round;
    await Promise.all(
      this.peers.ids.map(async (id) => {
        if (!this.peers.isUp(id)) return;
        const incarnation = this.peers.incarnation(id);
        const sentAtMs = Date.now();
        const served = await this.read(id);
        const doneAtMs = Date.now();
        // A poll that failed, or that straddled a restart, says nothing certain: leave it out.
        if (!served || this.peers.incarnation(id) !== incarnation || !this.peers.isUp(id)) return;
        const slot = `${id}#${incarnation}`;
        const changes = diffServed(this.last.get(slot) ?? new Map(), served);
        this.last.set(slot, served);
        this.observations.push({ peer: id, incarnation, round, sentAtMs, doneAtMs, changes });
      }),
    );
  }

  /** Every instance a peer serves in the workload's services; undefined if any read failed. */
  private async read(id: string): Promise<Map<string, ServedInstance> | undefined> {
    const served = new Map<string, ServedInstance>();
    for (const service of this.services) {
      const answer = await this.peers.call(id, 'GET', `/v1/services/${service}?status=all`);
      if (answer.status !== 200) return undefined;
      for (const instance of (answer.body as { instances: ListedInstance[] }).instances) {
        served.set(`${service}/${instance.instanceId}`, {
          version: instance.version,
          status: instance.status,
          held: instance.evictionHeld === true,
        });
      }
    }
    return served;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
