/**
 * A V8 heap snapshot (`.heapsnapshot`, as `--heapsnapshot-signal` or `v8.writeHeapSnapshot`
 * write it) read into its flat arrays, with the field offsets the bench readers need
 * (bench/heap-breakdown.ts, bench/heap-totals.ts, bench/heap-retainers.ts). Node indexes are
 * offsets into `nodes` (a multiple of `nodeFields`), as the snapshot's edges name them.
 */
import { readFileSync } from 'node:fs';

interface SnapshotFile {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

export interface HeapEdge {
  type: string;
  /** The property name, or `#index` for an element or a hidden edge. */
  name: string;
  to: number;
}

export class HeapSnapshot {
  readonly nodes: number[];
  readonly edges: number[];
  readonly strings: string[];
  readonly nodeFields: number;
  private readonly edgeFields: number;
  private readonly nodeTypes: string[];
  private readonly edgeTypes: string[];
  private readonly offsets: { type: number; name: number; self: number; edgeCount: number; edgeType: number; edgeName: number; edgeTo: number };
  /** Where each node's edges start in `edges`, by node number (index / nodeFields). */
  private readonly firstEdge: Uint32Array;

  constructor(file: string) {
    const snap = JSON.parse(readFileSync(file, 'utf8')) as SnapshotFile;
    const meta = snap.snapshot.meta;
    this.nodes = snap.nodes;
    this.edges = snap.edges;
    this.strings = snap.strings;
    this.nodeFields = meta.node_fields.length;
    this.edgeFields = meta.edge_fields.length;
    this.nodeTypes = meta.node_types[0];
    this.edgeTypes = meta.edge_types[0];
    const node = (field: string) => meta.node_fields.indexOf(field);
    const edge = (field: string) => meta.edge_fields.indexOf(field);
    this.offsets = {
      type: node('type'),
      name: node('name'),
      self: node('self_size'),
      edgeCount: node('edge_count'),
      edgeType: edge('type'),
      edgeName: edge('name_or_index'),
      edgeTo: edge('to_node'),
    };
    this.firstEdge = new Uint32Array(this.nodes.length / this.nodeFields);
    for (let index = 0, at = 0; index < this.nodes.length; index += this.nodeFields) {
      this.firstEdge[index / this.nodeFields] = at;
      at += this.nodes[index + this.offsets.edgeCount]! * this.edgeFields;
    }
  }

  /** Every node's index, in the snapshot's order. */
  *nodeIndexes(): IterableIterator<number> {
    for (let index = 0; index < this.nodes.length; index += this.nodeFields) yield index;
  }

  typeOf(node: number): string {
    return this.nodeTypes[this.nodes[node + this.offsets.type]!]!;
  }

  nameOf(node: number): string {
    return this.strings[this.nodes[node + this.offsets.name]!]!;
  }

  selfSize(node: number): number {
    return this.nodes[node + this.offsets.self]!;
  }

  edgesOf(node: number): HeapEdge[] {
    const out: HeapEdge[] = [];
    const first = this.firstEdge[node / this.nodeFields]!;
    const { edgeType, edgeName, edgeTo, edgeCount } = this.offsets;
    for (let k = 0; k < this.nodes[node + edgeCount]!; k++) {
      const at = first + k * this.edgeFields;
      const type = this.edgeTypes[this.edges[at + edgeType]!]!;
      const nameOrIndex = this.edges[at + edgeName]!;
      out.push({ type, name: type === 'element' || type === 'hidden' ? `#${nameOrIndex}` : this.strings[nameOrIndex]!, to: this.edges[at + edgeTo]! });
    }
    return out;
  }
}
