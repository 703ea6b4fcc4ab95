import { Writable } from 'node:stream'
import type { LogLevel } from '../../src/config.ts'
import { createLogger, type Logger } from '../../src/log.ts'

export type LogLine = Record<string, unknown> & { level: number; msg: string }

/** A logger (at `info` unless told) whose lines the test reads back (as JSON objects), and their raw text. */
export function captureLogs(level: LogLevel = 'info'): { log: Logger; lines: LogLine[]; text: () => string } {
  const raw: string[] = []
  const lines: LogLine[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      const text = chunk.toString()
      raw.push(text)
      for (const line of text.split('\n')) if (line.trim()) lines.push(JSON.parse(line) as LogLine)
      done()
    },
  })
  return { log: createLogger(level, 'json', stream), lines, text: () => raw.join('') }
}

export const WARN = 40
export const INFO = 30
