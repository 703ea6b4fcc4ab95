import { AppError } from '../../src/app-error.ts'

/** The AppError an operation is refused with, whether it throws at once or rejects later. */
export async function refusal(operation: Promise<unknown> | (() => Promise<unknown>)): Promise<AppError> {
  try {
    await (typeof operation === 'function' ? operation() : operation)
  } catch (error) {
    if (error instanceof AppError) return error
    throw error
  }
  throw new Error('expected the operation to be refused')
}
