import { Type, type TSchema } from 'typebox';
import { Name } from '../../registry/registration-schema.js';
import { errorCatalogue } from '../../errors.js';

/**
 * JSON schemas shared by the HTTP API's route groups (the error body, `responses`, `text`), and
 * those of the ops, admin and Prometheus SD routes, for the OpenAPI description and for the
 * bodies of the routes whose definition says `validateBody`. The native API's payloads are in
 * src/native/schemas.ts, Eureka's in src/eureka/instance-schema.ts.
 */

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
