import { describe, expect, it } from 'vitest';
import { cannotRunRingHash, policyFor } from '../../../src/xds/client-policy.js';
import { openXdsWarning } from '../../../src/xds/listener.js';

describe('the balancing policy each client is sent', () => {
  // What real clients send in node.user_agent_name / user_agent_version (Python's seen from Debian 12's python3-grpcio).
  const python151 = { user_agent_name: 'gRPC C-core linux Python', user_agent_version: 'C-core 29.0.0 Python 1.51.1' };
  const cpp150 = { user_agent_name: 'gRPC C-core linux', user_agent_version: 'C-core 28.0.0' };
  const python160 = { user_agent_name: 'gRPC C-core linux Python', user_agent_version: 'C-core 38.0.0 Python 1.60.0' };
  const node = { user_agent_name: 'gRPC Node Pure JS', user_agent_version: '1.14.7' };
  const go = { user_agent_name: 'gRPC Go', user_agent_version: '1.60.1' };
  const envoy = { user_agent_name: 'envoy', user_agent_version: '' };

  it.each([
    ['C-core 1.51 (Python)', python151, true],
    ['C-core 1.50 (C++)', cpp150, true],
    ['C-core 1.60', python160, false],
    ['a C-core that names no version', { user_agent_name: 'gRPC C-core linux' }, true],
    ['grpc-js', node, false],
    ['grpc-go', go, false],
    ['Envoy', envoy, false],
    ['no node', undefined, false],
  ])('%s: cannot run ring_hash = %s', (_label, client, expected) => {
    expect(cannotRunRingHash(client)).toBe(expected);
  });

  it('auto gives round_robin only to clients that cannot run ring_hash; a forced policy goes to every client', () => {
    expect(policyFor('auto', python151)).toBe('round_robin');
    expect(policyFor('auto', node)).toBe('ring_hash');
    expect(policyFor('auto', null)).toBe('ring_hash');
    expect(policyFor('ring_hash', python151)).toBe('ring_hash');
    expect(policyFor('round_robin', node)).toBe('round_robin');
  });
});

describe('the start-up warning of an open xDS port', () => {
  it.each([
    ['loopback, open', '127.0.0.1', true, false, null],
    ['network address, no token configured', '10.0.0.11', true, false, 'no client token is configured'],
    ['network address, tokens and allowAnonymous', '10.0.0.11', true, true, 'xds.allowAnonymous is on'],
    ['network address, every stream needs a token', '10.0.0.11', false, true, null],
  ])('%s', (_label, host, anonymous, tokens, expected) => {
    const warning = openXdsWarning(host, 18000, ['default', 'team-a'], anonymous, tokens);
    if (expected === null) expect(warning).toBeNull();
    else expect(warning).toMatch(new RegExp(`port 18000 on ${host} serves the instances of namespaces default, team-a .*${expected}`));
  });
});
