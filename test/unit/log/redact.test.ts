import { describe, expect, it } from 'vitest';
import { CENSOR, redactSecrets, redactText } from '../../../src/log/redact.js';

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

describe('redactText: credentials in URLs and other strings', () => {
  it.each([
    ['/v1/catalog/services?token=s3cr3t&dc=dc1', `/v1/catalog/services?token=${CENSOR}&dc=dc1`],
    ['/v1/kv?dc=dc1&token=s3cr3t', `/v1/kv?dc=dc1&token=${CENSOR}`],
    ['GET /x?access_token=abc#frag', `GET /x?access_token=${CENSOR}#frag`],
    // Nacos clients send the login's token as accessToken (camel case).
    ['GET /nacos/v1/ns/instance/list?serviceName=a&accessToken=eyJabc', `GET /nacos/v1/ns/instance/list?serviceName=a&accessToken=${CENSOR}`],
    ['/login?Password=hunter2&user=me', `/login?Password=${CENSOR}&user=me`],
    ['http://user:pa55@peer-a:8761/eureka/', `http://${CENSOR}@peer-a:8761/eureka/`],
    ['seed https://eureka:tok@10.0.0.1/eureka and http://10.0.0.2/', `seed https://${CENSOR}@10.0.0.1/eureka and http://10.0.0.2/`],
    ['authorization: Bearer abcdef123456', `authorization: Bearer ${CENSOR}`],
    ['Basic ZXVyZWthOnRva2Vu was sent', `Basic ${CENSOR} was sent`],
  ])('%s', (text, expected) => {
    expect(redactText(text)).toBe(expected);
  });

  it('hands back the same string when there is nothing to censor', () => {
    for (const text of ['/v1/services/orders?namespace=team-a', 'user@example.com wrote', 'tokens: 3 configured', 'basic auth is off']) {
      expect(redactText(text)).toBe(text);
    }
  });

  it('censors URLs in the fields of a line, at the top level and one level down, and the Consul token header', () => {
    expect(redactSecrets({ url: '/v1/agent/services?token=abc', req: { url: '/v1/health/service/x?token=abc' } })).toEqual({
      url: `/v1/agent/services?token=${CENSOR}`,
      req: { url: `/v1/health/service/x?token=${CENSOR}` },
    });
    expect(redactSecrets({ headers: { 'x-consul-token': 'abc' }, authorization: 'Bearer abc', 'X-Consul-Token': 'abc' })).toEqual({
      headers: { 'x-consul-token': CENSOR },
      authorization: CENSOR,
      'X-Consul-Token': CENSOR,
    });
  });
});
