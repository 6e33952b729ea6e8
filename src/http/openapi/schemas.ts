import { Type, type TSchema } from 'typebox';
import { Name, Status } from '../../registry/registration-schema.js';
import { errorCatalogue } from '../../errors.js';

/**
 * JSON schemas of the native API's payloads, for the OpenAPI description, and for the bodies
 * of the routes whose definition says `validateBody` (their `errorMessage`s keep the answers
 * the hand validators gave: src/schema/body-schema.ts). The register body's schema is the
 * core's (src/registry/registration-schema.ts): `parseRegistration` checks through it too,
 * for the Consul adapter. They describe what docs/api.md describes.
 */

export { RegistrationBody as RegisterBody } from '../../registry/registration-schema.js';
export { Status } from '../../registry/registration-schema.js';

export const NamespaceQuery = Type.Object({
  namespace: Type.Optional(Name('Namespace (default `default`).')),
});

export const InstanceParams = Type.Object({
  service: Name('Service name.'),
  id: Type.String({ minLength: 1, maxLength: 256, description: 'Instance id (no spaces, control characters, `/ ? # % \\`).' }),
});

export const ServiceParams = Type.Object({ service: Name('Service name.') });

const Metadata = Type.Record(Type.String(), Type.String(), { description: 'String keys to string values (see `limits.metadata*`).' });

export const Instance = Type.Object(
  {
    namespace: Type.String(),
    service: Type.String(),
    instanceId: Type.String(),
    host: Type.String({ description: 'Host name or IP address clients connect to.' }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    securePort: Type.Union([Type.Integer({ minimum: 1, maximum: 65535 }), Type.Null()]),
    status: Status,
    weight: Type.Number({ minimum: 0 }),
    zone: Type.String(),
    metadata: Metadata,
    owner: Type.String({ description: 'Id of the peer holding the lease.' }),
    version: Type.String({ description: 'Hybrid logical clock version of the last write.' }),
    leaseDurationMs: Type.Integer(),
    leaseExpiresInMs: Type.Integer({ description: 'Lease left as this peer sees it.' }),
    leaseLive: Type.Boolean(),
    evictionHeld: Type.Boolean({ description: 'Lease ran out but an eviction guard keeps the instance listed.' }),
    registeredAtMs: Type.Integer(),
    lastUpdatedAtMs: Type.Integer(),
  },
  { description: 'An instance (docs/api.md, "The instance object").' },
);

export const InstanceWithInterval = Type.Intersect([
  Instance,
  Type.Object({ heartbeatIntervalMs: Type.Integer({ description: 'How often the client should heartbeat.' }) }),
]);

/** A status change's body, checked by this schema (other fields are ignored, as they always were). */
export const StatusBody = Type.Object(
  { status: Status },
  { errorMessage: { type: 'must be a JSON object {"status": ...}' } },
);

export const Cancelled = Type.Object({
  namespace: Type.String(),
  service: Type.String(),
  instanceId: Type.String(),
  version: Type.String(),
  cancelled: Type.Literal(true),
});

export const ServiceListing = Type.Object({
  namespace: Type.String(),
  service: Type.String(),
  revision: Type.Integer({ description: "This peer's revision of the service's last change." }),
  protected: Type.Boolean({ description: 'The protect threshold applied: every served instance is listed.' }),
  instances: Type.Array(Instance),
});

export const ServiceQuery = Type.Object({
  namespace: Type.Optional(Name('Namespace (default `default`).')),
  status: Type.Optional(Type.Union([Type.Literal('up'), Type.Literal('all')], { description: 'Default `up`.' })),
  index: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$', description: 'Long poll: answer once the revision passes this.' })),
  wait: Type.Optional(Type.String({ pattern: '^[0-9]{1,9}(ms|s|m)?$', description: 'Long poll: longest wait (`500ms`, `30s`, `5m`; default 30s).' })),
});

export const ServiceList = Type.Object({
  namespace: Type.String(),
  revision: Type.Integer(),
  services: Type.Array(
    Type.Object({
      service: Type.String(),
      instances: Type.Integer({ description: 'Served instances, any status.' }),
      up: Type.Integer({ description: 'Of those, the UP ones.' }),
    }),
  ),
});

export const WatchQuery = Type.Object({
  namespace: Type.Optional(Name('Namespace (default `default`).')),
  services: Type.Optional(Type.String({ description: 'Comma-separated services (at most 100); omitted or `*`: every service of the namespace.' })),
});

export const PrometheusSdQuery = Type.Object({
  namespace: Type.Optional(Name('Namespace (default `default`).')),
  services: Type.Optional(Type.String({ description: 'Comma-separated services (at most 1,000); omitted, empty or `*`: every service of the namespace.' })),
  group: Type.Optional(Name('Only the instances of this group.')),
  zone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only the instances of this zone.' })),
});

export const TargetGroups = Type.Array(
  Type.Object({
    targets: Type.Array(Type.String({ description: '`host:port` (`[v6]:port`).' }), { minItems: 1, maxItems: 1 }),
    labels: Type.Record(Type.String(), Type.String(), { description: '`__meta_registry_*` labels (docs/prometheus.md).' }),
  }),
  { description: 'Target groups, as Prometheus `http_sd_configs` reads them.' },
);

export const Probe = Type.Object({ status: Type.String(), peer: Type.String() });

const GuardMode = Type.Union([Type.Literal('auto'), Type.Literal('off')], { errorMessage: 'must be "auto" or "off"' });

/** The eviction-guard switches' body, checked by this schema: at least one known switch, nothing else. */
export const GuardModes = Type.Object(
  { selfPreservation: Type.Optional(GuardMode), partitionGuard: Type.Optional(GuardMode) },
  {
    additionalProperties: false,
    minProperties: 1,
    errorMessage: {
      type: 'must be a JSON object {"selfPreservation": "auto"|"off", "partitionGuard": "auto"|"off"}',
      minProperties: 'must set selfPreservation or partitionGuard',
    },
  },
);

const Held = Type.Object({
  selfPreservation: Type.Integer(),
  partitionGuard: Type.Integer(),
  serviceCap: Type.Integer(),
  runCap: Type.Integer(),
});

export const EvictionGuards = Type.Object({
  selfPreservation: Type.Object({
    active: Type.Boolean(),
    mode: Type.String(),
    reason: Type.String({ description: 'Why, in plain words.' }),
    renewalsInWindow: Type.Number(),
    expectedRenewalsInWindow: Type.Number(),
    thresholdRatio: Type.Number(),
    ownedInstances: Type.Integer(),
    windowMs: Type.Integer(),
    warmUpUntilMs: Type.Integer(),
    sinceMs: Type.Union([Type.Integer(), Type.Null()]),
  }),
  partitionGuard: Type.Object({
    active: Type.Boolean(),
    mode: Type.String(),
    reason: Type.String(),
    downOwnedShare: Type.Number(),
    ratio: Type.Number(),
    sinceMs: Type.Union([Type.Integer(), Type.Null()]),
  }),
  serviceCap: Type.Object({ maxRatio: Type.Number(), windowMs: Type.Integer(), servicesAtCap: Type.Array(Type.String()) }),
  runCap: Type.Object({ maxRatio: Type.Number() }),
  held: Held,
  heldTotal: Held,
});

export const ClusterView = Type.Object(
  {
    cluster: Type.String(),
    profile: Type.String(),
    self: Type.Object({
      id: Type.String(),
      url: Type.String(),
      region: Type.String(),
      zone: Type.String(),
      ready: Type.Boolean(),
      revision: Type.Integer(),
      records: Type.Integer(),
      instances: Type.Integer(),
    }),
    peers: Type.Array(
      Type.Object({
        id: Type.String(),
        url: Type.String(),
        region: Type.String(),
        zone: Type.String(),
        state: Type.Union([Type.Literal('up'), Type.Literal('suspect'), Type.Literal('down')]),
        stateSinceMs: Type.Integer(),
        lastContactMs: Type.Union([Type.Integer(), Type.Null()]),
        replication: Type.Union([
          Type.Object({ queued: Type.Integer(), lagMs: Type.Integer(), dropped: Type.Integer() }, { description: 'The outbound queue (docs/api.md lists every field).' }),
          Type.Null(),
        ]),
      }),
    ),
    inbound: Type.Object({}, { description: 'Records received from other peers.' }),
    antiEntropy: Type.Object({}, { description: 'Anti-entropy rounds and repaired keys.' }),
    reaper: Type.Union([Type.Object({}, { description: 'The last reaper run.' }), Type.Null()]),
    evictionSafety: EvictionGuards,
  },
  { description: "This peer's view of the cluster (docs/api.md, GET /v1/cluster, lists every field)." },
);

export const ErrorBody = Type.Object({
  code: Type.Union(
    Object.keys(errorCatalogue).map((code) => Type.Literal(code)),
    { description: 'A code of the catalogue (docs/errors.md).' },
  ),
  message: Type.String({ description: 'For people; for input errors it starts with the field at fault.' }),
});

/** Responses of one route: status code -> schema (errors get the error body). */
export function responses(ok: Record<number, TSchema>, errors: number[] = []): Record<number, TSchema> {
  const out: Record<number, TSchema> = { ...ok };
  for (const status of errors) out[status] = ErrorBody;
  return out;
}

/** A body that is not JSON (text, server-sent events, XML...): described, not typed. */
export function text(description: string): TSchema {
  return Type.String({ description });
}
