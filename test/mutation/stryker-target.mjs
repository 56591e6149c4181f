// What the two mutation targets share; each config file names its files and its test config.
/**
 * @param {'memory' | 'postgres'} target
 * @param {{ mutate: string[], timeoutMS: number }} options
 * @returns {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export function strykerTarget(target, { mutate, timeoutMS }) {
  return {
    testRunner: 'vitest',
    vitest: { configFile: `test/mutation/vitest.${target}.config.ts` },
    mutate,
    coverageAnalysis: 'perTest',
    concurrency: 2,
    timeoutMS,
    reporters: ['clear-text', 'html', 'json', 'progress'],
    htmlReporter: { fileName: `.scratch/mutation/${target}.html` },
    jsonReporter: { fileName: `.scratch/mutation/${target}.json` },
    tempDirName: `.stryker-tmp/${target}`,
    incremental: false,
    thresholds: { high: 90, low: 80, break: null },
  };
}
