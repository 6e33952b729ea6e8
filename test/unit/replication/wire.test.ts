import { describe, expect, it } from 'vitest';
import { parseKeyString, parseWireRecord } from '../../../src/replication/wire.js';
import { record } from '../../support/records.js';

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
