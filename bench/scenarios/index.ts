import { audienceBatch } from './audience-batch.ts'
import { audienceImport } from './audience-import.ts'
import { batch } from './batch.ts'
import { enqueue } from './enqueue.ts'
import { raw } from './raw.ts'
import { send } from './send.ts'
import { sustained } from './sustained.ts'
import { webhooks } from './webhooks.ts'

/**
 * Every scenario, in the order `npm run bench` runs them; `raw` first, since every row is
 * compared with it. A new scenario is a file in this folder and a line here.
 * `BENCH_ONLY=send,batch` runs only those (and the baseline).
 */
export const SCENARIOS = [raw, send, enqueue, batch, audienceImport, audienceBatch, webhooks, sustained]
