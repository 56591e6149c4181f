/**
 * The views of migration 0004 on scripted lifecycles whose history rows were moved to known
 * instants: task_transitions numbers each task's rows and times the state each left, and
 * task_summaries sums a task up exactly, whether it settled, still waits, or is long gone.
 */
import { describe, expect, test } from 'vitest';
import { useHistoryStores } from './support/history-stores.js';
import { setTimeline } from './support/task-timelines.js';

const { resources, rows, freshSchema, openStore, endTask } = useHistoryStores();

// -- The views ------------------------------------------------------------------------------------

describe('the views', () => {
  const START = new Date('2025-03-01T10:00:00.000Z');
  const at = (ms: number) => new Date(START.getTime() + ms);

  /** Four scripted lifecycles, their rows moved to known instants; `gone` expired and was purged. */
  async function scriptedTasks(schema: string) {
    const store = await openStore(schema, { tombstoneRetentionMs: 0 });
    const rendered = (await store.createTask({ toolName: 'render', owner: 'alice' })).taskId;
    await store.setStatus(rendered, 'input_required', 'which format?');
    await store.setStatus(rendered, 'working', 'rendering');
    await store.requireInput(rendered, { size: { method: 'elicitation/create', params: { message: 'Size?' } } });
    await store.applyInputResponses(rendered, { size: { action: 'accept', content: { size: 'A4' } } });
    await store.setStatus(rendered, 'working', 'page 2 of 2'); // progress: no row
    await store.completeTask(rendered, { content: [] });
    await setTimeline(resources.admin, schema, rendered, START, [0, 1000, 4000, 4500, 6500, 10_000]);

    const waiting = (await store.createTask({ toolName: 'deploy' })).taskId;
    await store.requireInput(waiting, { approval: { method: 'elicitation/create', params: { message: 'Deploy?' } } });
    await setTimeline(resources.admin, schema, waiting, START, [0, 2500]);

    // Gone before its rows move back in time, or the history phase would take them too.
    const gone = (await store.createTask({ toolName: 'crawl', owner: 'bob', ttlMs: 60_000 })).taskId;
    await store.failTask(gone, { code: -32603, message: 'site unreachable' });
    await endTask(store, gone);
    await setTimeline(resources.admin, schema, gone, START, [0, 750]);

    // Sub-millisecond times: durations round to the nearest millisecond.
    const cancelled = (await store.createTask({ toolName: 'crawl', owner: '' })).taskId;
    await store.cancelTask(cancelled, 'no longer needed');
    await setTimeline(resources.admin, schema, cancelled, START, [0, 1234.6]);
    return { rendered, waiting, gone, cancelled };
  }

  test('task_transitions: one row per history row, numbered, with the time spent in the state it left', async () => {
    const schema = await freshSchema();
    const { rendered, cancelled } = await scriptedTasks(schema);
    const transitions = (taskId: string) =>
      rows(
        `SELECT task_id, tool_name, owner, seq::int, at, from_status, to_status, message, previous_state_ms::int
           FROM ${schema}.task_transitions WHERE task_id = $1 ORDER BY seq`,
        [taskId],
      );
    const row = (seq: number, ms: number, from_status: string | null, to_status: string, message: string, previous_state_ms: number | null) => ({
      task_id: rendered,
      tool_name: 'render',
      owner: 'alice',
      seq,
      at: at(ms),
      from_status,
      to_status,
      message,
      previous_state_ms,
    });
    expect(await transitions(rendered)).toEqual([
      row(1, 0, null, 'working', 'Task started', null),
      row(2, 1000, 'working', 'input_required', 'which format?', 1000),
      row(3, 4000, 'input_required', 'working', 'rendering', 3000),
      row(4, 4500, 'working', 'input_required', 'Awaiting client input', 500),
      row(5, 6500, 'input_required', 'working', 'Task resumed', 2000),
      row(6, 10_000, 'working', 'completed', 'Task completed', 3500),
    ]);
    expect((await transitions(cancelled)).map((r) => [r.seq, r.owner, r.to_status, r.message, r.previous_state_ms])).toEqual([
      [1, '', 'working', 'Task started', null],
      [2, '', 'cancelled', 'Cancelled: no longer needed', 1235],
    ]);
  });

  test('task_summaries: one row per task, settled or waiting, live or long gone', async () => {
    const schema = await freshSchema();
    const { rendered, waiting, gone, cancelled } = await scriptedTasks(schema);
    const summaries = await rows(
      `SELECT task_id, tool_name, owner, status, created_at, last_transition_at, settled_at, first_input_required_at,
              time_to_first_input_ms::int, input_required_ms::int, total_ms::int, transitions::int, live
         FROM ${schema}.task_summaries ORDER BY tool_name, owner NULLS FIRST`,
    );
    const summary = {
      settled_at: null,
      first_input_required_at: null,
      time_to_first_input_ms: null,
      input_required_ms: 0,
      total_ms: null,
      live: true,
      created_at: START,
    };
    expect(summaries).toEqual([
      {
        ...summary,
        task_id: cancelled,
        tool_name: 'crawl',
        owner: '',
        status: 'cancelled',
        last_transition_at: at(1234.6),
        settled_at: at(1234.6),
        total_ms: 1235,
        transitions: 2,
      },
      {
        ...summary,
        task_id: gone,
        tool_name: 'crawl',
        owner: 'bob',
        status: 'failed',
        last_transition_at: at(750),
        settled_at: at(750),
        total_ms: 750,
        transitions: 2,
        live: false,
      },
      {
        // Still waiting: the stint going on is not counted yet.
        ...summary,
        task_id: waiting,
        tool_name: 'deploy',
        owner: null,
        status: 'input_required',
        last_transition_at: at(2500),
        first_input_required_at: at(2500),
        time_to_first_input_ms: 2500,
        transitions: 2,
      },
      {
        ...summary,
        task_id: rendered,
        tool_name: 'render',
        owner: 'alice',
        status: 'completed',
        last_transition_at: at(10_000),
        settled_at: at(10_000),
        first_input_required_at: at(1000),
        time_to_first_input_ms: 1000,
        input_required_ms: 3000 + 2000,
        total_ms: 10_000,
        transitions: 6,
      },
    ]);
  });
});
