import { describe, expect, it } from 'vitest';
import type { ClusterStatus } from '../../../src/cluster-status.js';
import type { ProtocolsView as ServerProtocols } from '../../../src/metrics/protocols-view.js';
import type { ProtocolsView } from '../../../src/ui/protocols.js';
import type { InstanceView } from '../../../src/registry/view.js';
import type { DeltaEvent as ServerDelta, SnapshotEvent as ServerSnapshot } from '../../../src/watch/hub.js';
import type { DeltaEvent, Instance, SnapshotEvent } from '../../../src/ui/model.js';
import type { ClusterView } from '../../../src/ui/words.js';

/**
 * The dashboard is compiled for the browser on its own (tsconfig.ui.json) and cannot import
 * the server's modules, so src/ui declares the shapes it reads. These functions compile only
 * while the server's types still fit those declarations: `npm test` type-checks them first,
 * so a change to the API that would break the dashboard fails here.
 */
const instanceFits = (view: InstanceView): Instance => view;
const snapshotFits = (event: Omit<ServerSnapshot, 'type'>): SnapshotEvent => event;
const deltaFits = (event: Omit<ServerDelta, 'type'>): DeltaEvent => event;
const clusterFits = (status: ClusterStatus): ClusterView => status;
const protocolsFit = (view: ServerProtocols): ProtocolsView => view;

describe("the dashboard's view of the API", () => {
  it('is kept in step with the server types by the type check', () => {
    expect([instanceFits, snapshotFits, deltaFits, clusterFits, protocolsFit].every((fits) => typeof fits === 'function')).toBe(true);
  });
});
