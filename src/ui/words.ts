/**
 * What the dashboard says, in plain words: durations, ages, and what the eviction guards mean.
 * Pure (no DOM), shared with the command line, tested in Node.
 */

/** The parts of `GET /v1/cluster` the dashboard reads (docs/api.md lists every field). */
export interface ClusterView {
  cluster: string;
  profile: string;
  self: { id: string; url: string; region: string; zone: string; ready: boolean; nowMs: number; revision: number; instances: number; records: number };
  peers: PeerView[];
  evictionSafety: GuardsView;
}

export interface PeerView {
  id: string;
  url: string;
  region: string;
  zone: string;
  state: 'up' | 'suspect' | 'down';
  stateSinceMs: number;
  lastContactMs: number | null;
  replication: {
    queued: number;
    inFlight: number;
    lagMs: number;
    dropped: number;
    failures: Record<string, number>;
    lastError: string | null;
  } | null;
}

export interface GuardsView {
  selfPreservation: {
    active: boolean;
    mode: 'auto' | 'off';
    reason: string;
    renewalsInWindow: number;
    expectedRenewalsInWindow: number;
    thresholdRatio: number;
    ownedInstances: number;
    windowMs: number;
    sinceMs: number | null;
  };
  partitionGuard: { active: boolean; mode: 'auto' | 'off'; reason: string; downOwnedShare: number; ratio: number; sinceMs: number | null };
  held: { selfPreservation: number; partitionGuard: number; serviceCap: number; runCap: number };
}

/**
 * `1 instance`, `2 instances`: a count and its noun, singular for one. `shown` is how the count
 * is written (the dashboard groups digits: `1,000 instances`).
 */
export function plural(count: number, noun: string, shown: string = String(count)): string {
  return `${shown} ${count === 1 ? noun : `${noun}s`}`;
}

/** `850ms`, `12.5s`, `4m10s`, `3h05m`. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(ms)}ms`;
  if (abs < 60_000) return `${(ms / 1_000).toFixed(abs < 10_000 ? 1 : 0)}s`;
  const totalS = Math.round(ms / 1_000);
  if (abs < 3_600_000) return `${Math.floor(totalS / 60)}m${String(totalS % 60).padStart(2, '0')}s`;
  const totalM = Math.round(ms / 60_000);
  return `${Math.floor(totalM / 60)}h${String(totalM % 60).padStart(2, '0')}m`;
}

/** How long ago an epoch-ms time was, against `nowMs`; `never` for null. */
export function ago(atMs: number | null | undefined, nowMs: number): string {
  return atMs === null || atMs === undefined ? 'never' : `${duration(Math.max(0, nowMs - atMs))} ago`;
}

/** `k=v, k2=v2` (or `-`). */
export function metadataText(metadata: Record<string, string>): string {
  const entries = Object.entries(metadata);
  return entries.length === 0 ? '-' : entries.map(([key, value]) => `${key}=${value}`).join(', ');
}

const percent = (ratio: number) => `${Math.round(ratio * 100)}%`;

/** A banner: a headline, what it means, and the peer's own reason. */
export interface Notice {
  level: 'alert' | 'warning' | 'info';
  title: string;
  body: string;
  detail: string;
}

/** The banners the eviction guards call for: none when both are off by their own rule. */
export function guardNotices(guards: GuardsView, nowMs: number): Notice[] {
  const notices: Notice[] = [];
  const sp = guards.selfPreservation;
  if (sp.active) {
    notices.push({
      level: 'alert',
      title: 'Self-preservation is ON: this peer has stopped evicting instances',
      body:
        `In the last ${duration(sp.windowMs)} it received ${Math.round(sp.renewalsInWindow)} heartbeats, but the ${sp.ownedInstances} instances it owns should have sent about ${Math.round(sp.expectedRenewalsInWindow)} ` +
        `(it needs ${percent(sp.thresholdRatio)} of them). Only instances that were heartbeating count: one registered and never heard from again is not expected to heartbeat. So many missing heartbeats at once usually means a network problem on this peer's side, not that the instances died, ` +
        `so it keeps them listed until heartbeats come back` +
        (guards.held.selfPreservation > 0 ? `; ${guards.held.selfPreservation} expired instance(s) are being kept.` : '.') +
        (sp.sinceMs === null ? '' : ` On for ${duration(Math.max(0, nowMs - sp.sinceMs))}.`),
      detail: sp.reason,
    });
  } else if (sp.mode === 'off') {
    notices.push({
      level: 'info',
      title: 'Self-preservation is switched off by an operator',
      body: 'This peer evicts instances whose heartbeats stop even if many stop at once (PUT /v1/admin/eviction-guards sets it back to auto).',
      detail: sp.reason,
    });
  }
  const pg = guards.partitionGuard;
  if (pg.active) {
    notices.push({
      level: 'warning',
      title: 'Partition guard is ON: instances of unreachable peers are kept',
      body:
        `Peers this one cannot reach own ${percent(pg.downOwnedShare)} of the registry (the guard acts at ${percent(pg.ratio)}). ` +
        'That looks more like this peer being cut off than like those instances dying, so they stay listed until their peers come back or their clients move here.' +
        (pg.sinceMs === null ? '' : ` On for ${duration(Math.max(0, nowMs - pg.sinceMs))}.`),
      detail: pg.reason,
    });
  } else if (pg.mode === 'off') {
    notices.push({
      level: 'info',
      title: 'The partition guard is switched off by an operator',
      body: 'Instances of down peers are hidden once their grace lease runs out, however many there are.',
      detail: pg.reason,
    });
  }
  return notices;
}

/** A one-line summary of the peers: `3 peers: 2 up, 1 down`. */
export function peerSummary(cluster: ClusterView): string {
  const counts = { up: 1, suspect: 0, down: 0 };
  for (const peer of cluster.peers) counts[peer.state] += 1;
  const total = cluster.peers.length + 1;
  const parts = [`${counts.up} up`];
  if (counts.suspect > 0) parts.push(`${counts.suspect} suspect`);
  if (counts.down > 0) parts.push(`${counts.down} down`);
  return `${total} peer${total === 1 ? '' : 's'}: ${parts.join(', ')}`;
}
