import { describe, expect, it } from 'vitest';
import { parseEurekaInstance } from '../../../src/eureka/instance-input.js';
import { expectRegistryError } from '../../support/errors.js';
import { testConfig } from '../../support/node.js';
import { DEFAULT_CLASS, javaClientBody, jsClientBody } from './fixtures.js';

const config = testConfig();
const context = { limits: config.limits, bounds: config.cluster };
const parse = (body: unknown) => parseEurekaInstance(body, context);

const refusal = (body: unknown) => expectRegistryError(() => parse(body)).message;

describe('parseEurekaInstance', () => {
  it('reads what eureka-js-client sends: no id (the host name is), boolean @enabled, no leaseInfo', () => {
    const parsed = parse(jsClientBody());
    expect(parsed.app).toBe('ORDERS');
    expect(parsed.instanceId).toBe('orders-1.local');
    expect(parsed.data).toMatchObject({ host: 'orders-1.local', port: 8080, securePort: null, status: 'UP', weight: 1, metadata: {} });
    expect(parsed.data.eureka).toMatchObject({
      hostName: 'orders-1.local',
      ipAddr: '10.0.0.1',
      vipAddress: 'orders.vip',
      secureVipAddress: null,
      portEnabled: true,
      securePort: 443,
      dataCenterInfo: { className: DEFAULT_CLASS, name: 'MyOwn', metadata: {} },
      renewalIntervalSecs: 30,
      reportedStatus: 'UP',
      overriddenStatus: null,
    });
    // Eureka's 90 s default lease when none is asked for.
    expect(parsed.leaseDurationMs).toBe(90_000);
    expect(parsed.lastDirtyTimestampMs).toBeNull();
  });

  it('reads what the Java client sends: strings for booleans and timestamps, metadata, URLs', () => {
    const parsed = parse(javaClientBody());
    expect(parsed.instanceId).toBe('orders-1.local:orders:8080');
    expect(parsed.lastDirtyTimestampMs).toBe(1_767_225_500_000);
    expect(parsed.data.metadata).toEqual({ 'management.port': '8080' });
    expect(parsed.data.eureka).toMatchObject({
      healthCheckUrl: 'http://orders-1.local:8080/actuator/health',
      secureVipAddress: 'orders',
      securePort: 443,
    });
    expect(parsed.data.securePort).toBeNull();
  });

  it.each([
    [8080, 8080, true],
    ['8080', 8080, true],
    [{ $: '8080', '@enabled': 'true' }, 8080, true],
    [{ $: 8080, '@enabled': false }, 8080, false],
    [{ $: 8080, '@enabled': 'FALSE' }, 8080, false],
    [{ $: 8080 }, 8080, true],
    [undefined, 7001, true],
  ])('reads the port %j leniently', (port, expected, enabled) => {
    const parsed = parse(jsClientBody({ port }));
    expect(parsed.data.port).toBe(expected);
    expect(parsed.data.eureka.portEnabled).toBe(enabled);
  });

  it('keeps an enabled secure port in the core record and a disabled one in the attributes only', () => {
    expect(parse(jsClientBody({ securePort: { $: 8443, '@enabled': 'true' } })).data.securePort).toBe(8443);
    const disabled = parse(jsClientBody({ securePort: { $: 8443, '@enabled': false } }));
    expect(disabled.data.securePort).toBeNull();
    expect(disabled.data.eureka.securePort).toBe(8443);
  });

  it('derives a missing @class from the data centre name, and a missing name is MyOwn', () => {
    expect(parse(jsClientBody({ dataCenterInfo: { name: 'MyOwn' } })).data.eureka.dataCenterInfo.className).toBe(DEFAULT_CLASS);
    const amazon = parse(
      jsClientBody({
        dataCenterInfo: { name: 'Amazon', metadata: { 'instance-id': 'i-123', 'availability-zone': 'eu-west-1a' } },
      }),
    );
    expect(amazon.data.eureka.dataCenterInfo).toEqual({
      className: 'com.netflix.appinfo.AmazonInfo',
      name: 'Amazon',
      metadata: { 'instance-id': 'i-123', 'availability-zone': 'eu-west-1a' },
    });
    // Eureka's id rule for Amazon, and its zone for ours.
    expect(amazon.instanceId).toBe('i-123');
    expect(amazon.data.zone).toBe('eu-west-1a');
    expect(parse(jsClientBody({ dataCenterInfo: {} })).data.eureka.dataCenterInfo.name).toBe('MyOwn');
  });

  it('reads statuses in any case, and UNKNOWN as no override', () => {
    const parsed = parse(jsClientBody({ status: 'starting', overriddenstatus: 'unknown' }));
    expect(parsed.data.status).toBe('STARTING');
    expect(parsed.overriddenStatus).toBeNull();
    expect(parse(jsClientBody({ overriddenStatus: 'OUT_OF_SERVICE' })).overriddenStatus).toBe('OUT_OF_SERVICE');
    expect(parse(jsClientBody({ status: undefined })).data.status).toBe('UP');
  });

  it('clamps the lease to the cluster bounds and reads numbers given as strings', () => {
    expect(parse(jsClientBody({ leaseInfo: { durationInSecs: '30', renewalIntervalInSecs: '10' } }))).toMatchObject({
      leaseDurationMs: 30_000,
      data: { eureka: { renewalIntervalSecs: 10 } },
    });
    expect(parse(jsClientBody({ leaseInfo: { durationInSecs: 100_000 } })).leaseDurationMs).toBe(config.cluster.maxLeaseDurationMs);
    expect(parse(jsClientBody({ leaseInfo: { durationInSecs: 0 } })).leaseDurationMs).toBe(90_000);
  });

  it('uses the IP address as host when the host name is not a valid one', () => {
    expect(parse(jsClientBody({ hostName: 'my_host' })).data.host).toBe('10.0.0.1');
  });

  it('turns metadata numbers into strings and drops the @class hint', () => {
    const parsed = parse(jsClientBody({ metadata: { '@class': 'java.util.Collections$EmptyMap', port: 9000, zone: 'b' } }));
    expect(parsed.data.metadata).toEqual({ port: '9000', zone: 'b' });
    expect(parsed.data.zone).toBe('b');
  });

  it.each([
    [{}, /^instance: is required/],
    [{ instance: 'x' }, /^instance: is required/],
    [jsClientBody({ app: undefined }), /^instance\.app: is required/],
    [jsClientBody({ app: 'bad app' }), /^instance\.app:/],
    [jsClientBody({ hostName: undefined }), /^instance\.hostName: is required/],
    [jsClientBody({ hostName: '' }), /^instance\.hostName: is required/],
    [jsClientBody({ ipAddr: undefined }), /^instance\.ipAddr: is required/],
    [jsClientBody({ dataCenterInfo: undefined }), /^instance\.dataCenterInfo: is required/],
    [jsClientBody({ hostName: 'bad host', ipAddr: 'also bad' }), /^instance\.instanceId|^instance\.hostName:/],
    [jsClientBody({ instanceId: 'a/b' }), /^instance\.instanceId:/],
    [jsClientBody({ port: 0 }), /^instance\.port:/],
    [jsClientBody({ port: 'http' }), /^instance\.port:/],
    [jsClientBody({ port: { $: 80, '@enabled': 'maybe' } }), /^instance\.port\.@enabled:/],
    [jsClientBody({ status: 'ASLEEP' }), /^instance\.status:/],
    [jsClientBody({ status: 'UNKNOWN' }), /^instance\.status:/],
    [jsClientBody({ metadata: { nested: { a: 1 } } }), /^instance\.metadata\.nested:/],
    [jsClientBody({ metadata: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, 'v'])) }), /^instance\.metadata:/],
    [jsClientBody({ vipAddress: 'v'.repeat(2_000) }), /^instance\.vipAddress:/],
    [jsClientBody({ homePageUrl: 'http://x/\u0000' }), /^instance\.homePageUrl:/],
  ])('refuses %j naming the field', (body, message) => {
    expect(refusal(body)).toMatch(message);
  });
});
