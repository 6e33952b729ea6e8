import type { Registry } from 'prom-client';
import type { BootstrapResult } from '../replication/bootstrap.js';
import type { PeerTransport } from '../transport/transport.js';
import { scrapedSeries } from './adapter-series.js';

/** What the peer-traffic and start-up series read: the transport's byte counts, and how the start-up sync went. */
export interface PeerSeriesSources {
  readonly transport: Pick<PeerTransport, 'peerBytes'>;
  readonly bootstrapResult: BootstrapResult | undefined;
  readonly bootstrapDurationMs: number | undefined;
}

/**
 * Bytes exchanged with each other peer (`registry_peer_bytes_total`), and the start-up sync: how
 * long this peer took to catch up and how many records it pulled (absent until it is done).
 */
export function registerPeerSeries(registry: Registry, sources: PeerSeriesSources): void {
  const bytes = 'registry_peer_bytes_total';
  scrapedSeries(
    registry,
    bytes,
    'Bytes on the wire between this peer and each other one, by peer-API call and direction (sent, received), as caller and as responder.',
    'counter',
    () => [...(sources.transport.peerBytes?.entries() ?? [])].map(({ peer, call, direction, bytes: value }) => ({ metricName: bytes, labels: { peer, call, direction }, value })),
  );
  const duration = 'registry_startup_sync_seconds';
  scrapedSeries(registry, duration, 'How long the start-up sync took: from asking a peer for its snapshot to being caught up (ready).', 'gauge', () =>
    sources.bootstrapDurationMs === undefined ? [] : [{ metricName: duration, labels: {}, value: sources.bootstrapDurationMs / 1000 }],
  );
  const records = 'registry_startup_sync_records';
  scrapedSeries(registry, records, 'Records pulled from another peer by the start-up sync (0 when the peer started alone).', 'gauge', () =>
    sources.bootstrapResult === undefined ? [] : [{ metricName: records, labels: {}, value: sources.bootstrapResult.records }],
  );
}
