import { Type, type Static, type TSchema } from 'typebox';
import { compileBody } from '../schema/body-schema.js';
import { instanceStatuses } from './types.js';

/**
 * The register body's shape (`POST /v1/instances`, and the native form the Consul adapter
 * builds), as one typebox schema: the route validates with it, the OpenAPI description shows
 * it, and `parseRegistration` (validate.ts) checks through it. Its `errorMessage`s are the
 * words the hand validators used. What depends on the configuration (metadata limits, lease
 * bounds) or is no JSON-schema rule (a host name or IP address) is checked after it, in validate.ts.
 */

export const NAME_MAX_LENGTH = 128;
export const INSTANCE_ID_MAX_LENGTH = 256;
export const ZONE_MAX_LENGTH = 64;
export const MAX_WEIGHT = 1_000_000;
/** A service, namespace or group name: letters, digits, `.`, `_`, `:` and `-`, starting with a letter or digit. */
export const NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]*$';
// Control characters, '/', '?', '#' and whitespace cannot appear in an instance id: it is a URL path
// segment. For the same reason it is not `.` or `..`: curl, fetch and `new URL` resolve those
// segments away, so such an instance could be registered but never reached again.
export const INSTANCE_ID_PATTERN = '^(?!\\.\\.?$)[^\\u0000-\\u0020\\u007f/?#%\\\\]*$';
/** A metadata key holds no control character (CR, LF, NUL...): it becomes a Prometheus label, a DNS TXT string, an HTTP header's text. */
export const METADATA_KEY_PATTERN = '^[^\\u0000-\\u001f\\u007f]+$';

/** The words of the name and instance id rules, shared by the schema and the parsers of path and query values. */
export const nameMessages = {
  required: 'is required',
  null: 'is required',
  minLength: 'is required',
  type: 'must be a string',
  maxLength: `must be at most ${NAME_MAX_LENGTH} characters`,
  pattern: 'must start with a letter or digit and hold only letters, digits, ".", "_", ":" and "-"',
};
export const instanceIdMessages = {
  ...nameMessages,
  maxLength: `must be at most ${INSTANCE_ID_MAX_LENGTH} characters`,
  pattern: 'must not be "." or "..", nor contain spaces, control characters or any of / ? # % \\',
};
const portMessages = { required: 'is required', type: 'must be an integer', minimum: 'must be between 1 and 65535', maximum: 'must be between 1 and 65535' };

/** A name, as the register body and the query take it. */
export const Name = (description: string) =>
  Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH, pattern: NAME_PATTERN, description, errorMessage: nameMessages });

/**
 * `schema`, or null (the register body takes null as "absent" for its optional fields). One
 * node with a type list rather than a union, so that a finding names the rule that failed
 * (`maximum`), not "matches none of".
 */
function orNull<T extends TSchema>(schema: T) {
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [(schema as { type?: unknown }).type, 'null'] });
}

const Port = (options: { description?: string } = {}) => Type.Integer({ minimum: 1, maximum: 65535, errorMessage: portMessages, ...options });
const statusMessage = `must be one of ${instanceStatuses.join(', ')}`;

/** An instance's status: one of `instanceStatuses`. */
export const Status = Type.Union(
  instanceStatuses.map((status) => Type.Literal(status)),
  { description: 'Instance status.', errorMessage: statusMessage },
);

const registrationSchema = Type.Object(
  {
    service: Name('Service name.'),
    host: Type.String({ minLength: 1, description: 'Host name (RFC 1123) or IPv4/IPv6 address.', errorMessage: { required: 'is required', minLength: 'is required', type: 'must be a host name or an IP address' } }),
    port: Port(),
    securePort: Type.Optional(orNull(Port({ description: 'TLS port; null or absent: none.' }))),
    instanceId: Type.Optional(
      Type.String({ minLength: 1, maxLength: INSTANCE_ID_MAX_LENGTH, pattern: INSTANCE_ID_PATTERN, description: 'Default `host:port`.', errorMessage: instanceIdMessages }),
    ),
    group: Type.Optional(orNull(Name('Group within the service (default `default`).'))),
    status: Type.Optional(Status),
    weight: Type.Optional(
      orNull(Type.Number({ minimum: 0, maximum: MAX_WEIGHT, description: 'Default 1.', errorMessage: { type: 'must be a number', minimum: `must be between 0 and ${MAX_WEIGHT}`, maximum: `must be between 0 and ${MAX_WEIGHT}` } })),
    ),
    zone: Type.Optional(orNull(Type.String({ maxLength: ZONE_MAX_LENGTH, errorMessage: { type: 'must be a string', maxLength: `must be at most ${ZONE_MAX_LENGTH} characters` } }))),
    metadata: Type.Optional(
      orNull(
        Type.Record(Type.String(), Type.String({ errorMessage: 'must be a string' }), {
          propertyNames: { minLength: 1 },
          description: 'String keys to string values (see `limits.metadata*`).',
          errorMessage: { type: 'must be an object of string values', propertyNames: 'keys must not be empty' },
        }),
      ),
    ),
    leaseDurationMs: Type.Optional(
      orNull(Type.Integer({ description: 'Within `cluster.minLeaseDurationMs`..`cluster.maxLeaseDurationMs`.', errorMessage: { type: 'must be an integer (milliseconds)' } })),
    ),
    namespace: Type.Optional(Name('Namespace; must agree with `?namespace=` when both are given.')),
  },
  { additionalProperties: false, errorMessage: { type: 'must be a JSON object' } },
);

/** The register body's schema (see the top of this file). */
export const RegistrationBody = registrationSchema;

/** A register body that fits its schema: null stands for an absent optional field. */
export type RegistrationBody = Static<typeof registrationSchema>;

/** The schema compiled once, for the parsers that check a body themselves (validate.ts). */
export const registrationChecker = compileBody(registrationSchema);
