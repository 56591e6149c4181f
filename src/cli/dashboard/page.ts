/**
 * The dashboard's page: static HTML and CSS, no value from the database in them (the script
 * fills everything in with textContent), so they can be sent as they are under a strict CSP.
 */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mcp-task-store dashboard</title>
<link rel="stylesheet" href="/app.css">
<script type="module" src="/client/app.js"></script>
</head>
<body>
<header>
  <h1>mcp-task-store</h1>
  <span id="where"></span>
  <span id="feed" class="feed">connecting…</span>
</header>
<p id="problem" class="problem" hidden></p>
<section id="summary" class="summary" aria-label="live tasks by status"></section>
<details class="tools" open>
  <summary>by tool</summary>
  <table class="tasks">
    <thead><tr><th>tool</th><th>live now</th><th>settled in the last hour</th><th>settled in the last day</th></tr></thead>
    <tbody id="tools-body"></tbody>
  </table>
</details>
<form id="filters" class="filters">
  <label>status <select name="status">
    <option value="">any</option><option>working</option><option>input_required</option>
    <option>completed</option><option>failed</option><option>cancelled</option>
  </select></label>
  <label>tool <input name="tool" autocomplete="off"></label>
  <label>owner <input name="owner" autocomplete="off"></label>
  <label>created since <input name="since" autocomplete="off" size="12" placeholder="1h, 2d, 2026-12-01"></label>
  <button type="submit">Filter</button>
  <button type="reset">Clear</button>
</form>
<main>
  <table class="tasks">
    <thead><tr><th>task</th><th>status</th><th>tool</th><th>owner</th><th>created</th><th>updated</th><th>message</th><th>ttl</th></tr></thead>
    <tbody id="tasks-body"></tbody>
  </table>
  <nav class="pages">
    <button id="newer" type="button" disabled>Newer</button>
    <span id="page-info">page 1</span>
    <button id="older" type="button" disabled>Older</button>
  </nav>
  <aside id="detail" class="detail" hidden></aside>
</main>
</body>
</html>
`;

export const PAGE_CSS = `
:root { font: 14px/1.4 system-ui, sans-serif; color: #1d2330; background: #f6f7f9; }
body { margin: 0 auto; max-width: 1400px; padding: 0 16px 32px; }
header { display: flex; gap: 16px; align-items: baseline; padding: 12px 0; }
h1 { font-size: 18px; margin: 0; }
#where { color: #5b6475; }
.feed { margin-left: auto; padding: 2px 8px; border-radius: 10px; background: #e3e6eb; }
.feed-listening { background: #d7f2dd; color: #125c25; }
.feed-reconnecting, .feed-stale, .feed-disconnected { background: #fde7c8; color: #7a4a00; }
.problem { background: #fbe0e0; color: #7d1111; padding: 8px 12px; border-radius: 4px; }
.summary { display: flex; flex-wrap: wrap; gap: 8px; margin: 8px 0; }
.chip { border: 1px solid #c9ced8; background: #fff; border-radius: 14px; padding: 3px 10px; cursor: pointer; }
.chip.selected { border-color: #2f5fd0; box-shadow: 0 0 0 1px #2f5fd0; }
.count { color: #5b6475; align-self: center; }
.tools { margin: 8px 0; }
.filters { display: flex; gap: 12px; align-items: center; margin: 12px 0; }
table.tasks { width: 100%; border-collapse: collapse; background: #fff; }
.tasks th, .tasks td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #eceef2; vertical-align: top; }
.tasks td { max-width: 380px; overflow-wrap: anywhere; }
.tasks tr.changed { animation: flash 1s; }
.tasks tr.gone { opacity: 0.4; }
@keyframes flash { from { background: #fff6c9; } to { background: transparent; } }
.status { padding: 1px 6px; border-radius: 3px; font-size: 12px; background: #e3e6eb; }
.status-working { background: #dce8fb; } .status-input_required { background: #fde7c8; }
.status-completed { background: #d7f2dd; } .status-failed { background: #fbe0e0; } .status-cancelled { background: #e8e3f3; }
.pages { display: flex; gap: 12px; align-items: center; margin: 10px 0; }
.detail { position: fixed; top: 0; right: 0; bottom: 0; width: min(560px, 95vw); overflow: auto; background: #fff; box-shadow: -4px 0 16px rgba(0,0,0,.15); padding: 16px; }
.detail dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 12px; }
.detail dd { margin: 0; overflow-wrap: anywhere; }
.detail li > * { margin-right: 6px; }
.detail pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f7f9; padding: 8px; }
a { color: #2f5fd0; }
`;
