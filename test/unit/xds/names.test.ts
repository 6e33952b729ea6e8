import { describe, expect, it } from 'vitest';
import { parseResourceName, resourceNameOf } from '../../../src/xds/names.js';

describe('xDS resource names', () => {
  it.each([
    ['default', 'greeter', 'greeter'],
    ['team-a', 'greeter', 'greeter.team-a'],
    ['a.b', 'greeter', 'greeter.a.b'],
  ])('names service %s/%s %s', (namespace, service, name) => {
    expect(resourceNameOf(namespace, service)).toBe(name);
  });

  it.each([
    ['greeter', ['default'], { namespace: 'default', service: 'greeter' }],
    ['greeter.team-a', ['default', 'team-a'], { namespace: 'team-a', service: 'greeter' }],
    // Only exposed namespaces count as suffixes: otherwise the dot is the service's own.
    ['greeter.team-a', ['default'], { namespace: 'default', service: 'greeter.team-a' }],
    ['greeter.team-a', ['team-a'], { namespace: 'team-a', service: 'greeter' }],
    ['greeter', ['team-a'], null],
    // The longest exposed namespace suffix wins.
    ['greeter.a.b', ['default', 'b', 'a.b'], { namespace: 'a.b', service: 'greeter' }],
    ['.team-a', ['default', 'team-a'], { namespace: 'default', service: '.team-a' }],
    ['', ['default'], null],
  ])('reads %j with namespaces %j as %j', (name, namespaces, expected) => {
    expect(parseResourceName(name, namespaces)).toEqual(expected);
  });
});
