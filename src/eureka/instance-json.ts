import { wallMsOf } from '../clock/hlc.js';
import type { StoredInstance } from '../registry/types.js';
import { eurekaOf } from './attributes.js';
import { DEFAULT_DATA_CENTER_CLASS } from './instance-input.js';
import {
  appNameOf,
  defaultActionType,
  DEFAULT_SECURE_PORT,
  durationSecsOf,
  EMPTY_MAP_CLASS,
  lastRenewalMsOf,
  type ActionType,
  type ViewDefaults,
} from './instance-view.js';

/**
 * `JSON.stringify(toEurekaInstance(entry, defaults, actionType))`, written directly: the same
 * bytes, without the instance object, its seven nested objects and the generic walk over
 * them. The shared full fetch and the delta write every instance of the registry this way:
 * with the bytes made (src/http/byte-builder.ts), 2.3 µs an instance against 5.2 by the
 * object route (`npx tsx bench/eureka-instance-json.ts`, 200,000 instances, 2026-12-05). Every string goes through `JSON.stringify`, so escaping is
 * JSON's own; test/unit/eureka/instance-json.test.ts holds the bytes to the object route's
 * for generated instances. No library writes a fixed shape faster than a template: the
 * schema-compiled serializers (fast-json-stringify) build the object first as well.
 */
export function eurekaInstanceJson(entry: StoredInstance, defaults: ViewDefaults, actionType?: ActionType): string {
  const { record } = entry;
  const { data } = record;
  const eureka = eurekaOf(data);
  const lastUpdatedMs = wallMsOf(record.version);
  const host = JSON.stringify(data.host);
  const dataCenter = eureka?.dataCenterInfo;
  let dataCenterInfo = `{"@class":${JSON.stringify(dataCenter?.className ?? DEFAULT_DATA_CENTER_CLASS)},"name":${JSON.stringify(dataCenter?.name ?? 'MyOwn')}`;
  if (dataCenter && Object.keys(dataCenter.metadata).length > 0) dataCenterInfo += `,"metadata":${JSON.stringify(dataCenter.metadata)}`;
  const secureEnabled = data.securePort !== null;
  return (
    `{"instanceId":${JSON.stringify(record.instanceId)}` +
    `,"hostName":${eureka ? JSON.stringify(eureka.hostName) : host}` +
    `,"app":${JSON.stringify(appNameOf(record.service))}` +
    `,"ipAddr":${eureka ? JSON.stringify(eureka.ipAddr) : host}` +
    `,"status":${JSON.stringify(data.status)}` +
    `,"overriddenStatus":${JSON.stringify(eureka?.overriddenStatus ?? 'UNKNOWN')}` +
    `,"port":{"$":${number(data.port)},"@enabled":"${(eureka?.portEnabled ?? true) ? 'true' : 'false'}"}` +
    `,"securePort":{"$":${number(data.securePort ?? eureka?.securePort ?? DEFAULT_SECURE_PORT)},"@enabled":"${secureEnabled ? 'true' : 'false'}"}` +
    `,"countryId":${number(eureka?.countryId ?? 1)}` +
    `,"dataCenterInfo":${dataCenterInfo}}` +
    `,"leaseInfo":{"renewalIntervalInSecs":${number(eureka?.renewalIntervalSecs ?? defaults.renewalIntervalSecs)}` +
    `,"durationInSecs":${number(durationSecsOf(record.leaseDurationMs))}` +
    `,"registrationTimestamp":${number(record.registeredAtMs)}` +
    `,"lastRenewalTimestamp":${number(lastRenewalMsOf(entry))}` +
    `,"evictionTimestamp":0,"serviceUpTimestamp":${number(record.registeredAtMs)}}` +
    `,"metadata":${metadataJson(data.metadata, data.zone)}` +
    optionalField('homePageUrl', eureka?.homePageUrl) +
    optionalField('statusPageUrl', eureka?.statusPageUrl) +
    optionalField('healthCheckUrl', eureka?.healthCheckUrl) +
    optionalField('secureHealthCheckUrl', eureka?.secureHealthCheckUrl) +
    optionalField('vipAddress', eureka ? eureka.vipAddress : record.service) +
    optionalField('secureVipAddress', eureka ? eureka.secureVipAddress : record.service) +
    `,"isCoordinatingDiscoveryServer":"false"` +
    `,"lastUpdatedTimestamp":"${String(lastUpdatedMs)}"` +
    `,"lastDirtyTimestamp":"${String(eureka?.lastDirtyTimestampMs ?? lastUpdatedMs)}"` +
    `,"actionType":"${actionType ?? defaultActionType(lastUpdatedMs, record.registeredAtMs)}"}`
  );
}

/** A number as JSON writes it (`null` for NaN and the infinities). */
function number(value: number): string {
  return Number.isFinite(value) ? String(value) : 'null';
}

/** `,"name":"value"` for a non-empty string, nothing otherwise (as `optionalFields` leaves it out). */
function optionalField(name: string, value: string | null | undefined): string {
  return typeof value === 'string' && value !== '' ? `,"${name}":${JSON.stringify(value)}` : '';
}

/** A metadata map's members as JSON writes them (no braces), and what the zone rule needs to know of it. */
interface MetadataText {
  members: string;
  hasZone: boolean;
  empty: boolean;
}

/**
 * Metadata maps are shared between records (src/registry/shared-values.ts: one object per
 * distinct map) and never changed in place, so the last maps written are kept written: five
 * keys written per instance were a third of the writer's time in a CPU profile of a cold full
 * fetch of 1,000,000 instances (the peer run with `--require bench/cpu-prof-preload.cjs`,
 * docs/benchmarks.md). All are
 * dropped once `METADATA_TEXTS_MAX` maps or `METADATA_TEXTS_MAX_CHARS` characters are kept
 * (where every instance has a map of its own, this costs one lookup and one insert per
 * instance); a map whose text alone is over `METADATA_TEXT_MAX_CHARS` is not kept.
 */
export const METADATA_TEXTS_MAX = 4_096;
export const METADATA_TEXTS_MAX_CHARS = 1_000_000;
const METADATA_TEXT_MAX_CHARS = 4_096;
const metadataTexts = new Map<Record<string, string>, MetadataText>();
let metadataTextChars = 0;

function metadataText(metadata: Record<string, string>): MetadataText {
  let text = metadataTexts.get(metadata);
  if (text === undefined) {
    let members = '';
    const keys = Object.keys(metadata);
    for (const key of keys) {
      // Skipped as JSON skips it (a value JSON cannot write); the metadata of a valid record is strings only.
      const value = JSON.stringify(metadata[key]) as string | undefined;
      if (value === undefined) continue;
      members += `${members === '' ? '' : ','}${JSON.stringify(key)}:${value}`;
    }
    text = { members, hasZone: metadata.zone !== undefined, empty: keys.length === 0 };
    if (members.length <= METADATA_TEXT_MAX_CHARS) {
      if (metadataTexts.size >= METADATA_TEXTS_MAX || metadataTextChars + members.length > METADATA_TEXTS_MAX_CHARS) {
        metadataTexts.clear();
        metadataTextChars = 0;
      }
      metadataTexts.set(metadata, text);
      metadataTextChars += members.length;
    }
  }
  return text;
}

/** The metadata object as `eurekaMetadata` makes it, written: the zone appended when it says none, Java's empty-map hint when empty. */
function metadataJson(metadata: Record<string, string>, zone: string): string {
  // A `zone` key present with no value (never in a validated record) keeps its place when the
  // zone is added: written the object way then.
  if (zone !== '' && metadata.zone === undefined && Object.hasOwn(metadata, 'zone')) return JSON.stringify({ ...metadata, zone });
  const { members, hasZone, empty } = metadataText(metadata);
  if (zone !== '' && !hasZone) return `{${members}${members === '' ? '' : ','}"zone":${JSON.stringify(zone)}}`;
  return empty ? `{"@class":"${EMPTY_MAP_CLASS}"}` : `{${members}}`;
}
