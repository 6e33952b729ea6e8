import { Type, type Static } from 'typebox';
import { INSTANCE_ID_MAX_LENGTH, INSTANCE_ID_PATTERN, instanceIdMessages, NAME_MAX_LENGTH, NAME_PATTERN, nameMessages } from '../registry/registration-schema.js';
import { compileBody } from '../schema/body-schema.js';

/**
 * The shape of a Eureka register body (`POST /eureka/apps/:app`, JSON or XML), as one typebox
 * schema: the route validates with it and the OpenAPI description shows it; `parseEurekaInstance`
 * (instance-input.ts) checks through it too. Real clients are sloppy, so the shape is lenient
 * where they are (a port as a number, a string of digits or `{"$": 8080, "@enabled": "true"}`;
 * numbers and booleans as text; statuses in any case; unknown fields ignored) and strict about
 * what we cannot do without (app, host name, IP address, data centre). Its `errorMessage`s are
 * the words of the hand reader it replaces. Reading the lenient forms into our record (and the
 * rules across fields: the id, the host, the port range, the lease) stays in instance-input.ts.
 */

export const INSTANCE_REQUIRED = 'is required: the body is {"instance": {...}} (JSON) or <instance>...</instance> (XML)';
const PORT_FORMS = 'must be a port number, or {"$": port, "@enabled": true|false}';
const DIGITS = '^\\s*-?\\d{1,16}\\s*$';

/** Text as clients send it: a string, or a number or boolean written as one (XML gives strings). */
const textTypes = ['string', 'number', 'boolean'];

/** A field we cannot do without: non-empty text. */
const RequiredText = (description: string, rules: Record<string, unknown> = {}, messages: Record<string, string> = {}) =>
  Type.Unsafe<string | number | boolean>({
    type: textTypes,
    minLength: 1,
    ...rules,
    description,
    errorMessage: { required: 'is required', null: 'is required', type: 'is required', minLength: 'is required', ...messages },
  });

/** A string map: an object of text values (`""`, null or absent: none). */
const StringMap = (description: string) =>
  Type.Unsafe<Record<string, unknown> | string | null>({
    type: ['object', 'string', 'null'],
    maxLength: 0,
    additionalProperties: { type: textTypes, errorMessage: 'must be a string' },
    propertyNames: { minLength: 1 },
    description,
    errorMessage: { type: 'must be an object of string values', maxLength: 'must be an object of string values', propertyNames: 'keys must not be empty' },
  });

/** `port` / `securePort`: `8080`, `"8080"` or `{"$": 8080, "@enabled": true}`; absent or null: Eureka's default. */
const PortForms = (field: string, description: string) =>
  Type.Unsafe<number | string | { $: number | string; '@enabled'?: boolean | string } | null>({
    type: ['integer', 'string', 'object', 'null'],
    pattern: DIGITS,
    properties: {
      $: { type: ['integer', 'string'], pattern: DIGITS, errorField: field, errorMessage: PORT_FORMS },
      '@enabled': { type: ['boolean', 'string'], pattern: '^\\s*([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])\\s*$', errorMessage: 'must be true or false' },
    },
    required: ['$'],
    description,
    errorMessage: PORT_FORMS,
  });

/** A status in any case (`""` or absent: none); which ones a field takes is instance-input.ts's rule. */
const StatusText = (message: string) => Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], errorMessage: message }));

const instanceSchema = Type.Object(
  {
    // The name rule, on the app as sent: upper-casing changes neither its length nor its fit.
    app: RequiredText('App name, any case (upper-cased).', { maxLength: NAME_MAX_LENGTH, pattern: NAME_PATTERN }, { maxLength: nameMessages.maxLength, pattern: nameMessages.pattern }),
    hostName: RequiredText('Host name; the core host is this, or ipAddr when this is not a valid one.'),
    ipAddr: RequiredText('IP address.'),
    dataCenterInfo: Type.Object(
      { metadata: Type.Optional(StringMap("The data centre's metadata (Amazon's instance-id, availability-zone...).")) },
      { description: '`{"@class": ..., "name": "MyOwn"}` (a missing @class follows the name; a missing name is MyOwn).', errorMessage: 'is required: {"@class": ..., "name": "MyOwn"}' },
    ),
    instanceId: Type.Optional(
      Type.Unsafe<unknown>({ maxLength: INSTANCE_ID_MAX_LENGTH, pattern: INSTANCE_ID_PATTERN, description: 'Default: an Amazon instance-id, else the host name.', errorMessage: instanceIdMessages }),
    ),
    port: Type.Optional(PortForms('instance.port', 'Default 7001, enabled.')),
    securePort: Type.Optional(PortForms('instance.securePort', 'Default 443, disabled.')),
    status: StatusText('must be one of UP, DOWN, STARTING, OUT_OF_SERVICE'),
    overriddenStatus: StatusText('must be one of UP, DOWN, STARTING, OUT_OF_SERVICE, UNKNOWN'),
    overriddenstatus: StatusText('must be one of UP, DOWN, STARTING, OUT_OF_SERVICE, UNKNOWN'),
    metadata: Type.Optional(StringMap('String keys to text values (`@class`, a Java type hint, is dropped).')),
  },
  { description: 'A Eureka instance (docs/eureka.md); other fields (URLs, VIP addresses, leaseInfo...) are read leniently.', errorMessage: INSTANCE_REQUIRED },
);

/** The register body's schema: `{"instance": {...}}`. */
export const EurekaInstanceBody = Type.Object({ instance: instanceSchema }, { errorField: 'instance', errorMessage: INSTANCE_REQUIRED });
export type EurekaInstanceBody = Static<typeof EurekaInstanceBody>;

/** The schema compiled once, for `parseEurekaInstance`. */
export const eurekaInstanceChecker = compileBody(EurekaInstanceBody);
