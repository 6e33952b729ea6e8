import type { RegistryNode } from '../node.js';
import { RegistryReads } from './reads.js';
import { RegistryWrites } from './writes.js';

/**
 * What a protocol's routes get of the registry: its writes, each behind the durability barrier,
 * and its reads. Routes take this (and the few settings and collaborators they need), never the
 * whole node.
 */
export interface Application {
  writes: RegistryWrites;
  reads: RegistryReads;
}

/** What the application layer is built from: the registry, the durability barrier, the read layer and the watches. */
export type ApplicationSource = Pick<RegistryNode, 'registry' | 'durability' | 'views' | 'watch' | 'regionOfZone'>;

/** The application layer of one peer. */
export function applicationOf(node: ApplicationSource): Application {
  return {
    writes: new RegistryWrites({ registry: node.registry, durability: node.durability }),
    reads: new RegistryReads({ registry: node.registry, views: node.views, watch: node.watch, regionOfZone: node.regionOfZone }),
  };
}
