import type { ListenerDeclaration } from '../adapters/declaration.js';
import { ProtocolConfigError, readInteger, readListener, type ListenerConfig } from '../config/listener-settings.js';

/**
 * The xDS adapter's declaration (src/adapters/declaration.ts): its `xds` section of the file
 * and its flag, its reference rows, its row in the protocols view, its metrics, and its
 * listener (listener.ts, with grpc-js and the protos), loaded only when `xds.port` is set.
 */

/** How gRPC clients balance over a service's endpoints (the Cluster's lb_policy; docs/xds.md). */
export const xdsLbPolicies = ['ring_hash', 'round_robin'] as const;
export type XdsLbPolicy = (typeof xdsLbPolicies)[number];
/** `xds.lbPolicy`: a policy forced on every client, or `auto` (each client one it can run). */
export const xdsLbPolicySettings = ['auto', ...xdsLbPolicies] as const;
export type XdsLbPolicySetting = (typeof xdsLbPolicySettings)[number];

export interface XdsConfig extends ListenerConfig {
  /**
   * `auto` (default): `ring_hash` (each endpoint gets calls in proportion to its weight) for
   * every client but those known to crash on it (gRPC C-core before 1.52, grpc/grpc#31766),
   * which get `round_robin` (localities weighted by their endpoints' weights). `ring_hash` or
   * `round_robin`: that policy for every client, whatever it is (src/xds/client-policy.ts).
   */
  lbPolicy: XdsLbPolicySetting;
  /**
   * Milliseconds: changes within this window reach each ADS stream as one push per resource
   * type, so a burst of registrations is one update. Longer: fewer pushes under churn, later news.
   */
  pushCoalesceMs: number;
  /**
   * With client tokens configured: serve `namespaces` to a stream that presents no token (most
   * gRPC xDS clients cannot send one to their control plane). A stream with an invalid token is
   * refused all the same. Off (default): with tokens, a stream needs a valid read token.
   */
  allowAnonymous: boolean;
  /**
   * Most ADS streams the listener holds at once; the next is refused (RESOURCE_EXHAUSTED). One
   * principal (a token, or an address without one) holds at most its share of them
   * (`limits.heldSharePerPrincipalRatio`), so one client holding all it may leaves room for others.
   */
  streamsMax: number;
  /**
   * Most resource names one principal's streams may subscribe to together (each stream holds
   * at most 10,000): every name costs memory for as long as the stream lives and work on
   * every push, so one client cannot make the peer hold millions.
   */
  resourceNamesPerPrincipalMax: number;
}

/** Defaults of the xDS settings beyond port and namespaces. */
export const XDS_DEFAULTS = {
  lbPolicy: 'auto',
  allowAnonymous: false,
  streamsMax: 10_000,
  resourceNamesPerPrincipalMax: 100_000,
} as const;

/** Default of `xds.pushCoalesceMs`: the watch streams' default window. */
export const XDS_PUSH_COALESCE_MS = 50;
const XDS_PUSH_COALESCE_MAX_MS = 10_000;

function readXds(doc: unknown, port: number | undefined): XdsConfig {
  const extra = ['lbPolicy', 'pushCoalesceMs', 'allowAnonymous', 'streamsMax', 'resourceNamesPerPrincipalMax'];
  const { section, config } = readListener('xds', doc, port, extra);
  const { lbPolicy = XDS_DEFAULTS.lbPolicy, pushCoalesceMs = XDS_PUSH_COALESCE_MS, allowAnonymous = XDS_DEFAULTS.allowAnonymous } = section;
  if (typeof lbPolicy !== 'string' || !(xdsLbPolicySettings as readonly string[]).includes(lbPolicy)) {
    throw new ProtocolConfigError('xds.lbPolicy', `must be one of ${xdsLbPolicySettings.join(', ')}`);
  }
  if (typeof pushCoalesceMs !== 'number' || !Number.isInteger(pushCoalesceMs) || pushCoalesceMs < 0 || pushCoalesceMs > XDS_PUSH_COALESCE_MAX_MS) {
    throw new ProtocolConfigError('xds.pushCoalesceMs', `must be an integer number of milliseconds from 0 to ${XDS_PUSH_COALESCE_MAX_MS}`);
  }
  if (typeof allowAnonymous !== 'boolean') throw new ProtocolConfigError('xds.allowAnonymous', 'must be true or false');
  return {
    ...config,
    lbPolicy: lbPolicy as XdsLbPolicySetting,
    pushCoalesceMs,
    allowAnonymous,
    streamsMax: readInteger('xds.streamsMax', section.streamsMax, XDS_DEFAULTS.streamsMax, 1, 1_000_000),
    resourceNamesPerPrincipalMax: readInteger('xds.resourceNamesPerPrincipalMax', section.resourceNamesPerPrincipalMax, XDS_DEFAULTS.resourceNamesPerPrincipalMax, 1, 100_000_000),
  };
}

export const xdsDeclaration: ListenerDeclaration<'xds', XdsConfig> = {
  name: 'xds',
  label: 'xDS (gRPC)',
  transport: 'gRPC',
  credentials: ['grpc-authorization'],
  settings: { section: 'xds', flag: '--xds-port', env: 'REGISTRY_XDS_PORT', help: 'serve gRPC xDS (ADS) on this port; off by default' },
  docs: 'docs/xds.md',
  readSettings: readXds,
  reference: {
    intro: 'gRPC xDS',
    rows: [
      { field: 'port', type: 'port', default: 'off', doc: 'serve the xDS Aggregated Discovery Service (gRPC) on this port (docs/xds.md). Also `--xds-port`.' },
      { field: 'namespaces', type: 'array', default: '`["default"]`', doc: 'the namespaces xDS exposes (a service of namespace `ns` other than `default` is `xds:///service.ns`; docs/xds.md)' },
      { field: 'lbPolicy', type: 'string', default: '`auto`', doc: 'the balancing the Cluster asks of gRPC clients: `auto` (`ring_hash` for every client but gRPC C-core before 1.52, which crashes on it and gets `round_robin`; docs/xds.md), or `ring_hash` (calls in proportion to each endpoint\'s weight) or `round_robin` (endpoints of a zone take turns; weights only split calls between zones) for every client' },
      { field: 'pushCoalesceMs', type: 'ms', default: '50', doc: 'changes within this window reach each ADS stream as one push; longer means fewer pushes under churn but later news' },
      { field: 'allowAnonymous', type: 'boolean', default: '`false`', doc: 'with client tokens configured, serve `xds.namespaces` to ADS streams that present no token (most gRPC xDS clients cannot send one); off: a stream needs a token with the `read` scope in its gRPC metadata (`authorization: Bearer <token>`) and reads only its token\'s namespaces. An unknown token is always refused' },
      { field: 'streamsMax', type: 'count', default: '10000', doc: 'most ADS streams the listener holds at once; the next is refused with RESOURCE_EXHAUSTED. One principal holds at most `limits.heldSharePerPrincipalRatio` of them (a loopback caller without a token: the whole cap)' },
      { field: 'resourceNamesPerPrincipalMax', type: 'count', default: '100000', doc: 'most resource names one principal\'s streams subscribe to together (each stream at most 10,000); past it a request is refused with RESOURCE_EXHAUSTED' },
    ],
  },
  listens: (xds) => (xds.port === null ? [] : [{ what: 'the xDS listener', port: xds.port }]),
  metrics: ['registry_xds_acks_total', 'registry_xds_nacks_total'],
  starter: async () => (await import('./listener.js')).startXdsListener,
};
