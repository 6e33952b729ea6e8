import { describe, expect, it } from 'vitest';
import { RegistryError } from '../../../src/errors.js';
import { isHost, parseInstanceId, parseMetadata, parseName, parseRegistration } from '../../../src/registry/validate.js';

const limits = { metadataMaxKeys: 3, metadataKeyMaxLength: 8, metadataValueMaxLength: 10 };
const bounds = { leaseDurationMs: 30_000, minLeaseDurationMs: 1_000, maxLeaseDurationMs: 60_000 };
const parse = (body: unknown) => parseRegistration(body, 'default', limits, bounds);
const valid = { service: 'orders', host: '10.0.0.1', port: 8080 };

describe('parseRegistration', () => {
  it('fills in every default', () => {
    expect(parse(valid)).toEqual({
      namespace: 'default',
      service: 'orders',
      instanceId: '10.0.0.1:8080',
      data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} },
      leaseDurationMs: 30_000,
    });
  });

  it('keeps every field given', () => {
    const input = parse({
      ...valid,
      instanceId: 'orders-1',
      securePort: 8443,
      status: 'STARTING',
      weight: 2.5,
      zone: 'eu-1a',
      metadata: { v: '1' },
      leaseDurationMs: 5_000,
    });
    expect(input.instanceId).toBe('orders-1');
    expect(input.data).toEqual({
      host: '10.0.0.1',
      port: 8080,
      securePort: 8443,
      status: 'STARTING',
      weight: 2.5,
      zone: 'eu-1a',
      metadata: { v: '1' },
    });
    expect(input.leaseDurationMs).toBe(5_000);
  });

  it('keeps a "__proto__" metadata key as plain data', () => {
    const metadata = JSON.parse('{"__proto__": "x"}') as Record<string, string>;
    const input = parseRegistration({ ...valid, metadata }, 'default', { ...limits, metadataKeyMaxLength: 16 }, bounds);
    expect(Object.getPrototypeOf(input.data.metadata)).toBe(Object.prototype);
    expect(Object.keys(input.data.metadata)).toEqual(['__proto__']);
  });

  it.each([
    [null, 'body'],
    [[], 'body'],
    ['text', 'body'],
    [{ ...valid, service: undefined }, 'service: is required'],
    [{ ...valid, service: '' }, 'service: is required'],
    [{ ...valid, service: 7 }, 'service: must be a string'],
    [{ ...valid, service: 'a/b' }, 'service: must start with'],
    [{ ...valid, service: 'x'.repeat(129) }, 'service: must be at most 128'],
    [{ ...valid, host: undefined }, 'host: is required'],
    [{ ...valid, host: 'bad host' }, 'host: must be a host name or an IP address'],
    [{ ...valid, host: '-a.example' }, 'host: must be'],
    [{ ...valid, host: '999.1.1.1' }, 'host: must be'],
    [{ ...valid, host: 42 }, 'host: must be'],
    [{ ...valid, port: undefined }, 'port: is required'],
    [{ ...valid, port: 0 }, 'port: must be between 1 and 65535'],
    [{ ...valid, port: 65536 }, 'port: must be between 1 and 65535'],
    [{ ...valid, port: '8080' }, 'port: must be an integer'],
    [{ ...valid, port: 80.5 }, 'port: must be an integer'],
    [{ ...valid, securePort: 70000 }, 'securePort: must be between'],
    [{ ...valid, weight: -1 }, 'weight: must be between 0'],
    [{ ...valid, weight: 'heavy' }, 'weight: must be a number'],
    [{ ...valid, status: 'SLEEPING' }, 'status: must be one of UP, DOWN, STARTING, OUT_OF_SERVICE'],
    [{ ...valid, metadata: [] }, 'metadata: must be an object'],
    [{ ...valid, metadata: 'x' }, 'metadata: must be an object'],
    [{ ...valid, metadata: { a: 1 } }, 'metadata.a: must be a string'],
    [{ ...valid, metadata: { a: '1', b: '2', c: '3', d: '4' } }, 'metadata: must have at most 3 keys'],
    [{ ...valid, metadata: { averyverylongkey: '1' } }, 'key must be at most 8'],
    [{ ...valid, metadata: { a: '12345678901' } }, 'metadata.a: must be at most 10'],
    [{ ...valid, metadata: { '': 'x' } }, 'metadata: keys must not be empty'],
    [{ ...valid, metadata: { 'a\rb': 'x' } }, 'metadata: key "a\\rb" must not contain control characters'],
    [{ ...valid, metadata: { 'a\n': 'x' } }, 'metadata: key "a\\n" must not contain control characters'],
    [{ ...valid, metadata: { 'a\u0000': 'x' } }, 'metadata: key "a\\u0000" must not contain control characters'],
    [{ ...valid, metadata: { '\u007f': 'x' } }, 'must not contain control characters'],
    [{ ...valid, instanceId: '.' }, 'instanceId: must not be "." or ".."'],
    [{ ...valid, instanceId: '..' }, 'instanceId: must not be "." or ".."'],
    [{ ...valid, leaseDurationMs: 999 }, 'leaseDurationMs: must be between 1000 and 60000'],
    [{ ...valid, leaseDurationMs: 60_001 }, 'leaseDurationMs: must be between'],
    [{ ...valid, leaseDurationMs: '5s' }, 'leaseDurationMs: must be an integer'],
    [{ ...valid, instanceId: 'a/b' }, 'instanceId: must not be "." or "..", nor contain'],
    [{ ...valid, instanceId: 'a b' }, 'instanceId: must not be "." or "..", nor contain'],
    [{ ...valid, instanceId: '' }, 'instanceId: is required'],
    [{ ...valid, zone: 5 }, 'zone: must be a string'],
    [{ ...valid, leaseDuration: 5 }, 'leaseDuration: is not a known field'],
  ])('refuses %j naming the field', (body, message) => {
    let error: unknown;
    try {
      parse(body);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RegistryError);
    expect((error as RegistryError).code).toBe('REG_ERR_VALIDATION');
    expect((error as RegistryError).message).toContain(message);
  });
});

describe('isHost', () => {
  it.each([
    ['10.0.0.1', true],
    ['::1', true],
    ['fe80::1', true],
    ['localhost', true],
    ['orders-1.prod.example.com', true],
    ['orders-1.prod.example.com.', true],
    ['a'.repeat(63) + '.com', true],
    ['a'.repeat(64) + '.com', false],
    ['under_score.example', false],
    ['', false],
    ['.', false],
    ['a..b', false],
    ['1.2.3', false],
    ['256.0.0.1', false],
    ['host:80', false],
  ])('%s -> %s', (host, expected) => {
    expect(isHost(host)).toBe(expected);
  });
});

describe('names', () => {
  it.each(['orders', 'ORDERS', 'a', 'svc.v2_x:1-2'])('accepts %s', (name) => {
    expect(parseName('service', name)).toBe(name);
  });
  it.each(['-lead', '.hidden', 'sp ace', 'sl/ash', 'ünï'])('refuses %s', (name) => {
    expect(() => parseName('service', name)).toThrow(RegistryError);
  });
  it.each(['host:8080', 'i-1', 'ORDERS@host', '...', '.a', 'a.', '..b'])('accepts instance id %s', (id) => {
    expect(parseInstanceId('id', id)).toBe(id);
  });
  it.each(['a?b', 'a#b', 'a%2Fb', 'tab\tx', 'x'.repeat(257), '.', '..'])('refuses instance id %j', (id) => {
    expect(() => parseInstanceId('id', id)).toThrow(RegistryError);
  });
  it('says why "." and ".." are refused: a client that normalises paths could never reach them', () => {
    expect(() => parseInstanceId('id', '..')).toThrow('id: must not be "." or ".."');
  });
});

describe('metadata keys', () => {
  const roomy = { metadataMaxKeys: 10, metadataKeyMaxLength: 64, metadataValueMaxLength: 64 };
  it('refuses a key with CR, LF or NUL on every path that checks metadata (Eureka and peers come through parseMetadata)', () => {
    for (const key of ['a\r', 'a\nb', '\u0000']) {
      expect(() => parseMetadata('metadata', { [key]: 'v' }, roomy)).toThrow('must not contain control characters');
    }
  });
  it('keeps keys of printable text, Unicode included', () => {
    expect(parseMetadata('metadata', { 'app.kubernetes.io/name': 'x', 'ключ é': 'y' }, roomy)).toEqual({ 'app.kubernetes.io/name': 'x', 'ключ é': 'y' });
  });
});
