/**
 * The registry's TypeScript client (`peer-registry/client`): register instances and keep them
 * registered, discover and watch services through any peer, pick an instance. It speaks only
 * the public HTTP API (docs/api.md) and depends on nothing of the server. See docs/client.md.
 */
export { createRegistryClient, MAX_WATCHED_SERVICES, type DiscoverOptions, type RegistryClient } from './client.js';
export { closeOnSignals, type CloseOnSignalsOptions, type SignalTarget } from './signals.js';
export { clientErrorCatalogue, RegistryClientError, type ClientErrorCode } from './errors.js';
export { numericOptions as clientOptionDefaults, type RegistryClientOptions } from './options.js';
export type { Registration } from './registration.js';
export type { PeerState } from './peers.js';
export type { HttpLayer, HttpRequest, HttpResponse, HttpMethod } from './http.js';
export { createUndiciHttp, type UndiciHttpOptions } from './http.js';
export { pickInstance, type PickDraw } from './pick.js';
export type { ClientLogger, ClientLogFn } from './logger.js';
export type { Discovery, Instance, InstanceRegistration, InstanceStatus, PickStrategy, ServiceUpdate, SubscribeHandlers, Subscription } from './types.js';
export { systemClock, type Clock, type TimerHandle } from '../clock/clock.js';
export { seededRng, type Rng } from '../clock/rng.js';
