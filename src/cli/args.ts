import { parseArgs } from 'node:util'

export type Flags = Record<string, { type: 'string' | 'boolean' }>

export class UsageError extends Error {}

/** Parses one command's flags strictly: an unknown flag or a missing value is a usage error. */
export function parseCommand<F extends Flags>(argv: string[], flags: F) {
  try {
    return parseArgs({ args: argv, options: flags, allowPositionals: true, strict: true })
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error))
  }
}

export function required(values: Record<string, unknown>, name: string): string {
  const value = values[name]
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`)
  return value
}

export function integer(raw: string | undefined, what: string): number {
  if (raw === undefined || !/^-?[0-9]+$/.test(raw)) throw new UsageError(`${what} must be a whole number`)
  return Number(raw)
}

export function optionalInteger(raw: unknown, what: string): number | undefined {
  return raw === undefined ? undefined : integer(String(raw), what)
}
