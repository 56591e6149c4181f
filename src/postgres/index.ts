// The PostgreSQL store's public surface (the `./postgres` subpath export): named exports only.
export { PostgresTaskStore } from './postgres-task-store.js';
export type { PostgresTaskStoreOptions } from './options.js';
export { migrate, type MigrateOptions } from './migrate.js';
export type { ListenerState, ListenerStateChange } from './listener.js';
export type { ReaperOptions, ReaperPass } from './reaper.js';
export type { Logger } from './telemetry.js';
