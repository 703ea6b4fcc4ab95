import { analyzeGrownTables } from '../db/statistics.ts'
import type { Services } from '../services.ts'

/**
 * How often a worker looks for tables grown since their last ANALYZE: PostgreSQL's own counts
 * behind the check are brought up to date about once a second.
 */
export const STATISTICS_CHECK_MS = 1_000

/**
 * Keeps the tables' statistics up with their growth while the worker runs (see
 * analyzeGrownTables), one check at a time; answers the function that stops it.
 */
export function keepTableStatistics({ sql, log }: Pick<Services, 'sql' | 'log'>): () => void {
  let checking = false
  const check = async () => {
    if (checking) return
    checking = true
    try {
      const analyzed = await analyzeGrownTables(sql)
      if (analyzed.length) log.debug({ analyzed }, 'tables analyzed as they grew')
    } catch (error) {
      log.warn({ err: (error as Error).message }, 'could not analyze grown tables')
    } finally {
      checking = false
    }
  }
  void check()
  const timer = setInterval(check, STATISTICS_CHECK_MS)
  return () => clearInterval(timer)
}
