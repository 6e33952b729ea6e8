import { waitFor, type PeerProcess } from './process.js';

/** The Nacos ports a peer process logged when its listener came up (`--nacos-port 0` picks free ones). */
export async function nacosPortsOf(peer: PeerProcess): Promise<{ port: number; grpcPort: number | null }> {
  const line = await waitFor(() => peer.logs.find((entry) => entry.msg === 'Nacos API listening'), 60_000, 'the Nacos listener');
  return { port: line.port as number, grpcPort: (line.grpcPort as number | null | undefined) ?? null };
}

/** A logger for the npm nacos client that keeps its lines for a failing test's message instead of printing them. */
export function quietNacosLogger(): { lines: string[]; info: (...args: unknown[]) => void; warn: (...args: unknown[]) => void; error: (...args: unknown[]) => void; debug: () => void } {
  const lines: string[] = [];
  const keep = (...args: unknown[]) => {
    lines.push(args.map(String).join(' '));
    if (lines.length > 200) lines.shift();
  };
  return { lines, info: () => {}, warn: keep, error: keep, debug: () => {} };
}
