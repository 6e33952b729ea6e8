import { Type } from 'typebox';
import { Name, Status } from '../registry/registration-schema.js';

/**
 * JSON schemas of the native API's payloads, for the OpenAPI description, and for the bodies
 * of the routes whose definition says `validateBody` (their `errorMessage`s keep the answers
 * the hand validators gave: src/schema/body-schema.ts). The register body's schema is the
 * core's (src/registry/registration-schema.ts): `parseRegistration` checks through it too,
 * for the Consul adapter. They describe what docs/api.md describes.
 */

export { RegistrationBody as RegisterBody } from '../registry/registration-schema.js';
export { Status } from '../registry/registration-schema.js';

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
