import { getJson, storedToken, storeToken, watchNamespace } from './api.js';
import { RegistryModel, type DeltaEvent, type Instance, type ServiceState, type SnapshotEvent } from './model.js';
import { protocolLabel, protocolRows, registeredThrough, registrationsByService, type ProtocolsView, type RegistrationsView } from './protocols.js';
import { banners, byId, h, instanceRow, peerRows, protocolRowElements, serviceRow } from './render.js';
import { VirtualList } from './virtual-list.js';
import { peerSummary, plural, type ClusterView } from './words.js';

/**
 * The dashboard: the cluster (polled from `/v1/cluster`), banners for what needs attention,
 * and the services and instances of one namespace, live from the watch stream. Rendering is
 * batched into one animation frame and only the rows in view exist in the DOM.
 */

const CLUSTER_POLL_MS = 1_500;
/** Lease figures of the selected service are refreshed this often (heartbeats are not streamed). */
const LEASE_REFRESH_MS = 5_000;
/** Which protocol registered each instance changes only with registrations: read this often. */
const REGISTRATIONS_REFRESH_MS = 5_000;
const NAMESPACES_KEY = 'registry.namespaces';

interface State {
  namespace: string;
  model: RegistryModel;
  selected: string | null;
  query: string;
  cluster: ClusterView | null;
  clusterError: string | null;
  streamOpen: boolean;
  stopWatch: () => void;
  /** The last two readings of the Protocols panel (rates come from their difference). */
  protocols: ProtocolsView | null;
  previousProtocols: ProtocolsView | null;
  protocolsError: string | null;
  /** The "registered through" filter ('' = any protocol). */
  via: string;
  /** Per service, its instances by the protocol that registered them. */
  registrations: Map<string, Record<string, number>>;
  /** The protocol of each instance of the selected service. */
  instanceVia: Map<string, string>;
}

const params = new URLSearchParams(location.search);
const state: State = {
  namespace: params.get('namespace') || 'default',
  model: new RegistryModel('default'),
  selected: params.get('service'),
  query: '',
  cluster: null,
  clusterError: null,
  streamOpen: false,
  stopWatch: () => undefined,
  protocols: null,
  previousProtocols: null,
  protocolsError: null,
  via: params.get('via') ?? '',
  registrations: new Map(),
  instanceVia: new Map(),
};

const servicesList = new VirtualList<ServiceState>(byId('services'), (service) => serviceRow(service, service.name === state.selected));
const instancesList = new VirtualList<ReturnType<RegistryModel['instancesOf']>[number]>(byId('instances'), (entry) =>
  instanceRow(entry, Date.now(), state.instanceVia.get(entry.instance.instanceId), viaLabel(state.instanceVia.get(entry.instance.instanceId) ?? '')),
);

// --- rendering --------------------------------------------------------------------------------

let frame = 0;
let servicesDirty = true;
let instancesDirty = true;

function scheduleRender(): void {
  if (frame === 0) frame = requestAnimationFrame(render);
}

function render(): void {
  frame = 0;
  renderHeader();
  if (servicesDirty) renderServices();
  if (instancesDirty) renderInstances();
  servicesDirty = false;
  instancesDirty = false;
}

function renderHeader(): void {
  const { cluster } = state;
  byId('self').textContent = cluster
    ? `${cluster.cluster} · ${cluster.self.id} · ${cluster.self.region}${cluster.self.zone ? `/${cluster.self.zone}` : ''} · ${cluster.profile} profile`
    : state.clusterError
      ? 'cannot reach this peer'
      : 'connecting…';
  const live = byId('live');
  live.textContent = state.streamOpen ? '● live' : '○ reconnecting';
  live.className = `live ${state.streamOpen ? 'on' : 'off'}`;
  byId('banners').replaceChildren(...banners(cluster, state.clusterError));
  if (cluster) {
    byId('cluster-summary').textContent = `${peerSummary(cluster)} · ${plural(cluster.self.instances, 'instance', cluster.self.instances.toLocaleString())} served · revision ${cluster.self.revision}`;
    byId('peers').querySelector('tbody')!.replaceChildren(...peerRows(cluster));
  }
  renderProtocols();
}

function renderProtocols(): void {
  const view = state.protocols;
  const summary = byId('protocols-summary');
  if (!view) {
    summary.textContent = state.protocolsError ?? 'loading…';
    return;
  }
  const rows = protocolRows(view, state.previousProtocols);
  const on = view.listeners.filter((listener) => listener.on).length;
  summary.textContent = `${on} of ${view.listeners.length} listeners on` + (state.protocolsError ? ` · ${state.protocolsError}` : '');
  byId('protocols').querySelector('tbody')!.replaceChildren(...protocolRowElements(rows));
}

function renderServices(): void {
  const services = state.model.servicesMatching(state.query).filter((service) => registeredThrough(state.registrations, service.name, state.via));
  // Something to look at from the first glance: the first service, until the user picks one.
  if (state.selected === null && services.length > 0) {
    state.selected = services[0]!.name;
    instancesDirty = true;
    void refreshLeases();
    void refreshRegistrations();
  }
  servicesList.setItems(services);
  const total = state.model.names().length;
  byId('services-summary').textContent =
    `${plural(total, 'service', total.toLocaleString())} · ${plural(state.model.total, 'instance', state.model.total.toLocaleString())}` +
    (state.query || state.via ? ` · ${services.length.toLocaleString()} matching` : '') +
    (state.via ? ` · ${plural(services.length, 'service')} still registered through ${viaLabel(state.via)}` : '');
  byId('services-empty').hidden = total > 0 || !state.streamOpen;
}

function renderInstances(): void {
  const name = state.selected;
  const service = name ? state.model.services.get(name) : undefined;
  const entries = (name ? state.model.instancesOf(name, state.query) : []).filter(
    (entry) => state.via === '' || state.instanceVia.get(entry.instance.instanceId) === state.via,
  );
  instancesList.setItems(entries);
  byId('instances-title').textContent = name ? `Instances of ${name}` : 'Instances';
  const size = service?.instances.size ?? 0;
  byId('instances-summary').textContent = service
    ? `${size.toLocaleString()} listed · ${service.counts.UP.toLocaleString()} up` + (entries.length !== size ? ` · ${entries.length.toLocaleString()} matching` : '')
    : '';
  const empty = byId('instances-empty');
  empty.hidden = entries.length > 0;
  empty.textContent = !name ? 'Pick a service to see its instances.' : size === 0 ? `${name} has no instances right now.` : 'No instance matches the search.';
}

// --- data ---------------------------------------------------------------------------------------

async function pollCluster(): Promise<void> {
  try {
    state.cluster = await getJson<ClusterView>('/v1/cluster');
    state.clusterError = null;
  } catch (error) {
    state.clusterError = error instanceof Error ? error.message : String(error);
  }
  scheduleRender();
}

const viaLabel = (protocol: string) => protocolLabel(protocol, state.protocols);

/** The "registered through" filter's choices, from the peer's list of registering protocols (rebuilt when it changes). */
function viaChoices(view: ProtocolsView): void {
  const select = byId<HTMLSelectElement>('via');
  const wanted = view.registering.map((entry) => entry.protocol).join(',');
  if (select.dataset.choices === wanted) return;
  select.dataset.choices = wanted;
  select.replaceChildren(
    h('option', { value: '' }, 'Registered through any protocol'),
    ...view.registering.map((entry) => h('option', { value: entry.protocol }, `Registered through ${entry.label}`)),
  );
  select.value = state.via;
}

async function pollProtocols(): Promise<void> {
  try {
    const view = await getJson<ProtocolsView>('/v1/dashboard/protocols');
    state.previousProtocols = state.protocols;
    state.protocols = view;
    state.protocolsError = null;
    viaChoices(view);
  } catch (error) {
    state.protocolsError = error instanceof Error ? error.message : String(error);
  }
  scheduleRender();
}

/** Which protocol registered the instances: counts per service, and each instance of the selected service. */
async function refreshRegistrations(): Promise<void> {
  if (document.hidden) return;
  const namespace = state.namespace;
  const name = state.selected;
  try {
    const query = `namespace=${encodeURIComponent(namespace)}${name ? `&service=${encodeURIComponent(name)}` : ''}`;
    const view = await getJson<RegistrationsView>(`/v1/dashboard/registrations?${query}`);
    if (namespace !== state.namespace) return;
    state.registrations = registrationsByService(view);
    if (name === state.selected) state.instanceVia = new Map((view.instances ?? []).map((entry) => [entry.instanceId, entry.protocol]));
    servicesDirty = instancesDirty = true;
    scheduleRender();
  } catch {
    // the next refresh tries again
  }
}

async function refreshLeases(): Promise<void> {
  const name = state.selected;
  if (!name || document.hidden) return;
  try {
    const listing = await getJson<{ instances: Instance[] }>(
      `/v1/services/${encodeURIComponent(name)}?status=all&namespace=${encodeURIComponent(state.namespace)}`,
    );
    state.model.refreshLeases(name, listing.instances, Date.now());
  } catch {
    // the next refresh tries again; the countdown goes on meanwhile
  }
}

function watch(namespace: string): void {
  state.stopWatch();
  state.model = new RegistryModel(namespace);
  state.streamOpen = false;
  servicesDirty = instancesDirty = true;
  state.stopWatch = watchNamespace(namespace, {
    onOpen: () => {
      // A new stream starts with fresh snapshots of every service.
      state.model = new RegistryModel(namespace);
      state.streamOpen = true;
      servicesDirty = instancesDirty = true;
      scheduleRender();
    },
    onEvent: (event, data) => {
      const nowMs = Date.now();
      if (event === 'snapshot') state.model.applySnapshot(data as SnapshotEvent, nowMs);
      else if (event === 'delta') state.model.applyDelta(data as DeltaEvent, nowMs);
      else return;
      servicesDirty = true;
      if ((data as { service: string }).service === state.selected) instancesDirty = true;
      scheduleRender();
    },
    onClose: () => {
      state.streamOpen = false;
      scheduleRender();
    },
  });
  scheduleRender();
}

// --- controls -------------------------------------------------------------------------------------

function updateUrl(): void {
  const url = new URL(location.href);
  url.searchParams.set('namespace', state.namespace);
  if (state.via) url.searchParams.set('via', state.via);
  else url.searchParams.delete('via');
  if (state.selected) url.searchParams.set('service', state.selected);
  else url.searchParams.delete('service');
  history.replaceState(null, '', url);
}

function select(name: string): void {
  state.selected = name;
  servicesDirty = instancesDirty = true;
  byId('instances').scrollTop = 0;
  updateUrl();
  scheduleRender();
  void refreshLeases();
  void refreshRegistrations();
}

function rememberNamespace(namespace: string): void {
  let known: string[] = [];
  try {
    known = JSON.parse(localStorage.getItem(NAMESPACES_KEY) ?? '[]') as string[];
  } catch {
    known = [];
  }
  known = [namespace, ...known.filter((name) => name !== namespace)].slice(0, 20);
  try {
    localStorage.setItem(NAMESPACES_KEY, JSON.stringify(known));
  } catch {
    // private mode
  }
  const options = ['default', ...known.filter((name) => name !== 'default')].map((name) => h('option', { value: name }));
  byId('namespaces').replaceChildren(...options);
}

function setUp(): void {
  const namespaceInput = byId<HTMLInputElement>('namespace');
  namespaceInput.value = state.namespace;
  rememberNamespace(state.namespace);
  namespaceInput.addEventListener('change', () => {
    const namespace = namespaceInput.value.trim() || 'default';
    if (namespace === state.namespace) return;
    state.namespace = namespace;
    state.selected = null;
    rememberNamespace(namespace);
    updateUrl();
    watch(namespace);
    state.registrations = new Map();
    state.instanceVia = new Map();
    void refreshRegistrations();
  });

  // The choices come with the protocols view (viaChoices): the page names no protocol itself.
  const via = byId<HTMLSelectElement>('via');
  via.value = state.via;
  via.addEventListener('change', () => {
    state.via = via.value;
    servicesDirty = instancesDirty = true;
    updateUrl();
    scheduleRender();
    void refreshRegistrations();
  });

  const search = byId<HTMLInputElement>('search');
  search.addEventListener('input', () => {
    state.query = search.value;
    servicesDirty = instancesDirty = true;
    scheduleRender();
  });

  const services = byId('services');
  services.addEventListener('click', (event) => {
    const row = (event.target as HTMLElement).closest<HTMLElement>('[data-service]');
    if (row?.dataset.service) select(row.dataset.service);
  });
  services.addEventListener('keydown', (event) => {
    const row = (event.target as HTMLElement).closest<HTMLElement>('[data-service]');
    if (row?.dataset.service && (event.key === 'Enter' || event.key === ' ')) {
      event.preventDefault();
      select(row.dataset.service);
    }
  });

  const tokenInput = byId<HTMLInputElement>('token');
  tokenInput.value = storedToken();
  byId('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    storeToken(tokenInput.value.trim());
    (tokenInput.closest('details') as HTMLDetailsElement).open = false;
    watch(state.namespace);
    void pollCluster();
    void pollProtocols();
    void refreshRegistrations();
  });

  watch(state.namespace);
  void pollCluster();
  void pollProtocols();
  void refreshRegistrations();
  setInterval(() => void pollCluster(), CLUSTER_POLL_MS);
  setInterval(() => void pollProtocols(), CLUSTER_POLL_MS);
  setInterval(() => void refreshRegistrations(), REGISTRATIONS_REFRESH_MS);
  setInterval(() => void refreshLeases(), LEASE_REFRESH_MS);
  // Lease countdowns move every second; only the rows in view are drawn again.
  setInterval(() => instancesList.schedule(), 1_000);
  if (state.selected) void refreshLeases();
}

setUp();
