import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../../src/config/load.js';
import { configError } from '../../support/errors.js';
import { sha256Hex } from '../../../src/config/security.js';

const SECRET = 's'.repeat(32);
const token = (change: Record<string, unknown> = {}) => ({ name: 'ci', token: 'a-token-of-enough-length', namespaces: ['*'], scopes: ['read'], ...change });


describe('security configuration', () => {
  it('is open by default: no token, no secret, Eureka on default, plain HTTP', () => {
    const config = resolveConfig({}, {}, {});
    expect(config.security).toMatchObject({ tokens: [], clusterSecret: null, peerMtls: false, eurekaNamespace: 'default', insecure: false, peerReplayWindowMs: 30_000 });
    expect(config.tls).toEqual({ certFile: null, keyFile: null, caFile: null });
  });

  it('holds only the SHA-256 of a token given in clear', () => {
    const config = resolveConfig({ security: { tokens: [token()] } }, {}, {});
    expect(config.security.tokens).toEqual([{ name: 'ci', sha256: sha256Hex('a-token-of-enough-length'), namespaces: '*', scopes: ['read'] }]);
    expect(JSON.stringify(config)).not.toContain('a-token-of-enough-length');
  });

  it('takes a digest as given (any case), and REGISTRY_TOKENS over the file', () => {
    const digest = sha256Hex('other-token-long-enough').toUpperCase();
    const env = { REGISTRY_TOKENS: JSON.stringify([{ name: 'env', sha256: digest, namespaces: ['team-a'], scopes: ['write', 'admin'] }]) };
    const config = resolveConfig({ security: { tokens: [token()] } }, env, {});
    expect(config.security.tokens).toEqual([{ name: 'env', sha256: digest.toLowerCase(), namespaces: ['team-a'], scopes: ['write', 'admin'] }]);
  });

  it('takes the cluster secret from REGISTRY_CLUSTER_SECRET over the file', () => {
    expect(resolveConfig({ security: { clusterSecret: SECRET } }, {}, {}).security.clusterSecret).toBe(SECRET);
    expect(resolveConfig({ security: { clusterSecret: SECRET } }, { REGISTRY_CLUSTER_SECRET: 't'.repeat(40) }, {}).security.clusterSecret).toBe('t'.repeat(40));
  });

  it.each([
    [{ security: { tokens: {} } }, {}, 'security.tokens', 'must be an array'],
    [{ security: { tokens: [token({ name: 'a b' })] } }, {}, 'security.tokens[0].name', 'must be 1-64'],
    [{ security: { tokens: [token({ token: 'short' })] } }, {}, 'security.tokens[0].token', 'must be a string of 16'],
    [{ security: { tokens: [token({ token: 'has a space in the token' })] } }, {}, 'security.tokens[0].token', 'spaces'],
    [{ security: { tokens: [token({ sha256: 'abc' })] } }, {}, 'security.tokens[0]', 'exactly one of'],
    [{ security: { tokens: [{ ...token(), token: undefined, sha256: 'xyz' }] } }, {}, 'security.tokens[0].sha256', '64 hexadecimal'],
    [{ security: { tokens: [token({ namespaces: [] })] } }, {}, 'security.tokens[0].namespaces', 'non-empty'],
    [{ security: { tokens: [token({ namespaces: ['*', 'a'] })] } }, {}, 'security.tokens[0].namespaces', 'stands alone'],
    [{ security: { tokens: [token({ namespaces: ['bad name'] })] } }, {}, 'security.tokens[0].namespaces[0]', 'namespace'],
    [{ security: { tokens: [token({ scopes: ['root'] })] } }, {}, 'security.tokens[0].scopes[0]', 'read, write, admin'],
    [{ security: { tokens: [token({ colour: 'red' })] } }, {}, 'security.tokens[0].colour', 'not a known field'],
    [{ security: { tokens: [token(), token()] } }, {}, 'security.tokens[1].name', 'duplicates'],
    [{ security: { tokens: [token(), token({ name: 'ci2' })] } }, {}, 'security.tokens[1]', 'same token'],
    [{}, { REGISTRY_TOKENS: '[{' }, 'REGISTRY_TOKENS', 'JSON array'],
    [{}, { REGISTRY_TOKENS: JSON.stringify([token({ scopes: [] })]) }, 'REGISTRY_TOKENS[0].scopes', 'non-empty'],
    [{ security: { clusterSecret: 'short' } }, {}, 'security.clusterSecret', 'at least 32'],
    [{}, { REGISTRY_CLUSTER_SECRET: 'short' }, 'REGISTRY_CLUSTER_SECRET', 'openssl rand'],
    [{ security: { clusterSecret: SECRET, tokens: [token({ token: SECRET })] } }, {}, 'security.tokens[0]', 'is the cluster secret'],
    [{ security: { clusterSecret: SECRET, tokens: [{ ...token(), token: undefined, sha256: sha256Hex(SECRET) }] } }, {}, 'security.tokens[0]', 'is the cluster secret'],
    [{ security: { eurekaNamespace: 'a/b' } }, {}, 'security.eurekaNamespace', 'namespace'],
    [{ security: { peerReplayWindowMs: 10 } }, {}, 'security.peerReplayWindowMs', 'from 1000'],
    [{ security: { peerMtls: 'yes' } }, {}, 'security.peerMtls', 'true or false'],
    [{ security: { peerMtls: true } }, {}, 'security.peerMtls', 'tls.caFile'],
    [{ security: { passwords: [] } }, {}, 'security.passwords', 'not a known'],
    [{ tls: { certFile: 'c.pem' } }, {}, 'tls.keyFile', 'required'],
    [{ tls: { pfx: 'x' } }, {}, 'tls.pfx', 'not a known'],
    [{ tls: 'on' }, {}, 'tls', 'must be an object'],
    [{ tls: { certFile: 'c', keyFile: 'k' }, peers: [{ id: 'peer-1', url: 'http://127.0.0.1:8761' }] }, {}, 'url', 'must use https'],
    [{}, { REGISTRY_INSECURE: 'maybe' }, 'REGISTRY_INSECURE', 'true or false'],
    [{ limits: { headersTimeoutMs: 20_000, requestTimeoutMs: 10_000 } }, {}, 'limits.headersTimeoutMs', 'requestTimeoutMs'],
  ])('refuses %j (env %j), naming %s', (file, env, field, problem) => {
    const caught = configError(file, env as Record<string, string>);
    expect(caught.field).toBe(field);
    expect(caught.problem).toContain(problem);
    // A message never repeats a secret or a token.
    for (const secret of [SECRET, 'a-token-of-enough-length', 'has a space in the token']) expect(caught.message).not.toContain(secret);
  });

  it('serves https with a certificate: the default URL follows, flags and environment name the files', () => {
    const config = resolveConfig({ tls: { certFile: 'file-cert.pem', keyFile: 'file-key.pem' } }, { REGISTRY_TLS_KEY: 'env-key.pem' }, { tlsCert: 'flag-cert.pem', tlsCa: 'ca.pem' });
    expect(config.tls).toEqual({ certFile: 'flag-cert.pem', keyFile: 'env-key.pem', caFile: 'ca.pem' });
    expect(config.self.url).toBe('https://127.0.0.1:8761');
  });

  it('takes --insecure from the flag or REGISTRY_INSECURE', () => {
    expect(resolveConfig({}, {}, { insecure: true }).security.insecure).toBe(true);
    expect(resolveConfig({}, { REGISTRY_INSECURE: 'true' }, {}).security.insecure).toBe(true);
    expect(resolveConfig({}, { REGISTRY_INSECURE: '0' }, {}).security.insecure).toBe(false);
  });
});
