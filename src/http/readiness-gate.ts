import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { RegistryError } from '../errors.js';
import type { RegistryNode } from '../node.js';
import { hookList } from './hook-list.js';

/**
 * Until its start-up sync is done, a peer's registry is incomplete: a list would miss
 * instances (a watcher would see false removals) and a heartbeat would get a 404 for an
 * instance registered elsewhere. So the client-facing routes (the native `/v1` API and the
 * Eureka API) answer 503 `REG_ERR_NOT_READY` with `Retry-After` until then, and clients move
 * to another peer. Probes, the peer API (others must reach us while we sync), `/v1/cluster`
 * and the operator routes stay open.
 */
export function isGatedUntilReady(routeUrl: string): boolean {
  if (routeUrl.startsWith('/eureka')) return true;
  if (!routeUrl.startsWith('/v1/')) return false;
  return !routeUrl.startsWith('/v1/peer/') && routeUrl !== '/v1/cluster' && !routeUrl.startsWith('/v1/admin/');
}

export function installReadinessGate(app: FastifyInstance, node: RegistryNode): void {
  const gate: onRequestHookHandler = (_request, _reply, done) => {
    if (node.ready) return done();
    done(new RegistryError('REG_ERR_NOT_READY', 'this peer is still starting (loading its data dir, syncing with the cluster); try another peer', 1));
  };
  // On the gated routes only, so the others run no hook for it.
  app.addHook('onRoute', (route) => {
    if (isGatedUntilReady(route.url)) route.onRequest = [...hookList(route.onRequest), gate];
  });
}
