import type { ListenerDeclaration } from '../../../../src/adapters/declaration.js';
import { readInteger, readListener, type ListenerConfig } from '../../../../src/config/listener-settings.js';
import type { ListenerDeps } from '../../../../src/protocol-listeners.js';

/**
 * A fake protocol's declaration, as src/<protocol>/declaration.ts declares a real one, for
 * test/unit/adapters/declarations.test.ts: its section (one setting of its own), its flag, its
 * reference rows, its label and transport, its port, how its records are recognised, and a
 * starter whose listener records what it was started with.
 */

export interface PigeonConfig extends ListenerConfig {
  /** Coos per answer. */
  coos: number;
}

/** What the fake listener saw: each start's port, and how often its code was loaded. */
export const pigeon = { starts: [] as Array<{ port: number | null }>, loads: 0 };

export const pigeonDeclaration: ListenerDeclaration<'pigeon', PigeonConfig> = {
  name: 'pigeon',
  label: 'Carrier pigeon',
  transport: 'IPoAC',
  credentials: ['bearer'],
  settings: { section: 'pigeon', flag: '--pigeon-port', env: 'REGISTRY_PIGEON_PORT', help: 'serve carrier pigeons on this port; off by default' },
  docs: 'docs/pigeon.md',
  readSettings(doc, port) {
    const { section, config } = readListener('pigeon', doc, port, ['coos']);
    return { ...config, coos: readInteger('pigeon.coos', section.coos, 3, 1, 10) };
  },
  reference: {
    intro: 'carrier pigeons',
    rows: [
      { field: 'port', type: 'port', default: 'off', doc: 'serve carrier pigeons on this port. Also `--pigeon-port`.' },
      { field: 'coos', type: 'count', default: '3', doc: '1 to 10: coos per answer' },
    ],
  },
  listens: (settings) => (settings.port === null ? [] : [{ what: 'the pigeon loft', port: settings.port }]),
  registered: (data) => data.metadata['pigeon.ring'] !== undefined,
  metrics: [],
  async starter() {
    pigeon.loads++;
    return async ({ config }: ListenerDeps) => {
      const settings = (config.protocols as unknown as Record<string, PigeonConfig>).pigeon!;
      pigeon.starts.push({ port: settings.port });
      return { name: 'pigeon', close: async () => {} };
    };
  },
};

