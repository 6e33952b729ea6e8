import { fromJSON } from '@grpc/proto-loader';
import type { PackageDefinition, ServiceDefinition } from '@grpc/proto-loader';
import type { IMapField, INamespace } from 'protobufjs';

/**
 * The Nacos 2.x gRPC protocol, written from what Nacos's `nacos_grpc_service.proto` says (not
 * a copy of it), as a protobufjs JSON descriptor so that no .proto file has to travel with the
 * build:
 *
 *   message Metadata { string type = 3; string clientIp = 8; map<string, string> headers = 7; }
 *   message Payload  { Metadata metadata = 2; google.protobuf.Any body = 3; }
 *   service Request         { rpc request (Payload) returns (Payload); }
 *   service BiRequestStream { rpc requestBiStream (stream Payload) returns (stream Payload); }
 *
 * No package: the services' full names are `Request` and `BiRequestStream`. `type` names the
 * message (`InstanceRequest`, `InstanceResponse`...) and `body.value` holds its JSON.
 * `google.protobuf.Any` is declared here with its two fields, the same bytes on the wire.
 */
const DESCRIPTOR: INamespace = {
  nested: {
    google: { nested: { protobuf: { nested: { Any: { fields: { type_url: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } } } } } },
    Metadata: {
      fields: {
        type: { type: 'string', id: 3 },
        clientIp: { type: 'string', id: 8 },
        headers: { keyType: 'string', type: 'string', id: 7 } as IMapField,
      },
    },
    Payload: { fields: { metadata: { type: 'Metadata', id: 2 }, body: { type: 'google.protobuf.Any', id: 3 } } },
    Request: { methods: { request: { requestType: 'Payload', responseType: 'Payload', comment: '' } } },
    BiRequestStream: { methods: { requestBiStream: { requestType: 'Payload', responseType: 'Payload', requestStream: true, responseStream: true, comment: '' } } },
  },
};

/** A Payload as the service handlers see it (field names as declared). */
export interface Payload {
  metadata?: { type?: string; clientIp?: string; headers?: Record<string, string> } | null;
  body?: { type_url?: string; value?: Buffer } | null;
}

/** The services' definitions, for `Server.addService`. */
export function nacosPackage(): PackageDefinition {
  return fromJSON(DESCRIPTOR, { keepCase: true, defaults: true, longs: String });
}

/** A Payload carrying `body` as the JSON of message `type`. */
export function payloadOf(type: string, body: unknown): Payload {
  return { metadata: { type, clientIp: '', headers: {} }, body: { type_url: '', value: Buffer.from(JSON.stringify(body)) } };
}

/**
 * A Payload already serialized to its protobuf bytes: a push written to many streams is
 * serialized once, and the bi-stream's serializer (`sharedPushDefinition`) passes these bytes
 * on as they are.
 */
export class EncodedPayload {
  constructor(readonly bytes: Buffer) {}
}

/** What the bi-stream writes: a Payload, or one already serialized. */
export type PushMessage = Payload | EncodedPayload;

/** The bi-stream's Payload serializer and deserializer, from the services' definitions. */
export interface PayloadCodec {
  encode(payload: Payload): EncodedPayload;
  decode(bytes: Buffer): Payload;
}

/** The codec of the bi-stream's messages (both ways the same `Payload`). */
export function payloadCodecOf(definitions: PackageDefinition): PayloadCodec {
  const method = (definitions.BiRequestStream as ServiceDefinition).requestBiStream!;
  return {
    encode: (payload) => new EncodedPayload(method.responseSerialize(payload)),
    decode: (bytes) => method.requestDeserialize(bytes) as Payload,
  };
}

/**
 * The bi-stream's definition with a serializer that writes an EncodedPayload's bytes as they
 * are (and serializes any other Payload as before): what the gRPC server is given.
 */
export function sharedPushDefinition(definitions: PackageDefinition): ServiceDefinition {
  const service = definitions.BiRequestStream as ServiceDefinition;
  const method = service.requestBiStream!;
  const serialize = method.responseSerialize;
  return { requestBiStream: { ...method, responseSerialize: (value: PushMessage) => (value instanceof EncodedPayload ? value.bytes : serialize(value)) } };
}

/** A Payload whose JSON is already encoded (a push shared by many streams). */
export function payloadOfJson(type: string, json: Buffer): Payload {
  return { metadata: { type, clientIp: '', headers: {} }, body: { type_url: '', value: json } };
}

/** Largest message body read, in bytes: gRPC's own limit is 4 MB; a Nacos request is far smaller. */
export const BODY_MAX_BYTES = 1_048_576;

/** The message type and parsed JSON body of a payload; null when it is not a JSON object. */
export function messageOf(payload: Payload): { type: string; body: Record<string, unknown>; headers: Record<string, string> } | null {
  const type = payload.metadata?.type ?? '';
  const value = payload.body?.value;
  if (type === '' || !value || value.length > BODY_MAX_BYTES) return null;
  let body: unknown;
  try {
    body = JSON.parse(value.toString('utf8'));
  } catch {
    return null;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  return { type, body: body as Record<string, unknown>, headers: payload.metadata?.headers ?? {} };
}
