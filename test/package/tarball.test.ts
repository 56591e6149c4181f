/**
 * The package as npm users get it: `npm pack` on a fresh copy of the project (which builds it
 * first), the tarball installed into an empty project, then used the way the README says, from
 * an ESM script, from CommonJS, from a strict TypeScript project (`skipLibCheck: false`, no
 * `@types/pg` of its own) and through its command-line tool, against the test database.
 *
 * Every subpath in package.json `exports` is imported from the installed tarball, and the
 * package's peer dependencies are installed beside it, so a new subpath needs no change here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/test-database.js';
import { MANIFEST, packAndInstall, succeeded, type InstalledPackage } from './packed-package.js';
import { PROJECT_ROOT, run } from './project-copy.js';

const README = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
const TSC = join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const SUBPATHS = Object.keys(MANIFEST.exports).map((key) => MANIFEST.name + key.slice(1));
const [BIN] = Object.keys(MANIFEST.bin ?? {});

/** The README's usage example: the first TypeScript block under "## Using it". */
function usageExample(): string {
  const section = README.slice(README.indexOf('\n## Using it'));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('README: no ```ts block under "## Using it"');
  return block;
}

/** Commands that serve until Ctrl-C: test/dashboard/ (dashboard) and cli-bin.test.ts (watch) run them and stop them. */
const SERVING = new Set(['dashboard', 'watch']);

/**
 * The arguments of every `npx <bin> …` line in the README's shell blocks, up to a comment, pipe or
 * redirection; but those of a command that serves until stopped, and those with a placeholder
 * such as `<taskId>` for the reader to fill in.
 */
function cliExamples(): string[][] {
  const blocks = [...README.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  return blocks
    .flatMap((block) => block.split('\n'))
    .map((line) => line.replace(/\s+[#|>].*$/, '').trim())
    .filter((line) => line.startsWith(`npx ${BIN} `) && !line.includes('<'))
    .map((line) => line.split(/\s+/).slice(2))
    .filter(([command]) => !SERVING.has(command!));
}

/** Every file path `exports` names, at any depth of conditions. */
function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(exportTargets);
  return [];
}

const database = useTestDatabase();
let installed: InstalledPackage;
let consumer: string;
let packedFiles: string[];

beforeAll(async () => {
  installed = await packAndInstall({ withPeers: true });
  ({ consumer, packedFiles } = installed);
  // The consumer's own dependencies: this package and its peers, no @types/pg.
  const dependencies = (JSON.parse(readFileSync(join(consumer, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies;
  expect(Object.keys(dependencies).sort()).toEqual([MANIFEST.name, ...Object.keys(MANIFEST.peerDependencies ?? {})].sort());
}, 600_000);

afterAll(async () => {
  await installed?.remove();
});

// The cases share the installed project but write different files, so they run side by side.
describe('the packed tarball', { timeout: 300_000, concurrent: true }, () => {
  it('holds the build, its types and the migrations, and nothing else of the repository', () => {
    const named = [MANIFEST.main, MANIFEST.types, ...Object.values(MANIFEST.bin ?? {}), ...exportTargets(MANIFEST.exports)];
    for (const path of named) expect(packedFiles).toContain(path!.replace(/^\.\//, ''));
    for (const migration of readdirSync(join(PROJECT_ROOT, 'migrations'))) {
      expect(packedFiles).toContain(`migrations/${migration}`);
    }
    expect(packedFiles.filter((path) => !/^(dist\/|migrations\/|README\.md$|package\.json$|LICENSE)/.test(path))).toEqual([]);
    expect(packedFiles.filter((path) => path.endsWith('.map') || path.endsWith('.ts') && !path.endsWith('.d.ts'))).toEqual([]);
  });

  it("runs the README's usage example to completion from an ESM script", async () => {
    await writeFile(join(consumer, 'example.mjs'), usageExample());
    const result = succeeded(
      await run(process.execPath, ['example.mjs'], { cwd: consumer, env: { ...process.env, DATABASE_URL: database.connectionString } }),
      'example.mjs',
    );
    expect(result.stdout).toContain('completed');
  });

  it('typechecks and runs the same example in a strict TypeScript project with skipLibCheck off', async () => {
    await writeFile(join(consumer, 'src', 'example.ts'), usageExample());
    await writeFile(
      join(consumer, 'src', 'exports.ts'),
      SUBPATHS.map((subpath, i) => `import * as module${i} from '${subpath}';\n`).join('') +
        `export const modules = [${SUBPATHS.map((_, i) => `module${i}`).join(', ')}];\n`,
    );
    await writeFile(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, skipLibCheck: false, module: 'nodenext', target: 'es2022', rootDir: 'src', outDir: 'out' },
        include: ['src'],
      }),
    );
    succeeded(await run(process.execPath, [TSC, '-p', '.'], { cwd: consumer }), 'tsc');
    const result = succeeded(
      await run(process.execPath, ['out/example.js'], { cwd: consumer, env: { ...process.env, DATABASE_URL: database.connectionString } }),
      'the compiled example',
    );
    expect(result.stdout).toContain('completed');
  });

  it('loads every export from ESM and from CommonJS, with the same names', async () => {
    const listExports = (load: string) =>
      `const subpaths = ${JSON.stringify(SUBPATHS)};\n` +
      `const names = {};\n` +
      `for (const subpath of subpaths) names[subpath] = Object.keys(${load}).sort();\n` +
      `console.log(JSON.stringify(names));\n`;
    await writeFile(join(consumer, 'exports.mjs'), listExports('await import(subpath)'));
    // Node 20.19 and 22.12 on can require() an ES module; older lines must import() it.
    const requireWorks = (process.features as { require_module?: boolean }).require_module === true;
    await writeFile(
      join(consumer, 'exports.cjs'),
      requireWorks ? listExports('require(subpath)') : `(async () => {\n${listExports('await import(subpath)')}})();\n`,
    );
    const fromEsm = succeeded(await run(process.execPath, ['exports.mjs'], { cwd: consumer }), 'exports.mjs');
    const fromCjs = succeeded(await run(process.execPath, ['exports.cjs'], { cwd: consumer }), 'exports.cjs');
    const names = JSON.parse(fromEsm.stdout) as Record<string, string[]>;
    expect(Object.keys(names)).toEqual(SUBPATHS);
    expect(names[MANIFEST.name]).toEqual(expect.arrayContaining(['PostgresTaskStore', 'MemoryTaskStore', 'migrate', 'TaskStoreError']));
    expect(JSON.parse(fromCjs.stdout)).toEqual(names);
  });

  it("runs the README's command-line examples with the installed bin", async () => {
    const examples = cliExamples();
    expect(examples.length).toBeGreaterThan(0);
    for (const args of examples) {
      const result = succeeded(
        await run(join(consumer, 'node_modules', '.bin', BIN!), args, {
          cwd: consumer,
          env: { ...process.env, DATABASE_URL: database.connectionString },
        }),
        `${BIN} ${args.join(' ')}`,
      );
      // The header first, or (--json) one document that names the database, or (--print) SQL saying so.
      if (args.includes('--json')) expect(JSON.parse(result.stdout)).toMatchObject({ database: expect.stringMatching(/^postgres:\/\//) });
      else expect(result.stdout).toMatch(/^(-- mcp-task-store migrate --print: )?database postgres:\/\/.*, schema \w+/);
    }
  });
});
