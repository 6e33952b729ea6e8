import { leaseLeft, type InstanceEntry, type ServiceState } from './model.js';
import { rateText, type ProtocolRow } from './protocols.js';
import { ago, duration, guardNotices, metadataText, type ClusterView, type Notice, type PeerView } from './words.js';

/**
 * DOM builders of the dashboard. Every text from the registry goes in through `textContent`,
 * never as HTML, so names and metadata cannot inject markup.
 */

type Child = Node | string | null | undefined | false;

export function h(tag: string, attributes: Record<string, string> = {}, ...children: Child[]): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'class') element.className = value;
    else element.setAttribute(name, value);
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) element.append(child);
  return element;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element as T;
}

const stateBadge = (state: string, label = state) => h('span', { class: `badge state-${state}`, 'data-state': state }, label);
const cell = (text: string | number, className = '') => h('td', className ? { class: className } : {}, String(text));

function failures(peer: PeerView): number {
  return peer.replication ? Object.values(peer.replication.failures).reduce((sum, count) => sum + count, 0) : 0;
}

/** The rows of the peers table: this peer first, then the others with their replication figures. */
export function peerRows(cluster: ClusterView): HTMLElement[] {
  const { self } = cluster;
  const nowMs = self.nowMs;
  const selfRow = h(
    'tr',
    { class: 'self', 'data-peer': self.id },
    h('td', {}, h('strong', {}, self.id), h('span', { class: 'muted' }, ' (this peer)')),
    h('td', {}, stateBadge(self.ready ? 'up' : 'suspect', self.ready ? 'up' : 'syncing')),
    cell(self.region),
    cell(self.zone || '-'),
    cell('-', 'num'),
    cell('-'),
    cell('-', 'num'),
    cell('-', 'num'),
    cell('-', 'num'),
  );
  const others = cluster.peers.map((peer) => {
    const replication = peer.replication;
    const lag = replication ? (replication.queued === 0 ? '0' : duration(replication.lagMs)) : '-';
    return h(
      'tr',
      { 'data-peer': peer.id, class: `peer-${peer.state}`, title: replication?.lastError ? `last error: ${replication.lastError}` : peer.url },
      h('td', {}, h('a', { href: peer.url + '/' }, peer.id)),
      h('td', {}, stateBadge(peer.state), h('span', { class: 'muted since' }, ` ${duration(Math.max(0, nowMs - peer.stateSinceMs))}`)),
      cell(peer.region),
      cell(peer.zone || '-'),
      cell(replication ? replication.queued + replication.inFlight : '-', 'num'),
      cell(ago(peer.lastContactMs, nowMs)),
      cell(lag, 'num'),
      cell(failures(peer), failures(peer) > 0 ? 'num warn' : 'num'),
      cell(replication?.dropped ?? '-', (replication?.dropped ?? 0) > 0 ? 'num warn' : 'num'),
    );
  });
  return [selfRow, ...others];
}

function banner(notice: Notice, id: string): HTMLElement {
  return h(
    'div',
    { class: `banner ${notice.level}`, id, role: notice.level === 'info' ? 'status' : 'alert' },
    h('strong', {}, notice.title),
    h('p', {}, notice.body),
    h('p', { class: 'detail' }, `The peer says: ${notice.detail}`),
  );
}

/** Banners for what needs attention: the peer unreachable or syncing, and the eviction guards. */
export function banners(cluster: ClusterView | null, connectionError: string | null): HTMLElement[] {
  const out: HTMLElement[] = [];
  if (connectionError) {
    out.push(banner({ level: 'alert', title: 'Cannot reach this peer', body: 'What you see may be out of date; retrying.', detail: connectionError }, 'banner-connection'));
  }
  if (!cluster) return out;
  if (!cluster.self.ready) {
    out.push(
      banner(
        { level: 'warning', title: 'This peer is still syncing', body: 'It has not finished copying the registry from another peer; its lists may be incomplete for a moment.', detail: 'not ready (/readyz answers 503)' },
        'banner-syncing',
      ),
    );
  }
  for (const notice of guardNotices(cluster.evictionSafety, cluster.self.nowMs)) out.push(banner(notice, notice.title.startsWith('Self') ? 'banner-self-preservation' : 'banner-partition-guard'));
  const down = cluster.peers.filter((peer) => peer.state === 'down');
  if (down.length > 0) {
    out.push(
      banner(
        {
          level: 'warning',
          title: `${down.length === 1 ? 'A peer is' : `${down.length} peers are`} down: ${down.map((peer) => peer.id).join(', ')}`,
          body: 'This peer cannot reach it. Its instances stay listed for one lease, then are hidden here unless their clients move to a live peer; writes for it wait in its replication queue.',
          detail: down.map((peer) => `${peer.id} silent since ${ago(peer.lastContactMs, cluster.self.nowMs)}`).join('; '),
        },
        'banner-peers-down',
      ),
    );
  }
  return out;
}

const countCell = (count: number, status: string) => h('span', { class: count > 0 && status !== 'UP' ? `num status-${status}` : 'num' }, String(count));

/** One row of the services list. */
export function serviceRow(service: ServiceState, selected: boolean): HTMLElement {
  const total = service.instances.size;
  const row = h(
    'div',
    { class: `row services-row${selected ? ' selected' : ''}`, role: 'option', 'aria-selected': String(selected), 'data-service': service.name, tabindex: '0' },
    h('span', { class: 'name' }, service.name, service.held > 0 ? h('span', { class: 'badge state-suspect', title: 'instances kept by an eviction guard' }, `${service.held} held`) : null),
    h('span', { class: 'num' }, String(total)),
    countCell(service.counts.UP, 'UP'),
    countCell(service.counts.DOWN, 'DOWN'),
    countCell(service.counts.STARTING, 'STARTING'),
    countCell(service.counts.OUT_OF_SERVICE, 'OUT_OF_SERVICE'),
  );
  return row;
}

/** The rows of the Protocols panel: listener (or off), clients held, rates and totals. */
export function protocolRowElements(rows: readonly ProtocolRow[]): HTMLElement[] {
  return rows.map((row) => {
    const listener = row.listener;
    const where = !listener ? '-' : listener.on ? `${listener.address ?? ''} (${listener.transport})` : 'off';
    return h(
      'tr',
      { 'data-protocol': row.protocol, class: listener && !listener.on ? 'off' : '' },
      h('td', {}, h('strong', {}, row.listener?.label ?? row.protocol)),
      h('td', { class: listener?.on ? 'listener' : 'listener muted' }, where),
      cell(row.held.toLocaleString('en'), 'num held'),
      cell(rateText(row.requestsPerSecond), 'num rps'),
      cell(rateText(row.refusedPerSecond), (row.refusedPerSecond ?? 0) > 0 ? 'num refused-rate warn' : 'num refused-rate'),
      cell(row.requests.toLocaleString('en'), 'num requests'),
      h(
        'td',
        { class: row.refused + row.refusedAtCap > 0 ? 'num refused warn' : 'num refused', title: 'requests refused (rate, cap, credentials); slots refused at a cap' },
        row.refused.toLocaleString('en'),
        row.refusedAtCap > 0 ? h('span', { class: 'at-cap' }, ` · ${row.refusedAtCap.toLocaleString('en')} at a cap`) : null,
      ),
    );
  });
}

/**
 * One row of the instances table; the lease counts down from when its figure was read. `via`:
 * the protocol that registered it, when known, and its label (protocols.ts, `protocolLabel`).
 */
export function instanceRow(entry: InstanceEntry, nowMs: number, via?: string, viaLabel: string = via ?? ''): HTMLElement {
  const { instance } = entry;
  const lease = leaseLeft(entry, nowMs);
  const host = instance.host.includes(':') ? `[${instance.host}]` : instance.host;
  const metadata = metadataText(instance.metadata);
  return h(
    'div',
    { class: 'row instances-row', 'data-instance': instance.instanceId },
    h(
      'span',
      { class: 'name', title: instance.instanceId },
      instance.instanceId,
      via ? h('span', { class: `badge via via-${via}`, 'data-via': via, title: `registered through ${viaLabel}` }, via) : null,
    ),
    h('span', { title: 'address' }, `${host}:${instance.port}${instance.securePort === null ? '' : ` · tls ${instance.securePort}`}`),
    h('span', {}, h('span', { class: `badge status-${instance.status}` }, instance.status)),
    h('span', { class: 'zone' }, instance.zone || '-'),
    h('span', { class: 'num' }, String(instance.weight)),
    h('span', { class: 'metadata', title: metadata }, metadata),
    h('span', { class: 'owner' }, instance.owner),
    h('span', { class: `num lease${typeof lease === 'string' ? ` lease-${lease}` : ''}` }, typeof lease === 'string' ? lease : duration(lease)),
  );
}
