import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
// proto-loader's own loader (the one @grpc/grpc-js-xds uses for its resources): its public
// `loadSync` gives serializers for service methods only, and the resources an ADS response
// carries are `Any` values whose bytes must be encoded from their own message types.
import { addCommonProtos, loadProtosWithOptionsSync } from '@grpc/proto-loader/build/src/util.js';
import type { Root, Type } from 'protobufjs';
import type { DiscoveryResponse } from './stream.js';
import { DiscoveryResponseWriter, encodeDiscoveryResponse } from './wire.js';

/** The type URLs of the v3 resources the registry serves (what a DiscoveryRequest names). */
export const TYPE_URLS = {
  listener: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  routeConfiguration: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  cluster: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  endpoints: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
} as const;

export const HTTP_CONNECTION_MANAGER_TYPE_URL = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
export const ROUTER_TYPE_URL = 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router';

/** The proto files whose messages the registry encodes (their imports come along). */
const RESOURCE_FILES = [
  'envoy/config/listener/v3/listener.proto',
  'envoy/config/route/v3/route.proto',
  'envoy/config/cluster/v3/cluster.proto',
  'envoy/config/endpoint/v3/endpoint.proto',
  'envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto',
  'envoy/extensions/filters/http/router/v3/router.proto',
];
const ADS_FILE = 'envoy/service/discovery/v3/ads.proto';

/**
 * Where a DiscoveryResponse may carry its own encoding: the ADS service's serializer sends
 * those bytes as they are instead of encoding the object (src/xds/responses.ts, which shares
 * one encoding between every stream sent the same response in a push).
 */
export const PRE_ENCODED = Symbol('xds.preEncoded');

/** A `google.protobuf.Any`, as the ADS service's serializer takes it. */
export interface AnyMessage {
  type_url: string;
  value: Buffer;
}

/** How decoded messages look (what @grpc/grpc-js-xds itself uses): snake_case, enums and 64-bit numbers as strings. */
export const DECODE_OPTIONS = { longs: String, enums: String, defaults: true, oneofs: true } as const;

/**
 * The include folders of the envoy, xds, googleapis and validate protos shipped in
 * @grpc/grpc-js-xds's `deps` (a production dependency), found where the package is installed.
 */
export function protoIncludeDirs(): string[] {
  const require = createRequire(import.meta.url);
  const deps = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
  return ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((folder) => join(deps, folder));
}

/**
 * The xDS protos, loaded once per listener (about half a second and a few MB, so only when
 * xDS is on): the ADS service definition for the gRPC server and the resource message types.
 */
export class XdsProtos {
  /** The ADS service; its state-of-the-world responses may come encoded already (PRE_ENCODED). */
  readonly ads: ServiceDefinition;
  /**
   * The gRPC frame of a DiscoveryResponse (grpc-framing.ts), written by hand (wire.ts): the same
   * bytes as the ADS service's serializer, which encodes any other response.
   */
  readonly frameResponse: (response: DiscoveryResponse) => Buffer;
  /** The same frame written in steps (wire.ts DiscoveryResponseWriter), for a large response written over several turns. */
  readonly responseWriter: (response: DiscoveryResponse) => DiscoveryResponseWriter;
  private readonly root: Root;
  private readonly types = new Map<string, Type>();

  constructor() {
    const includeDirs = protoIncludeDirs();
    addCommonProtos();
    this.root = loadProtosWithOptionsSync(RESOURCE_FILES, { keepCase: true, includeDirs });
    const definition = loadSync(ADS_FILE, { keepCase: true, longs: String, enums: String, defaults: false, oneofs: true, includeDirs });
    const ads = definition['envoy.service.discovery.v3.AggregatedDiscoveryService'] as ServiceDefinition;
    const sotw = ads.StreamAggregatedResources!;
    const encode = sotw.responseSerialize;
    this.frameResponse = (response) => encodeDiscoveryResponse(response, true);
    this.responseWriter = (response) => new DiscoveryResponseWriter(response, true);
    const serialize = (response: { [PRE_ENCODED]?: Buffer }) => response[PRE_ENCODED] ?? encode(response);
    this.ads = { ...ads, StreamAggregatedResources: { ...sotw, responseSerialize: serialize } };
  }

  /** The message type of a full name (`envoy.config.listener.v3.Listener`) or type URL. */
  type(name: string): Type {
    const fullName = name.slice(name.lastIndexOf('/') + 1);
    let type = this.types.get(fullName);
    if (!type) {
      type = this.root.lookupType(fullName);
      this.types.set(fullName, type);
    }
    return type;
  }

  /**
   * Encodes a plain object (snake_case fields, enums by name) as an Any of the type URL.
   * protobufjs drops fields the type does not have: the unit tests decode what is built.
   */
  pack(typeUrl: string, message: Record<string, unknown>): AnyMessage {
    const type = this.type(typeUrl);
    return { type_url: typeUrl, value: Buffer.from(type.encode(type.fromObject(message)).finish()) };
  }

  /** Decodes an Any's value back into a plain object (tests, and NACK diagnostics). */
  unpack(any: AnyMessage): Record<string, unknown> {
    const type = this.type(any.type_url);
    return type.toObject(type.decode(any.value), DECODE_OPTIONS);
  }
}
