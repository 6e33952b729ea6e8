import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { RegistryError } from '../errors.js';
import type { RegistryNode } from '../node.js';
import { hookList } from './hook-list.js';
import { definitionOf } from './route-catalogue.js';

/**
 * Until its start-up sync is done, a peer's registry is incomplete: a list would miss
 * instances (a watcher would see false removals) and a heartbeat would get a 404 for an
 * instance registered elsewhere. So the routes whose definition says `gatedUntilReady` (the
 * native client API and the Eureka API) answer 503 `REG_ERR_NOT_READY` with `Retry-After`
 * until then, and clients move to another peer.
 */
export function isGatedUntilReady(method: string, routeUrl: string): boolean {
  return definitionOf(method, routeUrl)?.gatedUntilReady === true;
}

export function installReadinessGate(app: FastifyInstance, node: Pick<RegistryNode, 'ready'>): void {
  const gate: onRequestHookHandler = (_request, _reply, done) => {
    if (node.ready) return done();
    done(new RegistryError('REG_ERR_NOT_READY', 'this peer is still starting (loading its data dir, syncing with the cluster); try another peer', 1));
  };
  // On the gated routes only, so the others run no hook for it.
  app.addHook('onRoute', (route) => {
    if ([route.method].flat().some((method) => isGatedUntilReady(method, route.url))) route.onRequest = [...hookList(route.onRequest), gate];
  });
}
