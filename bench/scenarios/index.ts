import { attachments } from './attachments.ts'
import { audienceBatch } from './audience-batch.ts'
import { audienceImport } from './audience-import.ts'
import { batch } from './batch.ts'
import { bigOutbox } from './big-outbox.ts'
import { coldStart } from './cold-start.ts'
import { enqueue } from './enqueue.ts'
import { hostile } from './hostile.ts'
import { relay } from './relay.ts'
import { retention } from './retention.ts'
import { send } from './send.ts'
import { storage } from './storage.ts'
import { sustained } from './sustained.ts'
import { tenants } from './tenants.ts'
import { webhooks } from './webhooks.ts'
import { workers } from './workers.ts'

/**
 * Every scenario, in the order `npm run bench` runs them, each between two raw baselines
 * (./raw.ts) that its rows are compared with. A new scenario is a file in this folder and a line
 * here. `BENCH_ONLY=send,batch` runs only those (each with its baselines); `BENCH_ONLY=hostile`
 * the hostile tenant's row.
 */
export const SCENARIOS = [
  send,
  enqueue,
  relay,
  batch,
  audienceImport,
  audienceBatch,
  webhooks,
  sustained,
  hostile,
  attachments,
  // The scale rows, on a filled outbox with BENCH_SCALE (bench/fill): storage before the purge
  // changes the sizes, after the reads whose index use it reports.
  bigOutbox,
  storage,
  retention,
  tenants,
  workers,
  coldStart,
]
