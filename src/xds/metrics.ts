import { status } from '@grpc/grpc-js';
import type { Outcome } from '../metrics/adapter-metrics.js';

/**
 * The xDS adapter in the peer's adapter metrics (docs/metrics.md, "Protocols"): each
 * DiscoveryRequest (and each stream admitted or refused) as a request of its RPC, its outcome
 * from the gRPC status it ends with; the streams as the held pool `streams`; responses a push
 * writes as pushes; ACKs and NACKs by resource type (`AdapterMetrics.xds`).
 */

/** The adapter's name in the metrics (the `adapter` label). */
export const XDS_ADAPTER = 'xds';
/** The held pool of ADS streams (the `pool` label). */
export const STREAMS_POOL_LABEL = 'streams';
/** The operations: the two ADS RPCs (state of the world, incremental). */
export const XDS_OPERATIONS = ['StreamAggregatedResources', 'DeltaAggregatedResources'] as const;
export type XdsOperation = (typeof XDS_OPERATIONS)[number];

/** The outcome of a request ended with gRPC status `code`. */
export function outcomeOfGrpcStatus(code: status): Outcome {
  switch (code) {
    case status.OK:
      return 'ok';
    case status.INVALID_ARGUMENT:
      return 'bad_input';
    case status.UNAUTHENTICATED:
      return 'unauthenticated';
    case status.PERMISSION_DENIED:
      return 'forbidden';
    case status.RESOURCE_EXHAUSTED:
      return 'limited';
    default:
      return 'error';
  }
}
