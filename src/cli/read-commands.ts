import type { ClusterStatus, PeerStatus } from '../cluster-status.js';
import type { ServiceListing, ServiceSummary } from '../registry/queries.js';
import type { InstanceView } from '../registry/view.js';
import { naturalCompare } from '../ui/natural-order.js';
import { plural } from '../ui/words.js';
import { CliError, EXIT_PEER, type PeerClient } from './client.js';
import { ago, clockTime, duration, metadataText, print, printJson, table } from './format.js';
import { Progress } from './progress.js';

export interface OutputOptions {
  json?: boolean;
}


/** Instances in the order the dashboard shows them: numbers in ids compare as numbers. */
function byInstanceId(instances: InstanceView[]): InstanceView[] {
  return [...instances].sort((a, b) => naturalCompare(a.instanceId, b.instanceId));
}

function address(instance: InstanceView): string {
  const host = instance.host.includes(':') ? `[${instance.host}]` : instance.host;
  return `${host}:${instance.port}${instance.securePort === null ? '' : ` (tls ${instance.securePort})`}`;
}

function leaseText(instance: InstanceView): string {
  if (instance.evictionHeld) return 'held';
  return instance.leaseLive ? duration(instance.leaseExpiresInMs) : 'expired';
}

/** `registry ls`: every service with its counts; `registry ls SERVICE`: its instances, any status. */
export async function listCommand(client: PeerClient, service: string | undefined, options: OutputOptions): Promise<void> {
  if (service === undefined) {
    const answer = await client.get<{ namespace: string; services: ServiceSummary[] }>('/v1/services');
    if (options.json) return printJson(answer);
    if (answer.services.length === 0) return print(`no services in namespace ${answer.namespace}`);
    return print(table(['service', 'instances', 'up', 'not up'], [...answer.services].sort((a, b) => naturalCompare(a.service, b.service)).map((s) => [s.service, s.instances, s.up, s.instances - s.up])));
  }
  const listing = await client.get<ServiceListing>(`/v1/services/${encodeURIComponent(service)}`, { status: 'all' });
  if (options.json) return printJson(listing);
  if (listing.instances.length === 0) return print(`no instances of ${service} in namespace ${listing.namespace}`);
  print(
    table(
      ['instance', 'address', 'status', 'zone', 'weight', 'owner', 'lease left'],
      byInstanceId(listing.instances).map((i) => [i.instanceId, address(i), i.status, i.zone || '-', i.weight, i.owner, leaseText(i)]),
    ),
  );
}

/** `registry show SERVICE`: every instance of a service in full, metadata included. */
export async function showCommand(client: PeerClient, service: string, options: OutputOptions): Promise<void> {
  const listing = await client.get<ServiceListing>(`/v1/services/${encodeURIComponent(service)}`, { status: 'all' });
  if (options.json) return printJson(listing);
  const up = listing.instances.filter((i) => i.status === 'UP').length;
  print(`service ${listing.service} (namespace ${listing.namespace}): ${plural(listing.instances.length, 'instance')}, ${up} up, revision ${listing.revision}${listing.protected ? ', PROTECTED (protect threshold applies)' : ''}`);
  for (const i of byInstanceId(listing.instances)) {
    print('');
    print(
      table(
        ['field', 'value'],
        [
          ['instance', i.instanceId],
          ['address', address(i)],
          ['status', i.status],
          ['zone', i.zone || '-'],
          ['group', i.group],
          ['weight', i.weight],
          ['metadata', metadataText(i.metadata)],
          ['owner', i.owner],
          ['lease', `${leaseText(i)} left of ${duration(i.leaseDurationMs)}`],
          ['registered', new Date(i.registeredAtMs).toISOString()],
          ['last write', `${new Date(i.lastUpdatedAtMs).toISOString()} (version ${i.version})`],
        ],
      )
        .split('\n')
        .slice(1)
        .join('\n'),
    );
  }
}

function peerRow(peer: PeerStatus, nowMs: number): (string | number)[] {
  const replication = peer.replication;
  return [
    peer.id,
    peer.state,
    peer.region,
    peer.zone || '-',
    ago(peer.lastContactMs, nowMs),
    replication?.queued ?? '-',
    replication ? duration(replication.lagMs) : '-',
    replication ? replication.failures.congestion + replication.failures.transient + replication.failures.permanent : '-',
    replication?.dropped ?? '-',
    peer.url,
  ];
}

/** `registry peers`: this peer, every peer it knows with its state and replication figures, and the eviction guards. */
export async function peersCommand(client: PeerClient, options: OutputOptions): Promise<void> {
  const status = await client.get<ClusterStatus>('/v1/cluster');
  if (options.json) return printJson(status);
  const { self, evictionSafety } = status;
  const nowMs = self.nowMs;
  print(`cluster ${status.cluster} (profile ${status.profile}), seen from ${self.id} at ${self.url}`);
  print(`${self.id}: ${self.ready ? 'ready' : 'NOT READY (still syncing)'}, region ${self.region}, zone ${self.zone || '-'}, ${plural(self.instances, 'instance')}, revision ${self.revision}`);
  const sp = evictionSafety.selfPreservation;
  const pg = evictionSafety.partitionGuard;
  print(`self-preservation: ${sp.active ? `ON since ${clockTime(sp.sinceMs ?? nowMs)}` : 'off'} (${sp.reason})`);
  print(`partition guard: ${pg.active ? `ON since ${clockTime(pg.sinceMs ?? nowMs)}` : 'off'} (${pg.reason})`);
  print('');
  if (status.peers.length === 0) return print('no other peers (a cluster of one)');
  print(table(['peer', 'state', 'region', 'zone', 'last contact', 'queue', 'lag', 'failures', 'dropped', 'url'], status.peers.map((peer) => peerRow(peer, nowMs))));
}

export interface WaitReadyOptions extends OutputOptions {
  /** Peers (this one included) that must be up; default every peer this one knows. */
  peers?: number;
  timeoutMs: number;
  intervalMs?: number;
}

/**
 * `registry wait-ready`: waits until the peer has finished its start-up sync and sees enough
 * peers up, showing progress; exit 1 when the time runs out. For scripts that start a cluster.
 */
export async function waitReadyCommand(client: PeerClient, options: WaitReadyOptions): Promise<void> {
  const progress = new Progress();
  const startedMs = Date.now();
  let last = 'no answer yet';
  for (;;) {
    let state: { ready: boolean; up: number; known: number } | undefined;
    try {
      const status = await client.get<ClusterStatus>('/v1/cluster');
      // A peer counts once it has answered: a seed is listed as up before its first probe.
      const up = 1 + status.peers.filter((peer) => peer.state === 'up' && peer.lastContactMs !== null).length;
      state = { ready: status.self.ready, up, known: 1 + status.peers.length };
      last = `${status.self.id}: ${state.ready ? 'ready' : 'syncing'}, ${up}/${options.peers ?? state.known} peers up`;
    } catch (error) {
      last = `waiting for ${client.baseUrl}: ${(error as Error).message.replace(/^cannot reach \S+: /, '')}`;
    }
    const elapsedMs = Date.now() - startedMs;
    if (state && state.ready && state.up >= (options.peers ?? state.known)) {
      progress.done(`${last} after ${duration(elapsedMs)}`);
      if (options.json) printJson({ ready: true, peersUp: state.up, peersKnown: state.known, waitedMs: elapsedMs });
      return;
    }
    if (elapsedMs >= options.timeoutMs) {
      progress.done(last);
      throw new CliError(`not ready after ${duration(options.timeoutMs)}: ${last}`, EXIT_PEER);
    }
    progress.update(`${spinner(elapsedMs)} ${last} (${duration(elapsedMs)})`);
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 250));
  }
}

function spinner(elapsedMs: number): string {
  return '|/-\\'[Math.floor(elapsedMs / 250) % 4]!;
}
