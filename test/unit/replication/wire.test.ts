import { describe, expect, it } from 'vitest';
import { NO_GUARDS } from '../../../src/registry/visibility.js';
import { encodeReplicate, parseKeyString, parseWireRecord, toWireRecord } from '../../../src/replication/wire.js';
import { record, stored } from '../../support/records.js';

const valid = { ...record({ wallMs: 5_000, peerId: 'peer-a' }), leaseRemainingMs: 1_000 };

describe('parseWireRecord', () => {
  it('accepts a well-formed record and drops unknown fields', () => {
    const parsed = parseWireRecord({ ...valid, extra: 'x', data: { ...valid.data, bonus: 1 } });
    expect(parsed).toEqual(valid);
  });

  it.each([
    ['not an object', 'x'],
    ['no data', { ...valid, data: undefined }],
    ['bad version', { ...valid, version: 'v1' }],
    ['bad deleted', { ...valid, deleted: 'gone' }],
    ['negative lease left', { ...valid, leaseRemainingMs: -1 }],
    ['bad owner', { ...valid, owner: 'a b' }],
    ['bad host', { ...valid, data: { ...valid.data, host: 'x y' } }],
    ['bad port', { ...valid, data: { ...valid.data, port: 0 } }],
    ['bad status', { ...valid, data: { ...valid.data, status: 'MAYBE' } }],
    ['bad weight', { ...valid, data: { ...valid.data, weight: -2 } }],
    ['bad metadata', { ...valid, data: { ...valid.data, metadata: { a: 1 } } }],
    ['bad service', { ...valid, service: '../x' }],
    ['bad instance id', { ...valid, instanceId: 'a/b' }],
  ])('refuses %s', (_name, value) => {
    expect(() => parseWireRecord(value)).toThrow();
  });
});

describe('parseKeyString', () => {
  it.each([
    ['default/orders/i-1', { namespace: 'default', service: 'orders', instanceId: 'i-1' }],
    ['ns/svc/host:80', { namespace: 'ns', service: 'svc', instanceId: 'host:80' }],
    ['nope', undefined],
    ['a/b', undefined],
    ['a/b/', undefined],
    ['/b/c', undefined],
    ['a//c', undefined],
  ])('%s', (text, expected) => {
    expect(parseKeyString(text)).toEqual(expected);
  });
});

describe('encodeReplicate', () => {
  const leases = { nowMs: 10_000, selfId: 'a', liveness: { isUp: () => true }, guards: NO_GUARDS };
  const entries = [
    stored(record({ instanceId: 'i-1' }), { leaseExpiresAtMs: 25_000 }),
    stored(record({ instanceId: 'i-2', deleted: 'cancel', wallMs: 2_000 })),
    stored(record({ instanceId: 'i-3', data: { ...record().data, metadata: { 'a"b': 'c\\d' }, extensions: { eureka: { hostName: 'h' } } } })),
  ];

  it.each([
    ['a batch', entries, false],
    ['one record', entries.slice(0, 1), false],
    ['no record', [], false],
    ['a repair push', entries, true],
  ])('writes %s as JSON.stringify writes the request, and counts its records', (_name, batch, repair) => {
    const encoded = encodeReplicate('peer "a"', batch, leases, repair);
    const request = { from: 'peer "a"', records: batch.map((entry) => toWireRecord(entry, leases)), ...(repair ? { repair } : {}) };
    expect(encoded.json).toBe(JSON.stringify(request));
    expect(encoded.items).toBe(batch.length);
  });
});
