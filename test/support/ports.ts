import { freePort } from './fault-proxy.js';
import { PeerStartError } from './process.js';

/**
 * How many times a start on ports picked beforehand is tried. A port nobody listened on a
 * moment ago can be taken before the start binds it (any outgoing connection on the machine
 * may get it as its local port); a fresh pick fixes that, and five takes in a row mean
 * something else is wrong.
 */
export const PORT_ATTEMPTS = 5;

/** A program other than a peer (HAProxy, Prometheus) could not bind a port it was given: it was taken. */
export class PortTakenError extends Error {
  override name = 'PortTakenError';
}

/** Whether a start failed only because a port was taken: a peer's EADDRINUSE, or a PortTakenError. */
export function portTaken(error: unknown): boolean {
  return error instanceof PortTakenError || (error instanceof PeerStartError && error.addressInUse);
}

/** `count` different ports nobody listens on right now. */
export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  return ports;
}

/**
 * Runs `attempt` again when it fails because a port was taken (`portTaken`), up to
 * PORT_ATTEMPTS times; any other failure is thrown at once. The attempt cleans up after
 * itself when it fails (stops what it started).
 */
export async function retryWhenPortTaken<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!portTaken(error)) throw error;
      if (tries >= PORT_ATTEMPTS) throw new Error(`a port was taken on each of ${tries} tries; last: ${(error as Error).message}`, { cause: error });
    }
  }
}

/**
 * Starts something that must know its ports before it starts (a cluster file, a Consul port,
 * a HAProxy or Prometheus config) on `count` free ports, and again on fresh ones when one was
 * taken in between. What can listen on port 0 and report its address should do that instead.
 */
export function onFreshPorts<T>(count: number, start: (ports: number[]) => Promise<T>): Promise<T> {
  return retryWhenPortTaken(async () => start(await freePorts(count)));
}
