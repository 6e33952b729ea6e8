#!/usr/bin/env node
import { Agent, request } from 'undici';
import { loadConfig } from '../config/load.js';

/**
 * The Docker health check: `GET /healthz` on this container's own peer, found from the same
 * configuration the peer reads (environment and file), over HTTPS when it serves TLS. Exits
 * 0 when it answers 200, 1 otherwise (a bad configuration included).
 */
async function probe(): Promise<boolean> {
  const config = await loadConfig(process.env, {});
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const scheme = config.tls.certFile === null ? 'http' : 'https';
  // A loopback probe of our own certificate, sending nothing secret: no need to verify it
  // (its name may not cover 127.0.0.1).
  const dispatcher = new Agent({ connect: { rejectUnauthorized: false, timeout: 2_000 } });
  try {
    const response = await request(`${scheme}://${host.includes(':') ? `[${host}]` : host}:${config.port}/healthz`, {
      dispatcher,
      headersTimeout: 2_000,
      bodyTimeout: 2_000,
    });
    await response.body.dump();
    return response.statusCode === 200;
  } finally {
    await dispatcher.close();
  }
}

probe().then(
  (healthy) => process.exit(healthy ? 0 : 1),
  () => process.exit(1),
);
