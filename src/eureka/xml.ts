import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { RegistryError } from '../errors.js';

/**
 * Eureka's XML, derived from its JSON shape by the convention both share: keys starting with
 * `@` are attributes, `$` is the text, arrays are repeated elements. Two names differ from the
 * JSON: `overriddenStatus` is written `overriddenstatus`, and metadata keys go through
 * XStream's name coding (`_` -> `__`, `$` -> `_-`), which Java clients decode.
 */

/** JSON names that Eureka's XML spells differently. */
const XML_NAMES: Record<string, string> = { overriddenStatus: 'overriddenstatus' };
// An XML element name in the subset we emit (no namespaces).
const XML_NAME = /^[A-Za-z_][A-Za-z0-9._-]*$/;

function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) =>
    c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&apos;',
  );
}

/** XStream's name coding of map keys in element names. */
export function encodeMetadataName(name: string): string {
  return name.replace(/[_$]/g, (c) => (c === '_' ? '__' : '_-'));
}

export function decodeMetadataName(name: string): string {
  return name.replace(/__|_-/g, (pair) => (pair === '__' ? '_' : '$'));
}

function element(name: string, value: unknown, inMetadata: boolean, out: string[]): void {
  if (value === undefined || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) element(name, item, inMetadata, out);
    return;
  }
  const tag = inMetadata ? encodeMetadataName(name) : (XML_NAMES[name] ?? name);
  // A metadata key that cannot be an element name cannot be written in XML; JSON still has it.
  if (!XML_NAME.test(tag) || tag.toLowerCase().startsWith('xml')) return;
  if (typeof value !== 'object') {
    out.push(`<${tag}>${escapeXml(String(value))}</${tag}>`);
    return;
  }
  const attributes: string[] = [];
  const children: string[] = [];
  let text = '';
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    if (key === '$') text = escapeXml(String(item));
    else if (key.startsWith('@')) attributes.push(` ${key.slice(1)}="${escapeXml(String(item))}"`);
    else element(key, item, name === 'metadata', children);
  }
  const open = `<${tag}${attributes.join('')}`;
  out.push(text === '' && children.length === 0 ? `${open}/>` : `${open}>${text}${children.join('')}</${tag}>`);
}

/** Writes a one-root document (`{instance: ...}`, `{application: ...}`, `{applications: ...}`) as XML. */
export function toXml(document: Record<string, unknown>): string {
  const out: string[] = [];
  for (const [name, value] of Object.entries(document)) element(name, value, false, out);
  return out.join('');
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  textNodeName: '$',
  // Values stay strings: the instance reader is lenient about numbers and booleans as text.
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  processEntities: true,
  htmlEntities: false,
});

function decodeMetadataKeys(value: unknown, inMetadata: boolean): unknown {
  if (Array.isArray(value)) return value.map((item) => decodeMetadataKeys(item, inMetadata));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, item]) => [
      inMetadata && !key.startsWith('@') ? decodeMetadataName(key) : key,
      decodeMetadataKeys(item, key === 'metadata'),
    ]),
  );
}

/**
 * Reads an XML body into the JSON shape. Malformed XML, and any DTD (entity expansion has no
 * place in a register body), answer 400 `REG_ERR_INVALID_XML`.
 */
export function fromXml(text: string): unknown {
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) {
    throw new RegistryError('REG_ERR_INVALID_XML', 'body: document type declarations are not accepted');
  }
  const valid = XMLValidator.validate(text);
  if (valid !== true) {
    throw new RegistryError('REG_ERR_INVALID_XML', `body: ${valid.err.msg} (line ${valid.err.line}, column ${valid.err.col})`);
  }
  try {
    return decodeMetadataKeys(parser.parse(text), false);
  } catch (error) {
    throw new RegistryError('REG_ERR_INVALID_XML', `body: ${(error as Error).message}`);
  }
}
