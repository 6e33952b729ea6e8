import type { TSchema } from 'typebox';
// The schema engine's compiler, not typebox/compile's: the same check and findings (that one
// wraps these), without the value operations (clean, convert, create, codecs...) it loads too,
// about 150 modules and 4 MB of RSS more (310 against 164) that a body check never uses.
import { Compile } from 'typebox/schema';
import { invalid, type RegistryError } from '../errors.js';

/**
 * What a body schema says when a body does not fit, so that its answer is the `{code, message}`
 * a hand validator gave (`REG_ERR_VALIDATION`, "field: what is wrong"), not the schema
 * library's words. On a property: one message for any finding on it, a missing value included.
 * On the body itself: a message per JSON-schema keyword (`type`, `minProperties`, ...).
 */
export type ErrorMessage = string | Record<string, string>;

interface ValidationFinding {
  keyword: string;
  schemaPath: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

type SchemaNode = TSchema & { errorMessage?: ErrorMessage; properties?: Record<string, SchemaNode> };

/** The schema node a finding's `schemaPath` (`#/properties/status/anyOf/0`) points at, and each one above it. */
function nodesOn(schema: SchemaNode, schemaPath: string): SchemaNode[] {
  const nodes = [schema];
  let node: unknown = schema;
  for (const segment of schemaPath.replace(/^#\/?/, '').split('/').filter(Boolean)) {
    node = (node as Record<string, unknown> | undefined)?.[segment];
    if (typeof node === 'object' && node !== null && !Array.isArray(node)) nodes.push(node as SchemaNode);
  }
  return nodes.reverse();
}

/** `/metadata/zone` -> `metadata.zone`; the body itself is `body`. */
function fieldOf(instancePath: string): string {
  return instancePath === '' ? 'body' : instancePath.slice(1).replaceAll('/', '.');
}

function messageOf(node: SchemaNode | undefined, keyword: string): string | undefined {
  const message = node?.errorMessage;
  return typeof message === 'string' ? message : message?.[keyword];
}

/**
 * The one error a body's findings are answered with, in the order the hand validators checked:
 * the body's shape, then unknown fields (in the body's order), then each declared field in the
 * schema's order (a missing one included), then rules on the body as a whole.
 */
export function errorOf(schema: SchemaNode, findings: readonly ValidationFinding[]): RegistryError {
  const root = findings.find((finding) => finding.instancePath === '' && finding.keyword === 'type');
  if (root) return invalid('body', messageOf(schema, 'type') ?? root.message);
  const unknown = findings.find((finding) => finding.schemaPath === '#/additionalProperties');
  if (unknown) return invalid(fieldOf(unknown.instancePath), 'is not a known field');
  const missing = new Set(findings.flatMap((finding) => (finding.keyword === 'required' ? (finding.params.requiredProperties as string[]) : [])));
  for (const name of Object.keys(schema.properties ?? {})) {
    const property = schema.properties?.[name];
    if (missing.has(name)) return invalid(name, messageOf(property, 'required') ?? 'is required');
    // The outermost finding on the field (a union's "matches none" comes after each member's).
    const onField = findings.filter((finding) => finding.instancePath === `/${name}` || finding.instancePath.startsWith(`/${name}/`)).at(-1);
    if (onField) {
      const message = nodesOn(schema, onField.schemaPath).map((node) => messageOf(node, onField.keyword)).find(Boolean);
      return invalid(fieldOf(onField.instancePath), message ?? onField.message);
    }
  }
  const rest = findings[0];
  return invalid(fieldOf(rest?.instancePath ?? ''), messageOf(schema, rest?.keyword ?? '') ?? rest?.message ?? 'is invalid');
}

/** A compiled body schema: true when the body fits, else the error to answer it with. */
export type BodyValidator = ((data: unknown) => true | { error: RegistryError });

/**
 * Compiles a route's body schema into a validator (typebox's compiler: no coercion, no
 * removed or defaulted fields, so a body reaches the route exactly as sent, and one that does
 * not fit is refused with the error `errorOf` picks). A missing body is checked as `null`.
 */
export function bodyValidator(schema: TSchema): BodyValidator {
  const compiled = Compile(schema);
  return (sent: unknown) => {
    const data = sent === undefined ? null : sent;
    if (compiled.Check(data)) return true;
    const [, findings] = compiled.Errors(data);
    return { error: errorOf(schema, findings as ValidationFinding[]) };
  };
}
