/** The README and its SQL blocks, as the tests that run them read them. */
import { readFileSync } from 'node:fs';

export const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The history cookbook, from its heading to the next section: its queries are checked on their own. */
export const COOKBOOK = (() => {
  const start = README.indexOf('\n### History cookbook\n');
  if (start < 0) throw new Error('README: no "### History cookbook" section');
  return README.slice(start, README.indexOf('\n## ', start));
})();

export function sqlBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```sql\n([\s\S]*?)```/g)].map((match) => match[1]!);
}
