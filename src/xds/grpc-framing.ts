import { createRequire } from 'node:module';

/**
 * One gRPC frame per shared response, written as is to every stream it goes to.
 *
 * grpc-js frames each message it sends: `serializeMessage` allocates a buffer of the message's
 * length plus 5 and copies the serialized bytes into it, once per stream. A push of one
 * 1,000-instance ClusterLoadAssignment (about 40 KB) to 1,000 streams allocated and copied
 * 40 MB per change, most of the peer's CPU for the push (malloc, copy, page faults and the GC
 * they trigger). A shared response (responses.ts) instead carries its frame, built once
 * (written as a frame from the start, wire.ts; `frameOf` frames bytes made otherwise), under
 * PRE_FRAMED; `installPreFramedSend` makes grpc-js's server calls send that frame itself.
 * Every other message is framed by grpc-js as before.
 *
 * This replaces one method of a grpc-js class that the package does not export by name in its
 * typings (`BaseServerInterceptingCall.serializeMessage`, grpc-js 1.10 to 1.14 at least).
 * When it is not there (another grpc-js), nothing is replaced and responses are framed by
 * grpc-js, correct and slower; a unit test checks that the installed grpc-js takes the frame.
 */

/** Where a response object carries its whole gRPC frame (flag, length, message). */
export const PRE_FRAMED = Symbol('xds.preFramed');

/** The gRPC length-prefixed message of `payload`: flag 0 (not compressed), 4-byte big-endian length, the bytes. */
export function frameOf(payload: Buffer): Buffer {
  const frame = Buffer.allocUnsafe(payload.length + 5);
  frame.writeUInt8(0, 0);
  frame.writeUInt32BE(payload.length, 1);
  payload.copy(frame, 5);
  return frame;
}

interface FramingCall {
  serializeMessage(value: unknown): Buffer;
}

/** Set once per process (grpc-js's class is the process's): whether the frames are sent as they are. */
let installed: boolean | null = null;

/** Makes grpc-js's server calls send a response's PRE_FRAMED frame as is; answers whether it could. Idempotent. */
export function installPreFramedSend(): boolean {
  if (installed !== null) return installed;
  try {
    const require = createRequire(import.meta.url);
    const interceptors = require('@grpc/grpc-js/build/src/server-interceptors.js') as { BaseServerInterceptingCall?: { prototype: FramingCall } };
    const prototype = interceptors.BaseServerInterceptingCall?.prototype;
    if (typeof prototype?.serializeMessage !== 'function') return (installed = false);
    const frameMessage = prototype.serializeMessage;
    prototype.serializeMessage = function (this: FramingCall, value: unknown): Buffer {
      const frame = (value as { [PRE_FRAMED]?: unknown } | null)?.[PRE_FRAMED];
      return Buffer.isBuffer(frame) ? frame : frameMessage.call(this, value);
    };
    return (installed = true);
  } catch {
    return (installed = false);
  }
}
