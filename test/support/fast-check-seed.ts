import fc from 'fast-check';

/**
 * Every property test runs from this seed unless it names its own, so that a run of the suite
 * is repeatable (a CI failure can be run again as it was); `FC_SEED=<n> npx vitest run ...`
 * explores other cases. A failing property prints its seed and counterexample either way.
 */
fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 20_261_202) });
