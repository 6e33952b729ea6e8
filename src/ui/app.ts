import { getJson, storedToken, storeToken, watchNamespace } from './api.js';
import { RegistryModel, type DeltaEvent, type Instance, type ServiceState, type SnapshotEvent } from './model.js';
import { banners, byId, h, instanceRow, peerRows, serviceRow } from './render.js';
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
};

const servicesList = new VirtualList<ServiceState>(byId('services'), (service) => serviceRow(service, service.name === state.selected));
const instancesList = new VirtualList<ReturnType<RegistryModel['instancesOf']>[number]>(byId('instances'), (entry) => instanceRow(entry, Date.now()));

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
}

function renderServices(): void {
  const services = state.model.servicesMatching(state.query);
  // Something to look at from the first glance: the first service, until the user picks one.
  if (state.selected === null && services.length > 0) {
    state.selected = services[0]!.name;
    instancesDirty = true;
    void refreshLeases();
  }
  servicesList.setItems(services);
  const total = state.model.names().length;
  byId('services-summary').textContent =
    `${plural(total, 'service', total.toLocaleString())} · ${plural(state.model.total, 'instance', state.model.total.toLocaleString())}` +
    (state.query ? ` · ${services.length.toLocaleString()} matching` : '');
  byId('services-empty').hidden = total > 0 || !state.streamOpen;
}

function renderInstances(): void {
  const name = state.selected;
  const service = name ? state.model.services.get(name) : undefined;
  const entries = name ? state.model.instancesOf(name, state.query) : [];
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
  });

  watch(state.namespace);
  void pollCluster();
  setInterval(() => void pollCluster(), CLUSTER_POLL_MS);
  setInterval(() => void refreshLeases(), LEASE_REFRESH_MS);
  // Lease countdowns move every second; only the rows in view are drawn again.
  setInterval(() => instancesList.schedule(), 1_000);
  if (state.selected) void refreshLeases();
}

setUp();
