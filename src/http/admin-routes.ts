import type { FastifyInstance } from 'fastify';
import { invalid } from '../errors.js';
import type { GuardMode } from '../lease/self-preservation.js';
import type { RegistryNode } from '../node.js';

const MODES: readonly GuardMode[] = ['auto', 'off'];

function parseMode(field: string, value: unknown): GuardMode | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !MODES.includes(value as GuardMode)) throw invalid(field, 'must be "auto" or "off"');
  return value as GuardMode;
}

/**
 * Operator routes under `/v1/admin` (their own plugin scope, for the admin scope of the
 * security layer). Settings made here are this peer's only and last until it restarts.
 */
export async function adminRoutes(app: FastifyInstance, options: { node: RegistryNode }): Promise<void> {
  const { node } = options;

  app.get('/v1/admin/eviction-guards', async () => node.safety.status(node.components.clock.nowMs()));

  app.put('/v1/admin/eviction-guards', async (request) => {
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw invalid('body', 'must be a JSON object {"selfPreservation": "auto"|"off", "partitionGuard": "auto"|"off"}');
    }
    const fields = body as Record<string, unknown>;
    for (const field of Object.keys(fields)) {
      if (field !== 'selfPreservation' && field !== 'partitionGuard') throw invalid(field, 'is not a known field');
    }
    const selfPreservation = parseMode('selfPreservation', fields.selfPreservation);
    const partitionGuard = parseMode('partitionGuard', fields.partitionGuard);
    if (!selfPreservation && !partitionGuard) throw invalid('body', 'must set selfPreservation or partitionGuard');
    node.safety.setModes({ ...(selfPreservation ? { selfPreservation } : {}), ...(partitionGuard ? { partitionGuard } : {}) });
    // Decide again at once, so the answer (and the next read) reflects the switch.
    node.reaper.runOnce();
    return node.safety.status(node.components.clock.nowMs());
  });
}
