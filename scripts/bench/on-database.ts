/** What every benchmark's command line shares: a database for the run, stopped however it ends. */
import { openScriptDatabase } from '../database.js';

export async function onScriptDatabase(run: (connectionString: string) => Promise<unknown>): Promise<void> {
  const database = await openScriptDatabase();
  console.log(`database: ${database.description}`);
  try {
    await run(database.connectionString);
  } finally {
    await database.stop();
  }
}
