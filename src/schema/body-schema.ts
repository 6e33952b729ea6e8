import type { Static, TSchema } from 'typebox';
// The schema engine's compiler, not typebox/compile's: the same check and findings (that one
// wraps these), without the value operations (clean, convert, create, codecs...) it loads too,
// about 150 modules and 4 MB of RSS more (310 against 164) that a body check never uses.
import { Compile } from 'typebox/schema';
import { invalid, type RegistryError } from '../errors.js';

/**
 * Request bodies checked by their typebox schema, answered with the `{code, message}` a hand
 * validator gave (`REG_ERR_VALIDATION`, "field: what is wrong"), not the schema library's words.
 * The one place typebox's findings become our messages: the routes' validator (fastify's
 * validation phase) and the parsers that protocols share (the core's register body, which the
 * Consul adapter reuses; the Eureka instance) both check through here. No framework import:
 * the core may use it (eslint.config.js, layer 0).
 */

/**
 * What a schema says when a value does not fit. A string: one message for any finding on the
 * node, a missing value included. A record: a message per JSON-schema keyword (`type`,
 * `minLength`, `required`, `anyOf`, ...), plus `null` for a value that is null (JSON schema
 * only says "wrong type" there; the hand validators said "is required" for some fields).
 */
export type ErrorMessage = string | Record<string, string>;

interface ValidationFinding {
  keyword: string;
  schemaPath: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

type SchemaNode = TSchema & {
  errorMessage?: ErrorMessage;
  /** The field errors on this object itself are reported under (default: `body` for the body, else its path). */
  errorField?: string;
  properties?: Record<string, SchemaNode>;
  type?: unknown;
};

/** The schema node a finding's `schemaPath` (`#/properties/status/anyOf/0`) points at, and each one above it. */
function nodesOn(schema: SchemaNode, schemaPath: string): SchemaNode[] {
  const nodes = [schema];
  let node: unknown = schema;
  for (const segment of schemaPath.replace(/^#\/?/, '').split('/').filter(Boolean)) {
    node = (node as Record<string, unknown> | undefined)?.[segment.replaceAll('~1', '/').replaceAll('~0', '~')];
    if (typeof node === 'object' && node !== null && !Array.isArray(node)) nodes.push(node as SchemaNode);
  }
  return nodes.reverse();
}

const segmentsOf = (instancePath: string) => instancePath.split('/').slice(1).map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));

/** `/metadata/zone` -> `metadata.zone`; the body itself is `body`. */
function fieldOf(instancePath: string): string {
  return instancePath === '' ? 'body' : segmentsOf(instancePath).join('.');
}

/** The value a finding is about (to tell a null from another wrong type). */
function valueAt(data: unknown, instancePath: string): unknown {
  let value = data;
  for (const segment of segmentsOf(instancePath)) value = (value as Record<string, unknown> | null | undefined)?.[segment];
  return value;
}

function messageOf(node: SchemaNode | undefined, keyword: string, value?: unknown): string | undefined {
  const message = node?.errorMessage;
  if (typeof message === 'string') return message;
  // A property set to undefined (a caller's object, never JSON) is missing, as the hand validators took it.
  const special = value === null ? message?.null : value === undefined && keyword === 'type' ? message?.required : undefined;
  return special ?? message?.[keyword];
}

/** Keywords whose finding sums up the ones before it (each member's, each key's). */
const SUMMARY_KEYWORDS = new Set(['anyOf', 'oneOf', 'propertyNames']);

const isPlainObjectSchema = (node: SchemaNode | undefined) => node?.type === 'object' && node.properties !== undefined;

/**
 * The error for the findings on one object of the body (the body itself, or a nested object
 * such as Eureka's `instance`), in the order the hand validators checked: the object's type,
 * then unknown fields (in the body's order), then each declared field in the schema's order (a
 * missing one included; a nested object's own fields in turn), then rules on the object as a whole.
 */
function errorWithin(root: SchemaNode, node: SchemaNode, at: { instancePath: string; schemaPath: string }, findings: readonly ValidationFinding[], data: unknown): RegistryError | undefined {
  const { instancePath, schemaPath } = at;
  const field = node.errorField ?? fieldOf(instancePath);
  const own = findings.filter((finding) => finding.instancePath === instancePath);
  const typeFinding = own.find((finding) => finding.keyword === 'type');
  if (typeFinding) return invalid(field, messageOf(node, 'type', valueAt(data, instancePath)) ?? typeFinding.message);
  const unknown = findings.find((finding) => finding.schemaPath === `${schemaPath}/additionalProperties`);
  if (unknown) return invalid(fieldOf(unknown.instancePath), 'is not a known field');
  const missing = new Set(own.flatMap((finding) => (finding.keyword === 'required' ? (finding.params.requiredProperties as string[]) : [])));
  for (const [name, property] of Object.entries(node.properties ?? {})) {
    const childPath = `${instancePath}/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    if (missing.has(name)) return invalid(fieldOf(childPath), messageOf(property, 'required') ?? 'is required');
    const onField = findings.filter((finding) => finding.instancePath === childPath || finding.instancePath.startsWith(`${childPath}/`));
    if (onField.length === 0) continue;
    if (isPlainObjectSchema(property)) {
      const nested = errorWithin(root, property, { instancePath: childPath, schemaPath: `${schemaPath}/properties/${name}` }, findings, data);
      if (nested) return nested;
      continue;
    }
    // The first rule the field breaks, in the schema's order; for a union or a rule on a map's
    // keys, its summary (which comes after the findings it sums up).
    const summary = onField.findLast((finding) => finding.instancePath === childPath && SUMMARY_KEYWORDS.has(finding.keyword));
    const outermost = summary ?? (onField[0] as ValidationFinding);
    const value = valueAt(data, outermost.instancePath);
    const nodes = nodesOn(root, outermost.schemaPath);
    const message = nodes.map((each) => messageOf(each, outermost.keyword, value)).find(Boolean);
    // A node within the field may name the field its findings are reported under (a part of a form).
    const named = nodes.slice(0, nodes.indexOf(property) + 1).find((each) => each.errorField !== undefined)?.errorField;
    return invalid(named ?? fieldOf(outermost.instancePath), message ?? outermost.message);
  }
  const rest = own[0];
  return rest ? invalid(field, messageOf(node, rest.keyword) ?? rest.message) : undefined;
}

/** The one error a body's findings are answered with (see errorWithin for the order). */
export function errorOf(schema: SchemaNode, findings: readonly ValidationFinding[], data?: unknown): RegistryError {
  const error = errorWithin(schema, schema, { instancePath: '', schemaPath: '#' }, findings, data);
  if (error) return error;
  const first = findings[0];
  return invalid(fieldOf(first?.instancePath ?? ''), first?.message ?? 'is invalid');
}

/** A body schema compiled once (typebox's compiler: no coercion, no removed or defaulted fields). */
export interface BodyChecker<T extends TSchema> {
  readonly schema: T;
  /** True when the body fits; otherwise `error` says why, as `errorOf` words it. */
  fits(data: unknown): data is Static<T>;
  error(data: unknown): RegistryError;
}

export function compileBody<T extends TSchema>(schema: T): BodyChecker<T> {
  const compiled = Compile(schema);
  return {
    schema,
    fits: (data: unknown): data is Static<T> => compiled.Check(data),
    error: (data: unknown) => errorOf(schema, compiled.Errors(data)[1] as ValidationFinding[], data),
  };
}

/** The body, typed by its schema, or throws the `REG_ERR_VALIDATION` its schema words. */
export function parseBody<T extends TSchema>(checker: BodyChecker<T>, data: unknown): Static<T> {
  if (checker.fits(data)) return data;
  throw checker.error(data);
}

/**
 * A route's body validator, in the shape fastify's validation phase takes: a body reaches the
 * route exactly as sent, and one that does not fit is refused with the error `errorOf` picks.
 * A missing body is checked as a missing value (the body's `type` message).
 */
export function bodyValidator(schema: TSchema | BodyChecker<TSchema>): (data: unknown) => true | { error: RegistryError } {
  const checker = 'fits' in schema ? schema : compileBody(schema);
  return (data: unknown) => (checker.fits(data) ? true : { error: checker.error(data) });
}
