/** The prose of docs/BENCHMARKS.md that does not change from run to run. */

export const HOW_TO_RUN = `Every benchmark uses \`DATABASE_URL\` when it is set, and otherwise starts embedded PostgreSQL
(real server binaries from npm) in a temporary directory, so none needs a database installed.
Each takes \`--help\` for its options and defaults; sizes and rounds are all options.

\`\`\`sh
npm run bench:all                          # everything below at the sizes the targets are stated for; writes
                                           # bench/results.json, bench/charts/*.svg and this page (about 20 minutes)
npm run bench:all -- --preset=quick        # smaller sizes, fewer rounds: a few minutes, for development
npm run bench:all -- --only=lifecycle,growth   # some sections; the others keep their last results
npm run bench:all -- --only=               # no benchmark: rewrites this page from bench/results.json
npm run bench:all -- --only= --tenMillion  # the opt-in growth run with 10,000,000 tasks alone (about 25 minutes)
npm run bench:smoke                        # tiny sizes into .scratch/: checks that everything runs end to end

npm run bench            # lifecycles/s: store, memory store, pg-boss, floor at concurrency 1, 16, 64
npm run bench:mcp        # tool calls/s through the MCP server, and settle → tasks/result latency
npm run bench:latency    # commit → wake across two instances, beside 1 s polling
npm run bench:growth     # getTask, completeTask, listTasks with 1,000 and 1,000,000 tasks (--tenMillion)
npm run bench:indexes    # each index of tasks, task_history, tombstones at 1,000,000 tasks: its plans, its cost
npm run bench:reaper     # the reaper on a 1,000,000-row backlog, with live p99 during it
npm run bench:memory     # memory and connections of 10,000 waiters and 10,000 tokens
npm run bench:versions -- --commits=eef8d55,HEAD   # the store at several commits against the floor, in one run
\`\`\`

\`DATABASE_URL=postgres://user@host/db npm run bench:all\` measures another server; the schemas the
benchmarks create (\`bench_*\`) are dropped at the end. pg-boss 12 needs Node 22, which the
benchmark runs as a child process from the \`node\` npm package (\`npx -y -p node@22\`, fetched from
the npm registry on first use); \`--pgBoss=false\` leaves it out. Read a figure together with the
load average printed beside it: the machine these ran on has 2 cores, and a run on a busy machine is
a trial run.`;

export const MEANINGS = {
  lifecycle: `One lifecycle is a tool call's task from start to end: create → set status (progress) →
complete with a result → read the result back. Each contender runs as many as it can in a round,
with that many lifecycles in flight at once (the concurrency), and every contender uses a pool of
the same size on the same database:

- **floor (raw pg)**: the four statements a lifecycle needs at least, with \`pg\` on a one-table
  schema, no validation, no history, no indexes beyond the key. Nothing durable can be faster.
- **PostgresTaskStore**: the product, in its default configuration (listener on, prepared
  statements). Beside the floor's work it validates every value, writes a history row per change
  of status, keeps three more indexes (listing by creation and by owner, expiry for the reaper),
  and hands out a cancellation token per task.
- **PostgresTaskStore, leased**: the same store with every task leased, as the MCP integrations
  run them, while its heartbeat renews 1,000 other leases every second (ten times the default
  rate). It differs from the unleased store by a few per cent, less than rounds among five
  contenders resolve here, so the two are also compared alone, in many short alternating rounds
  at concurrency 16: that comparison is what the lease target reads.
- **MemoryTaskStore**: the in-process reference store (no database; a fresh store per round).
- **pg-boss** (send → fetch → complete → getJobById): the PostgreSQL job queue a user would
  otherwise reach for, in a Node 22 child process, with maintenance and scheduling off.

Rounds run the contenders one after another in an order rotated each round; each round's rate is
divided by the floor's rate in that round, and the median of those ratios (with the lowest and
highest) is the figure to read.`,

  mcp: `Real MCP clients (SDK 1.x) over Streamable HTTP, against two servers in the same run: the one
\`npm start\` runs (\`startMcpServer\`: PostgresTaskStore behind the SDK adapter, the durable message
queue and session index, on PostgreSQL), and an McpServer with the same task capabilities on the
SDK's \`InMemoryTaskStore\` and \`InMemoryTaskMessageQueue\`. Both get the same benchmark tools,
written against the SDK's request task store, so only the stores and their wiring differ.

- **Throughput**: a task-augmented \`tools/call\` whose tool settles its task at once, then
  \`tasks/result\` for it; one client session per call in flight; rounds alternate the servers,
  and each round's rate is divided by the in-memory server's.
- **Settle → result**: the client is already blocked in \`tasks/result\` when the tool settles the
  task, at a random moment within a poll interval (1 s); the latency runs from the settling call
  to the client holding the result. Ours: settled through instance A, \`tasks/result\` on instance
  B, woken by NOTIFY. The in-memory store: one instance, where the SDK re-reads the task every poll
  interval.`,

  wake: `A waiter on instance A (\`waitForCompletion\`) and a completion on instance B (\`completeTask\`),
one task at a time: the delay runs from B's commit to A's waiter resolving. Beside it, pollers
reading their task every second (the MCP SDK's default interval), each from a random phase.`,

  growth: `Tables are bulk-loaded with SQL to look like a server that has run for a week: 55 % completed,
10 % failed, 5 % cancelled, 20 % working, 10 % waiting for input; owners of very different sizes
(a few own thousands of tasks, most own a few), 10 % of tasks without an owner; 2 % past their
deadline but not reaped yet; 5 % that never expire; a history row per transition (a third of the
finished tasks went through a round of input); outstanding and answered input requests; tombstones.
Rows are written in creation order, as a server writes them. Then, through the store, one call at a
time: \`getTask\` of a random live task, \`completeTask\` of a random working one, the first
\`listTasks\` page (50) of a random owner, and the first page over all owners. Calls alternate
between the sizes one by one, so a burst of noise hits every size alike; in each round each size's
median latency is divided by the smallest size's median.`,

  growthTenMillion: `The same benchmark with 1,000, 1,000,000 and 10,000,000 tasks in the same run, on the
same server: \`--tenMillion\` (about 25 minutes, most of it the bulk load). It is kept apart from the
run above because the 10,000,000-task table takes the cache from the smaller ones: the ratios at
1,000,000 here are not those of a server holding a million tasks, and the 1,000,000 targets are
read from the run above.`,

  indexes: `Why each index of the hot tables is there, on the mix of the growth run at 1,000,000
tasks. The store's calls (and one reaper pass, with short retention windows so that it purges
too) run for real, and each statement they send is first run under \`EXPLAIN (ANALYZE, BUFFERS)\`
and rolled back: "read by" lists the calls whose plans read the index, with the statement's time
on that data. What an index costs is measured on the creation statement (its history row
included), run 2,000 times on the server right after a \`CHECKPOINT\`, in a transaction that drops
the index, against the same with every index, all rolled back; the owners are drawn as in the mix.
The WAL an index adds includes the full pages it writes for the first change of each page after
the checkpoint, which is where an index whose inserts scatter over it costs most. The time is given
for the indexes that back no constraint together, as one alone is below the timing's noise.`,

  reaper: `A backlog of expired tasks (the same mix, every row past its deadline) is reaped by one store
instance's automatic reaper (default batch size; its first pass, which drains the whole backlog)
while another instance runs live lifecycles, once for each \`pacing\` setting, each on a fresh
backlog. The live p99 during the reap is compared with the p99 of the same load with no reaper
running just before (the idle value); the run after the reap shows how far the machine drifted
meanwhile. The WAL per row is the server's (\`pg_stat_wal\`) during the reap, live traffic's
included.`,

  memory: `One store instance in a fresh Node process (\`--expose-gc\`) holding pending
\`waitForCompletion\` calls on tasks another instance created and the cancellation tokens of tasks
it created itself. It is first warmed up with that same load, which it then lets go of (the tasks
settled and deleted), as a server that has been serving a while would have: the V8 heap it grew and
the code it compiled belong to the baseline, and the figure is what holding them costs. Resident
memory and the V8 heap are read after a full GC, before and while holding them; the instance's
connections are counted in \`pg_stat_activity\`. Then one UPDATE settles every waited task and the
time to the last waiter resolving is taken.`,
};
