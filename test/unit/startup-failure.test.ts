import { describe, expect, it } from 'vitest';
import { isTlsError, listenFailure, otherFailure, tlsFailure } from '../../src/startup-failure.js';

const errorWith = (code: string, message: string) => Object.assign(new Error(message), { code });
const http = { what: 'the HTTP API', host: '127.0.0.1', port: 8762, portSetting: '--port (REGISTRY_PORT)' };

describe('listenFailure', () => {
  it.each([
    [
      'a port in use',
      errorWith('EADDRINUSE', 'listen EADDRINUSE: address already in use 127.0.0.1:8762'),
      http,
      'cannot listen on 127.0.0.1:8762 (the HTTP API): the port is already in use (by another peer, or another program); stop that one, or choose another port with --port (REGISTRY_PORT)',
    ],
    [
      'a privileged port',
      errorWith('EACCES', 'listen EACCES: permission denied 0.0.0.0:80'),
      { ...http, host: '0.0.0.0', port: 80 },
      'cannot listen on 0.0.0.0:80 (the HTTP API): permission denied (a port below 1024 needs root or the CAP_NET_BIND_SERVICE capability); choose a port from 1024 up with --port (REGISTRY_PORT)',
    ],
    [
      'permission denied on a high port',
      errorWith('EACCES', 'listen EACCES'),
      http,
      'cannot listen on 127.0.0.1:8762 (the HTTP API): permission denied; choose another port with --port (REGISTRY_PORT)',
    ],
    [
      'an address of another machine',
      errorWith('EADDRNOTAVAIL', 'listen EADDRNOTAVAIL'),
      { ...http, host: '10.9.9.9' },
      'cannot listen on 10.9.9.9:8762 (the HTTP API): no network interface of this machine has the address 10.9.9.9; choose another with --host (REGISTRY_HOST, or `host` in the config file)',
    ],
    [
      'an IPv6 address, and a host name that does not resolve',
      errorWith('ENOTFOUND', 'getaddrinfo ENOTFOUND'),
      { ...http, host: 'fe80::1' },
      'cannot listen on [fe80::1]:8762 (the HTTP API): the host name fe80::1 does not resolve; choose another with --host (REGISTRY_HOST, or `host` in the config file)',
    ],
    ['anything else', new Error('boom'), http, 'cannot listen on 127.0.0.1:8762 (the HTTP API): boom'],
  ])('%s', (_what, error, target, line) => {
    expect(listenFailure(error, target)).toBe(line);
  });
});

describe('tlsFailure and otherFailure', () => {
  it('names the TLS files and what they must be', () => {
    const error = errorWith('ERR_OSSL_PEM_NO_START_LINE', 'error:0480006C:PEM routines::no start line');
    expect(isTlsError(error)).toBe(true);
    expect(isTlsError(errorWith('EADDRINUSE', 'x'))).toBe(false);
    expect(isTlsError(new Error('plain'))).toBe(false);
    expect(tlsFailure(error, { certFile: 'tls/peer.crt', keyFile: 'tls/peer.key' })).toBe(
      'bad TLS files (--tls-cert tls/peer.crt, --tls-key tls/peer.key): error:0480006C:PEM routines::no start line; they must be PEM, and the key must belong to the certificate',
    );
  });

  it('gives the message and the code, never a stack', () => {
    expect(otherFailure('the start-up sync', errorWith('EMFILE', 'too many open files'))).toBe('cannot start (the start-up sync): too many open files (EMFILE)');
    expect(otherFailure('x', errorWith('EMFILE', 'EMFILE: too many open files'))).toBe('cannot start (x): EMFILE: too many open files');
    expect(otherFailure('x', 'a string')).toBe('cannot start (x): a string');
  });
});
