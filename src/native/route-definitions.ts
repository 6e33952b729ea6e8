import {
  Cancelled,
  Instance,
  InstanceParams,
  InstanceWithInterval,
  NamespaceQuery,
  RegisterBody,
  ServiceList,
  ServiceListing,
  ServiceParams,
  ServiceQuery,
  StatusBody,
  WatchQuery,
} from './schemas.js';
import { responses, text } from '../http/openapi/schemas.js';
import type { RouteGroup } from '../http/route-definition.js';

/** The native client API's routes (docs/api.md): client tokens, closed until the start-up sync is done. */
export const CLIENT_ROUTES = {
  register: {
    method: 'POST',
    url: '/v1/instances',
    access: 'write',
    gatedUntilReady: true,
    validateBody: true,
    doc: {
      summary: 'Register an instance, or register it again',
      description: 'Answers 201 for a new instance, 200 for a re-registration; the answer says how often to heartbeat.',
      tags: ['instances'],
      querystring: NamespaceQuery,
      body: RegisterBody,
      response: responses({ 200: InstanceWithInterval, 201: InstanceWithInterval }, [400, 413, 415]),
    },
  },
  heartbeat: {
    method: 'PUT',
    url: '/v1/services/:service/instances/:id/heartbeat',
    access: 'write',
    gatedUntilReady: true,
    doc: {
      summary: 'Renew the lease of an instance on this peer',
      description: 'Never replicated. 404 means this peer does not know the instance: register again.',
      tags: ['instances'],
      params: InstanceParams,
      querystring: NamespaceQuery,
      response: responses({ 200: InstanceWithInterval }, [400, 404]),
    },
  },
  status: {
    method: 'PUT',
    url: '/v1/services/:service/instances/:id/status',
    access: 'write',
    gatedUntilReady: true,
    validateBody: true,
    doc: {
      summary: "Change an instance's status",
      tags: ['instances'],
      params: InstanceParams,
      querystring: NamespaceQuery,
      body: StatusBody,
      response: responses({ 200: Instance }, [400, 404, 415]),
    },
  },
  cancel: {
    method: 'DELETE',
    url: '/v1/services/:service/instances/:id',
    access: 'write',
    gatedUntilReady: true,
    doc: {
      summary: 'Cancel an instance',
      tags: ['instances'],
      params: InstanceParams,
      querystring: NamespaceQuery,
      response: responses({ 200: Cancelled }, [400, 404]),
    },
  },
  instance: {
    method: 'GET',
    url: '/v1/services/:service/instances/:id',
    access: 'read',
    gatedUntilReady: true,
    doc: {
      summary: 'One instance, whatever its status',
      tags: ['instances'],
      params: InstanceParams,
      querystring: NamespaceQuery,
      response: responses({ 200: Instance }, [400, 404]),
    },
  },
  service: {
    method: 'GET',
    url: '/v1/services/:service',
    access: 'read',
    gatedUntilReady: true,
    doc: {
      summary: "A service's instances (long poll with ?index=)",
      description: 'By default the UP instances with a live lease; `?status=all` for every status. The `X-Registry-Index` header carries the revision.',
      tags: ['services'],
      params: ServiceParams,
      querystring: ServiceQuery,
      response: responses({ 200: ServiceListing }, [400, 429]),
    },
  },
  services: {
    method: 'GET',
    url: '/v1/services',
    access: 'read',
    gatedUntilReady: true,
    doc: {
      summary: 'Every service of a namespace with its instance counts',
      tags: ['services'],
      querystring: NamespaceQuery,
      response: responses({ 200: ServiceList }, [400]),
    },
  },
} satisfies RouteGroup;

/** The native watch stream (docs/api.md): client tokens, closed until the start-up sync is done. */
export const WATCH_ROUTES = {
  watch: {
    method: 'GET',
    url: '/v1/watch',
    access: 'read',
    gatedUntilReady: true,
    doc: {
      summary: 'Server-sent events: a snapshot per service, then deltas',
      description: 'Events `snapshot`, `delta` (added, changed, removed) and `dropped`; a keep-alive comment on an idle stream.',
      tags: ['services'],
      querystring: WatchQuery,
      response: responses({ 200: text('text/event-stream') }, [400, 429]),
    },
  },
} satisfies RouteGroup;
