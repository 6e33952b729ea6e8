// The seams of the layout, enforced (docs/architecture.md, "Layers"): the core folders read
// time, chance and the environment only through what is injected, import no framework and no
// I/O module, and import nothing from a layer above them. `npm run lint` (part of `npm test`).
import tseslint from 'typescript-eslint';

/** Core folders, bottom up; each may import only the folders listed before it (and itself). */
const layers = [
  ['clock', 'errors.ts', 'log', 'schema'],
  ['registry'],
  ['lease'],
  ['membership', 'transport'],
  ['replication'],
  ['views', 'watch'],
];
/** Everything outside the core: the core never imports from these. */
const edges = [
  'adapters', 'http', 'eureka', 'native', 'prometheus', 'dns', 'xds', 'consul', 'app', 'cli', 'client', 'config',
  'persistence', 'security', 'metrics', 'ui', 'node.ts', 'peer.ts', 'main.ts', 'index.ts', 'cluster-status.ts',
  'protocol-listeners.ts',
];
const coreFolders = ['registry', 'lease', 'replication', 'membership', 'watch', 'views'];

/** Modules that do I/O or are frameworks: only the edges import them. */
const frameworks = [
  'fastify', 'fastify/*', '@fastify/*', 'undici', 'pino', 'pino-pretty', '@grpc/*', 'dns-packet', 'commander',
  'node:fs', 'node:fs/promises', 'node:http', 'node:https', 'node:http2', 'node:dgram', 'node:child_process',
  'node:os', 'node:process', 'node:worker_threads', 'node:cluster', 'node:timers', 'node:timers/promises',
  'fs', 'http', 'https', 'dgram', 'child_process', 'os', 'process', 'timers',
];

const timeAndChance = [
  { object: 'Date', property: 'now', message: 'read time through the injected Clock (clock.nowMs())' },
  { object: 'Math', property: 'random', message: 'draw chance from the injected Rng' },
  { object: 'process', property: 'env', message: 'settings come from config, loaded at the edge' },
  { object: 'performance', property: 'now', message: 'read time through the injected Clock' },
];
const globals = ['setTimeout', 'setInterval', 'setImmediate', 'clearTimeout', 'clearInterval', 'queueMicrotask', 'process'].map(
  (name) => ({ name, message: `no ${name} in the core: use the injected Clock (timers) or pass what is needed in` }),
);

/**
 * The store has one writer, the Registry (src/registry/registry.ts): a write to it from anywhere
 * else (`store.write`, `x.store.updateLease`, ...) is refused, so that every change goes through
 * the lease-ownership rules the registry applies.
 */
const storeWriteMessage = 'write the store through the Registry (src/registry/registry.ts), its one writer';
const storeWrites = ["[callee.object.name='store']", "[callee.object.property.name='store']"].map((object) => ({
  selector: `CallExpression${object}[callee.property.name=/^(write|updateLease|purge)$/]`,
  message: storeWriteMessage,
}));

function coreRules(folder) {
  const index = layers.findIndex((layer) => layer.includes(folder));
  const above = layers.slice(index + 1).flat();
  const upward = [...above, ...edges].filter((name) => name !== folder);
  return {
    files: [`src/${folder}/**/*.ts`],
    rules: {
      'no-restricted-properties': ['error', ...timeAndChance],
      'no-restricted-globals': ['error', ...globals],
      'no-restricted-syntax': [
        'error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'new Date() reads the wall clock: use the injected Clock' },
        ...(folder === 'registry' ? [] : storeWrites),
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: frameworks.filter((name) => !name.includes('*')).map((name) => ({ name, message: 'the core imports no framework or I/O module' })),
          patterns: [
            { group: frameworks.filter((name) => name.includes('*')), message: 'the core imports no framework or I/O module' },
            {
              group: upward.map((name) => `../${name.replace(/\.ts$/, '')}${name.endsWith('.ts') ? '.js' : ''}`)
                .concat(upward.filter((name) => !name.endsWith('.ts')).map((name) => `../${name}/*`))
                .concat(upward.filter((name) => !name.endsWith('.ts')).map((name) => `../../${name}/*`)),
              message: `src/${folder} may only import from the layers below it (see eslint.config.js)`,
            },
          ],
        },
      ],
    },
  };
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'src/ui/**', 'coverage/**'] },
  {
    files: ['src/**/*.ts'],
    languageOptions: { parser: tseslint.parser, ecmaVersion: 2022, sourceType: 'module' },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    rules: {},
  },
  ...coreFolders.map(coreRules),
  { files: ['src/**/*.ts'], ignores: coreFolders.map((folder) => `src/${folder}/**`), rules: { 'no-restricted-syntax': ['error', ...storeWrites] } },
  // The durability barrier is applied once, in the application layer (src/app/writes.ts): a
  // protocol's routes write through it and answer with `whenDurable`, never around it.
  // (src/consul writes through it too, in ConsulWrites, whose results its routes chain with andThen.)
  {
    files: ['src/http/**/*.ts', 'src/native/**/*.ts', 'src/eureka/**/*.ts', 'src/prometheus/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/app/durable-write.js'],
              importNames: ['durableWrite', 'andThen'],
              message: 'write through the application layer (src/app/writes.ts) and answer with whenDurable',
            },
            { group: ['**/registry/registry.js'], importNames: ['Registry'], message: 'routes write through the application layer (src/app), not the Registry' },
          ],
        },
      ],
    },
  },
);
