import { it } from 'vitest';
import {
  consulHeaderParity,
  consulQueryParity,
  eurekaBasicParity,
  eurekaParity,
  nativeParity,
  opsParity,
  prometheusParity,
} from './http-adapters.js';
import { dnsParity, xdsParity } from './listener-slots.js';
import { describeParity, type ParityAdapter } from './matrix.js';
import { nacosAccessTokenParity, nacosGrpcParity, nacosPasswordParity } from './nacos-adapter.js';

/**
 * Every adapter's operations under no credential, a read-only token, another namespace's token
 * and a write token (matrix.ts). One line per adapter declaration; a protocol not declared yet
 * shows as a to-do.
 */
const adapters: Array<[string, ParityAdapter<never> | null]> = [
  ['native', nativeParity as ParityAdapter<never>],
  ['eureka', eurekaParity as ParityAdapter<never>],
  ['eureka basic', eurekaBasicParity as ParityAdapter<never>],
  ['prometheus', prometheusParity as ParityAdapter<never>],
  ['ops', opsParity as ParityAdapter<never>],
  ['consul', consulHeaderParity as ParityAdapter<never>],
  ['consul ?token=', consulQueryParity as ParityAdapter<never>],
  ['nacos ?accessToken=', nacosAccessTokenParity as ParityAdapter<never>],
  ['nacos password', nacosPasswordParity as ParityAdapter<never>],
  ['nacos grpc', nacosGrpcParity as ParityAdapter<never>],
  ['xds', xdsParity as ParityAdapter<never> | null],
  ['dns', dnsParity as ParityAdapter<never> | null],
];

for (const [name, adapter] of adapters) {
  if (adapter) describeParity(adapter);
  else it.todo(`parity: ${name} declares its operations (test/unit/parity/listener-slots.ts)`);
}
