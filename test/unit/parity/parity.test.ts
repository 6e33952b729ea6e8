import { describe, expect, it } from 'vitest';
import type { CredentialCarrier } from '../../../src/adapters/contract.js';
import { LISTENER_ADAPTERS } from '../../../src/adapters/listeners.js';
import { consulParity, eurekaBasicParity, eurekaParity, nativeParity, opsParity, prometheusParity } from './http-adapters.js';
import { dnsParity, xdsParity } from './listener-slots.js';
import { describeParity, type ParityAdapter } from './matrix.js';
import { nacosParity } from './nacos-adapter.js';

/**
 * Every adapter's operations under no credential, a read-only token, another namespace's token
 * and a write token (matrix.ts). The HTTP app's adapters are generated from its route
 * definitions (http-adapters.ts). The listeners' matrix is generated from their declarations
 * (src/adapters/listeners.ts): one matrix per declared listener and per credential carrier it
 * declares, each from the operations its parity declaration gives for that carrier. A listener
 * added to the list without a parity declaration fails here; there is no to-do to skip it.
 */
const HTTP_APP: ReadonlyArray<ParityAdapter<never>> = [nativeParity, eurekaParity, eurekaBasicParity, prometheusParity, opsParity] as unknown as ReadonlyArray<ParityAdapter<never>>;

/** Each listener's parity declaration, by its name: its operations for one carrier (one matrix per way of presenting it). */
const LISTENER_PARITY: Readonly<Record<string, (carrier: CredentialCarrier) => ReadonlyArray<ParityAdapter<never>>>> = {
  dns: dnsParity as (carrier: CredentialCarrier) => ParityAdapter<never>[],
  xds: xdsParity as (carrier: CredentialCarrier) => ParityAdapter<never>[],
  consul: consulParity as (carrier: CredentialCarrier) => ParityAdapter<never>[],
  nacos: nacosParity as (carrier: CredentialCarrier) => ParityAdapter<never>[],
};

for (const adapter of HTTP_APP) describeParity(adapter);

describe('parity: every declared listener is in the matrix, with every carrier it declares', () => {
  it.each(LISTENER_ADAPTERS.map((adapter) => [adapter.name, adapter] as const))('%s', (name, adapter) => {
    expect(LISTENER_PARITY[name], `${name} has no parity declaration (test/unit/parity/)`).toBeTypeOf('function');
    expect(adapter.credentials.length).toBeGreaterThan(0);
  });
});

for (const adapter of LISTENER_ADAPTERS) {
  const parity = LISTENER_PARITY[adapter.name];
  if (!parity) continue;
  for (const carrier of adapter.credentials) for (const matrix of parity(carrier)) describeParity(matrix);
}
