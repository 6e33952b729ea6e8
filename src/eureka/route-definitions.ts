import { Type } from 'typebox';
import { EurekaInstanceBody } from './instance-schema.js';
import { responses, text } from '../http/openapi/schemas.js';
import { underPrefix, type RouteDefinition, type RouteGroup } from '../http/route-definition.js';

/** Netflix's layout (eureka-js-client's default) and Spring Cloud's. */
export const EUREKA_PREFIXES = ['/eureka/v2', '/eureka'] as const;

const EUREKA = 'Eureka';
const AppParams = Type.Object({ app: Type.String({ description: 'App name, any case (Eureka upper-cases it).' }) });
const AppInstanceParams = Type.Object({ app: AppParams.properties.app, id: Type.String({ description: 'Instance id.' }) });
const eurekaDocument = (what: string) => text(`${what}: JSON when \`Accept\` mentions json, XML otherwise; gzip when asked.`);
const emptyNotFound = text('Empty: Eureka clients expect a bare 404.');

/** A Eureka read: a token with the read scope on the Eureka namespace; closed until the start-up sync is done. */
const read = { access: 'eureka-read', gatedUntilReady: true } as const;
/** A Eureka write: the write scope on the Eureka namespace; closed until the start-up sync is done. */
const write = { access: 'eureka-write', gatedUntilReady: true } as const;

/**
 * The Eureka API's routes (docs/eureka.md), relative to each of `EUREKA_PREFIXES`: routes.ts
 * registers them under both, `eurekaRouteDefinitions()` lists them as registered.
 */
export const EUREKA_ROUTES = {
  apps: { method: 'GET', url: '/apps', ...read, doc: { summary: 'Every app', tags: [EUREKA], response: { 200: eurekaDocument('applications') } } },
  appsSlash: {
    method: 'GET',
    url: '/apps/',
    ...read,
    doc: { summary: 'Every app (eureka-js-client asks with the slash)', tags: [EUREKA], response: { 200: eurekaDocument('applications') } },
  },
  delta: {
    method: 'GET',
    url: '/apps/delta',
    ...read,
    doc: {
      summary: 'What changed in the last `cluster.eurekaDeltaWindowMs`',
      tags: [EUREKA],
      response: { 200: eurekaDocument("applications (delta), with the whole registry's hash code") },
    },
  },
  app: {
    method: 'GET',
    url: '/apps/:app',
    ...read,
    doc: { summary: 'One app', tags: [EUREKA], params: AppParams, response: { 200: eurekaDocument('application'), 404: emptyNotFound } },
  },
  register: {
    method: 'POST',
    url: '/apps/:app',
    ...write,
    validateBody: true,
    doc: {
      summary: 'Register an instance (answers 204)',
      tags: [EUREKA],
      params: AppParams,
      body: EurekaInstanceBody,
      response: responses({ 204: Type.Null({ description: 'Registered.' }) }, [400, 413, 415]),
    },
  },
  instance: {
    method: 'GET',
    url: '/apps/:app/:id',
    ...read,
    doc: { summary: 'One instance of an app', tags: [EUREKA], params: AppInstanceParams, response: { 200: eurekaDocument('instance'), 404: emptyNotFound } },
  },
  heartbeat: {
    method: 'PUT',
    url: '/apps/:app/:id',
    ...write,
    doc: {
      summary: 'Heartbeat (404: register again)',
      tags: [EUREKA],
      params: AppInstanceParams,
      querystring: Type.Object({
        status: Type.Optional(Type.String()),
        lastDirtyTimestamp: Type.Optional(Type.String()),
        overriddenstatus: Type.Optional(Type.String()),
      }),
      response: { 200: Type.Null({ description: 'Renewed.' }), 404: emptyNotFound },
    },
  },
  cancel: {
    method: 'DELETE',
    url: '/apps/:app/:id',
    ...write,
    doc: { summary: 'Cancel an instance', tags: [EUREKA], params: AppInstanceParams, response: { 200: Type.Null({ description: 'Cancelled.' }), 404: emptyNotFound } },
  },
  overrideStatus: {
    method: 'PUT',
    url: '/apps/:app/:id/status',
    ...write,
    doc: {
      summary: 'Override the status',
      tags: [EUREKA],
      params: AppInstanceParams,
      querystring: Type.Object({ value: Type.String({ description: 'UP, DOWN, STARTING or OUT_OF_SERVICE.' }), lastDirtyTimestamp: Type.Optional(Type.String()) }),
      response: responses({ 200: Type.Null({ description: 'Done.' }), 404: emptyNotFound }, [400]),
    },
  },
  removeOverride: {
    method: 'DELETE',
    url: '/apps/:app/:id/status',
    ...write,
    doc: {
      summary: 'Remove the status override',
      tags: [EUREKA],
      params: AppInstanceParams,
      querystring: Type.Object({ value: Type.Optional(Type.String()) }),
      response: { 200: Type.Null({ description: 'Done.' }), 404: emptyNotFound },
    },
  },
  metadata: {
    method: 'PUT',
    url: '/apps/:app/:id/metadata',
    ...write,
    doc: {
      summary: 'Add or replace metadata (`?key=value&...`)',
      tags: [EUREKA],
      params: AppInstanceParams,
      response: responses({ 200: Type.Null({ description: 'Done.' }), 404: emptyNotFound }, [400]),
    },
  },
  instanceById: {
    method: 'GET',
    url: '/instances/:id',
    ...read,
    doc: { summary: 'One instance, any app', tags: [EUREKA], params: Type.Object({ id: Type.String() }), response: { 200: eurekaDocument('instance'), 404: emptyNotFound } },
  },
  vip: {
    method: 'GET',
    url: '/vips/:vip',
    ...read,
    doc: { summary: 'Instances on a VIP address', tags: [EUREKA], params: Type.Object({ vip: Type.String() }), response: { 200: eurekaDocument('applications') } },
  },
  secureVip: {
    method: 'GET',
    url: '/svips/:svip',
    ...read,
    doc: {
      summary: 'Instances on a secure VIP address',
      tags: [EUREKA],
      params: Type.Object({ svip: Type.String() }),
      response: { 200: eurekaDocument('applications') },
    },
  },
} satisfies RouteGroup;

/** Every Eureka route as registered, under each prefix, tagged by its prefix in the API description. */
export function eurekaRouteDefinitions(prefixes: readonly string[] = EUREKA_PREFIXES): RouteDefinition[] {
  return prefixes.flatMap((prefix) => underPrefix(prefix, EUREKA_ROUTES, [`${EUREKA} ${prefix}`]));
}
