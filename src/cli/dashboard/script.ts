/**
 * The page's script, assembled from the source text of the client functions (client/): the
 * package ships no bundle and needs no build step or CDN for it, and the browser runs exactly the
 * code this package's tests ran. The functions use nothing from outside but their parameters and
 * the browser's globals, so their text stands alone.
 */
import { dashboardApp } from './client/app.js';
import { detailView } from './client/detail.js';
import { domKit } from './client/dom.js';

/** Transpilers that keep function names (esbuild's keepNames, as tsx uses) call this helper. */
const NAME_HELPER = 'const __name = (target) => target;';

export function pageScript(): string {
  return [
    "'use strict';",
    NAME_HELPER,
    `(${dashboardApp.toString()})((${domKit.toString()})(), ${detailView.toString()});`,
    '',
  ].join('\n');
}
