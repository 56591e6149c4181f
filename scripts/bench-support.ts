/** Small helpers the benchmark scripts share. */

/** `--name=value` flags over numeric defaults. */
export function parseArgs<T extends Record<string, number>>(defaults: T): T {
  const given = Object.fromEntries(
    process.argv.slice(2).map((arg) => {
      const [name, value] = arg.replace(/^--/, '').split('=');
      return [name, Number(value)];
    }),
  );
  for (const [name, value] of Object.entries(given)) {
    if (!(name in defaults) || !Number.isFinite(value)) throw new Error(`unknown or bad option --${name}`);
  }
  return { ...defaults, ...given };
}

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

export function median(samples: number[]): number {
  return percentile(samples, 50);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
