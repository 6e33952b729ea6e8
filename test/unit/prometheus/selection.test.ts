import { describe, expect, it } from 'vitest';
import { RegistryError } from '../../../src/errors.js';
import { MAX_SELECTED_SERVICES, parseSelection } from '../../../src/prometheus/selection.js';

function refusal(query: Record<string, unknown>): string {
  try {
    parseSelection(query);
  } catch (error) {
    expect(error).toBeInstanceOf(RegistryError);
    expect((error as RegistryError).code).toBe('REG_ERR_VALIDATION');
    return (error as RegistryError).message;
  }
  throw new Error(`accepted ${JSON.stringify(query)}`);
}

describe('parseSelection', () => {
  it('selects every service of the default namespace by default', () => {
    expect(parseSelection({})).toEqual({ namespace: 'default', services: null, group: null, zone: null });
    expect(parseSelection({ services: '*' }).services).toBeNull();
    expect(parseSelection({ services: '' }).services).toBeNull();
  });

  it('reads the namespace, the services (trimmed, deduplicated, in order), the group and the zone', () => {
    expect(parseSelection({ namespace: 'team-a', services: 'orders, billing,orders', group: 'blue', zone: 'eu-1a' })).toEqual({
      namespace: 'team-a',
      services: ['orders', 'billing'],
      group: 'blue',
      zone: 'eu-1a',
    });
  });

  it.each([
    [{ namespace: 'bad name' }, 'namespace: must start with a letter or digit'],
    [{ namespace: '' }, 'namespace: is required'],
    [{ services: 'orders,,billing' }, 'services: is required'],
    [{ services: 'orders,bad/name' }, 'services: must start with a letter or digit'],
    [{ group: 'a b' }, 'group: must start with a letter or digit'],
    [{ zone: '' }, 'zone: must be a zone name of 1 to 64 characters'],
    [{ zone: 'z'.repeat(65) }, 'zone: must be a zone name of 1 to 64 characters'],
    [{ namespace: ['a', 'b'] }, 'namespace: must be given once'],
    [{ services: ['orders', 'billing'] }, 'services: must be given once'],
    [{ service: 'orders' }, 'service: is not a parameter of this route (it takes namespace, services, group and zone)'],
  ])('refuses %j', (query, message) => {
    expect(refusal(query)).toContain(message);
  });

  it('bounds the number of services', () => {
    const names = Array.from({ length: MAX_SELECTED_SERVICES + 1 }, (_, i) => `s${i}`);
    expect(refusal({ services: names.join(',') })).toBe(`services: must name at most ${MAX_SELECTED_SERVICES} services`);
    expect(parseSelection({ services: names.slice(1).join(',') }).services).toHaveLength(MAX_SELECTED_SERVICES);
  });
});
