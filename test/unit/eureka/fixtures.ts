import type { EurekaData } from '../../../src/eureka/status-rules.js';
import type { EurekaAttributes } from '../../../src/eureka/attributes.js';

export const DEFAULT_CLASS = 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo';

/** Eureka attributes as a typical Spring Cloud client registers them. */
export function eurekaAttributes(overrides: Partial<EurekaAttributes> = {}): EurekaAttributes {
  return {
    hostName: 'orders-1.local',
    ipAddr: '10.0.0.1',
    vipAddress: 'orders',
    secureVipAddress: 'orders',
    homePageUrl: null,
    statusPageUrl: null,
    healthCheckUrl: null,
    secureHealthCheckUrl: null,
    dataCenterInfo: { className: DEFAULT_CLASS, name: 'MyOwn', metadata: {} },
    countryId: 1,
    portEnabled: true,
    securePort: 443,
    overriddenStatus: null,
    reportedStatus: 'UP',
    renewalIntervalSecs: 30,
    lastDirtyTimestampMs: 1_000,
    ...overrides,
  };
}

/** Record data of a Eureka registration. */
export function eurekaData(
  overrides: Partial<Omit<EurekaData, 'eureka'>> & { eureka?: Partial<EurekaAttributes> } = {},
): EurekaData {
  const { eureka, ...rest } = overrides;
  return {
    host: 'orders-1.local',
    port: 8080,
    securePort: null,
    status: 'UP',
    weight: 1,
    zone: '',
    metadata: {},
    ...rest,
    eureka: eurekaAttributes(eureka),
  };
}

/** A register body as eureka-js-client sends one. */
export function jsClientBody(instance: Record<string, unknown> = {}): { instance: Record<string, unknown> } {
  return {
    instance: {
      app: 'orders',
      hostName: 'orders-1.local',
      ipAddr: '10.0.0.1',
      port: { $: 8080, '@enabled': true },
      vipAddress: 'orders.vip',
      dataCenterInfo: { '@class': DEFAULT_CLASS, name: 'MyOwn' },
      status: 'UP',
      ...instance,
    },
  };
}

/** A register body as the Java client (Spring Cloud) sends one, with strings where it writes strings. */
export function javaClientBody(instance: Record<string, unknown> = {}): { instance: Record<string, unknown> } {
  return {
    instance: {
      instanceId: 'orders-1.local:orders:8080',
      hostName: 'orders-1.local',
      app: 'ORDERS',
      ipAddr: '10.0.0.1',
      status: 'UP',
      overriddenStatus: 'UNKNOWN',
      port: { $: 8080, '@enabled': 'true' },
      securePort: { $: 443, '@enabled': 'false' },
      countryId: 1,
      dataCenterInfo: { '@class': DEFAULT_CLASS, name: 'MyOwn' },
      leaseInfo: { renewalIntervalInSecs: 30, durationInSecs: 90, registrationTimestamp: 0, lastRenewalTimestamp: 0, evictionTimestamp: 0, serviceUpTimestamp: 0 },
      metadata: { 'management.port': '8080' },
      homePageUrl: 'http://orders-1.local:8080/',
      statusPageUrl: 'http://orders-1.local:8080/actuator/info',
      healthCheckUrl: 'http://orders-1.local:8080/actuator/health',
      vipAddress: 'orders',
      secureVipAddress: 'orders',
      isCoordinatingDiscoveryServer: 'false',
      lastUpdatedTimestamp: '1767225500000',
      lastDirtyTimestamp: '1767225500000',
      ...instance,
    },
  };
}
