/**
 * The page's script: the ES modules of ./client/, by file name ('app.js', 'dom.js', …), sent as
 * they are. `npm run build` compiles them with their own tsconfig (the DOM library, for those
 * files alone) into dist/cli/dashboard/client/, beside this module's compiled form. Run from a
 * source checkout (tsx, the tests, `npm start`) there is no build: the same .ts files are
 * transpiled here, once at start, with TypeScript, a dev dependency a checkout has installed.
 */
import { readdir, readFile } from 'node:fs/promises';

const CLIENT_DIR = new URL('./client/', import.meta.url);
const ENTRY = 'app.js';

export async function loadClientModules(): Promise<Map<string, string>> {
  const names = await readdir(CLIENT_DIR);
  if (names.includes(ENTRY)) return read(names.filter((name) => name.endsWith('.js')), (text) => text);
  const { default: ts } = await import('typescript').catch(() => {
    throw new Error(`the dashboard's page script is not built (no ${ENTRY} in ${CLIENT_DIR.pathname}): run npm run build`);
  });
  const transpile = (source: string) =>
    ts.transpileModule(source, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, verbatimModuleSyntax: true } }).outputText;
  const sources = names.filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'));
  const modules = await read(sources, transpile);
  return new Map([...modules].map(([name, text]) => [name.replace(/\.ts$/, '.js'), text]));
}

async function read(names: string[], transform: (text: string) => string): Promise<Map<string, string>> {
  const texts = await Promise.all(names.map(async (name) => transform(await readFile(new URL(name, CLIENT_DIR), 'utf8'))));
  return new Map(names.map((name, index) => [name, texts[index]!]));
}
