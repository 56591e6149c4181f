// What the two mutation targets share; each config file names its files and its test config.
/**
 * @param {string} target the name of the run: its reports and sandbox are named after it
 * @param {{ tests: 'memory' | 'postgres' | 'postgres-watch', mutate: string[], timeoutMS: number }}
 *   options `tests` names the vitest config the mutants run against (test/mutation/vitest.<tests>.config.ts)
 * @returns {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export function strykerTarget(target, { tests, mutate, timeoutMS }) {
  return {
    testRunner: 'vitest',
    vitest: { configFile: `test/mutation/vitest.${tests}.config.ts` },
    mutate,
    coverageAnalysis: 'perTest',
    concurrency: 2,
    timeoutMS,
    reporters: ['clear-text', 'html', 'json', 'progress'],
    htmlReporter: { fileName: `.scratch/mutation/${target}.html` },
    jsonReporter: { fileName: `.scratch/mutation/${target}.json` },
    tempDirName: `.stryker-tmp/${target}`,
    // Re-tests only the mutants whose code or covering tests changed since this machine's last run
    // of the target (Stryker's incremental mode); `npm run test:mutation -- --force` re-tests all.
    incremental: true,
    incrementalFile: `.scratch/mutation/${target}.incremental.json`,
    thresholds: { high: 90, low: 80, break: null },
  };
}
