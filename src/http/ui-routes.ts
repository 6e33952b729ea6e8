import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { RegistryError } from '../errors.js';
import type { RegistryReads } from '../app/reads.js';
import { protocolsView, type ProtocolsSources } from '../metrics/protocols-view.js';
import { RegistrationsViews } from '../metrics/registrations-view.js';
import { parseName, parseNamespace } from '../registry/validate.js';
import { responses, text } from './openapi/schemas.js';
import { serve, type RouteGroup } from './route-definition.js';
import { sendChunks } from './send-chunks.js';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The page may load and call only this peer: no CDN, no inline script, no framing. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

interface Asset {
  body: Buffer;
  contentType: string;
  etag: string;
}

/**
 * The dashboard's page and assets: static files with no registry data (the page then calls the
 * API with the token the user gives it). A browser cannot send a bearer token with a page
 * load, so they stay public.
 */
export const UI_ROUTES = {
  page: {
    method: 'GET',
    url: '/',
    access: 'public',
    gatedUntilReady: false,
    doc: { summary: 'The dashboard (HTML)', tags: ['dashboard'], response: responses({ 200: text('text/html') }, [503]) },
  },
  asset: {
    method: 'GET',
    url: '/ui/:file',
    access: 'public',
    gatedUntilReady: false,
    doc: {
      summary: "The dashboard's assets (scripts, styles), served by the peer",
      tags: ['dashboard'],
      params: Type.Object({ file: Type.String() }),
      response: responses({ 200: text('JavaScript, CSS or an image') }, [404, 503]),
    },
  },
  // What the page shows beyond the client API: the operator's view of the protocols, and which
  // protocol registered each instance of a namespace (docs/dashboard.md).
  protocols: {
    method: 'GET',
    url: '/v1/dashboard/protocols',
    access: 'admin',
    gatedUntilReady: false,
    doc: {
      summary: "The dashboard's Protocols panel: listeners, and each protocol's requests, refusals and clients held",
      tags: ['dashboard'],
      response: responses({ 200: Type.Object({}, { description: '`{nowMs, listeners: [{protocol, on, address, transport}], protocols: [{protocol, requests, refused, held, byOutcome}]}`' }) }, [401, 403]),
    },
  },
  registrations: {
    method: 'GET',
    url: '/v1/dashboard/registrations',
    access: 'read',
    gatedUntilReady: true,
    doc: {
      summary: 'Which protocol registered the instances of a namespace: per service, and per instance of one service',
      tags: ['dashboard'],
      querystring: Type.Object({ namespace: Type.Optional(Type.String()), service: Type.Optional(Type.String()) }),
      response: responses(
        { 200: Type.Object({}, { description: '`{namespace, services: [{service, protocols: {eureka: 2, native: 1}}], instances?: [{instanceId, protocol}]}`' }) },
        [400, 401, 403, 503],
      ),
    },
  },
} satisfies RouteGroup;

/**
 * Where the built dashboard is: `dist/ui` beside the compiled server (`dist/http/../ui`), or,
 * when the server runs from its TypeScript sources (the tests), `dist/ui` of the project.
 */
function findAssetsDir(): URL | undefined {
  const candidates = [new URL('../ui/', import.meta.url), new URL('../../dist/ui/', import.meta.url)];
  return candidates.find((dir) => existsSync(new URL('app.js', dir)) && existsSync(new URL('index.html', dir)));
}

/** Reads every asset once, at start: the dashboard is a handful of small files. */
export function loadAssets(dir: URL | undefined = findAssetsDir()): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!dir) return assets;
  for (const name of readdirSync(dir)) {
    const extension = name.slice(name.lastIndexOf('.'));
    const contentType = CONTENT_TYPES[extension];
    if (!contentType) continue;
    const body = readFileSync(new URL(name, dir));
    assets.set(name, { body, contentType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return assets;
}

/**
 * The web dashboard (docs/dashboard.md): `GET /` and its assets under `/ui/`, built by
 * `npm run build` into dist/ui and served by the peer itself, so it works offline. Its own
 * plugin scope, so the security layer can guard it. Assets are revalidated (ETag) on each load.
 */
export async function uiRoutes(
  app: FastifyInstance,
  options: { assets?: Map<string, Asset>; node?: ProtocolsSources & { readonly ports: { readonly reads: Pick<RegistryReads, 'views' | 'leaseView'> } } } = {},
): Promise<void> {
  const assets = options.assets ?? loadAssets();

  const send = (request: FastifyRequest, reply: FastifyReply, name: string) => {
    if (assets.size === 0) {
      throw new RegistryError('REG_ERR_UI_UNAVAILABLE', 'the dashboard is not built next to this server (run npm run build)');
    }
    const asset = assets.get(name);
    if (!asset) {
      throw new RegistryError('REG_ERR_ROUTE_NOT_FOUND', `no dashboard asset ${name}`);
    }
    reply
      .header('content-type', asset.contentType)
      .header('cache-control', 'no-cache')
      .header('etag', asset.etag)
      .header('x-content-type-options', 'nosniff');
    if (asset.contentType.startsWith('text/html')) reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
    return reply.send(asset.body);
  };

  serve(app, UI_ROUTES.page, async (request, reply) => send(request, reply, 'index.html'));
  serve(app, UI_ROUTES.asset, async (request, reply) => send(request, reply, (request.params as { file: string }).file));

  const { node } = options;
  if (!node) return;
  serve(app, UI_ROUTES.protocols, async () => protocolsView(node));
  // Built once per change of a namespace and shared by every dashboard polling it (registrations-view.ts).
  const registrations = new RegistrationsViews(node.ports.reads);
  serve(app, UI_ROUTES.registrations, async (request, reply) => {
    const query = request.query as { namespace?: unknown; service?: unknown };
    const service = query.service === undefined ? null : parseName('service', query.service);
    return sendChunks(reply, await registrations.body(parseNamespace(query.namespace), service), 'application/json; charset=utf-8');
  });
}
