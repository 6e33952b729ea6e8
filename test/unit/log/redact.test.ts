import { describe, expect, it } from 'vitest';
import { CENSOR, redactSecrets } from '../../../src/log/redact.js';

describe('redactSecrets', () => {
  it('censors tokens and the cluster secret at the top level and one level down', () => {
    const input = { token: 't', clusterSecret: 's', config: { clusterSecret: 's', port: 1 }, principal: { token: 't', name: 'ops' }, key: 'k' };
    expect(redactSecrets(input)).toEqual({
      token: CENSOR,
      clusterSecret: CENSOR,
      config: { clusterSecret: CENSOR, port: 1 },
      principal: { token: CENSOR, name: 'ops' },
      key: 'k',
    });
  });

  it('censors the authorization and signature headers, bare or under req', () => {
    const headers = { authorization: 'Bearer t', 'x-registry-signature': 'sig', accept: 'json' };
    expect(redactSecrets({ headers })).toEqual({ headers: { authorization: CENSOR, 'x-registry-signature': CENSOR, accept: 'json' } });
    expect(redactSecrets({ req: { method: 'GET', headers } })).toEqual({
      req: { method: 'GET', headers: { authorization: CENSOR, 'x-registry-signature': CENSOR, accept: 'json' } },
    });
  });

  it('never changes its argument, and hands back the same object when there is nothing to censor', () => {
    const input = { req: { headers: { authorization: 'Bearer t' } }, token: 't' };
    const copy = structuredClone(input);
    redactSecrets(input);
    expect(input).toEqual(copy);
    const clean = { key: 'default/svc/i-1', host: '10.0.0.1', port: 80, nested: { a: 1 } };
    expect(redactSecrets(clean)).toBe(clean);
  });

  it('leaves an error whole for the error serializer', () => {
    const err = new Error('boom');
    expect(redactSecrets({ err }).err).toBe(err);
  });
});
