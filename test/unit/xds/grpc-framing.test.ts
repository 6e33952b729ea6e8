import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { frameOf, installPreFramedSend, PRE_FRAMED } from '../../../src/xds/grpc-framing.js';

const require = createRequire(import.meta.url);
type SerializeMessage = (this: unknown, value: unknown) => Buffer;
const serializeMessage = () => (require('@grpc/grpc-js/build/src/server-interceptors.js') as { BaseServerInterceptingCall: { prototype: { serializeMessage: SerializeMessage } } }).BaseServerInterceptingCall.prototype.serializeMessage;

describe('one gRPC frame per shared response', () => {
  it('frames a message as gRPC does: flag 0, 4-byte big-endian length, the bytes', () => {
    expect([...frameOf(Buffer.from([7, 8, 9]))]).toEqual([0, 0, 0, 0, 3, 7, 8, 9]);
  });

  it('makes the installed grpc-js send a shared response as its own frame, the same buffer for every stream, and frame any other message itself', () => {
    expect(installPreFramedSend()).toBe(true);
    expect(installPreFramedSend()).toBe(true);
    const frame = frameOf(Buffer.from('shared'));
    const call = { handler: { serialize: (value: { text: string }) => Buffer.from(value.text) } };
    // No copy: the very buffer, whichever call sends it.
    expect(serializeMessage().call(call, { [PRE_FRAMED]: frame })).toBe(frame);
    expect(serializeMessage().call({ handler: call.handler }, { [PRE_FRAMED]: frame })).toBe(frame);
    expect([...serializeMessage().call(call, { text: 'ab' })]).toEqual([0, 0, 0, 0, 2, 97, 98]);
  });
});
