import { ApiError } from '../../src/errors.ts'

/** The ApiError an operation is refused with, whether it throws at once or rejects later. */
export async function refusal(operation: Promise<unknown> | (() => Promise<unknown>)): Promise<ApiError> {
  try {
    await (typeof operation === 'function' ? operation() : operation)
  } catch (error) {
    if (error instanceof ApiError) return error
    throw error
  }
  throw new Error('expected the operation to be refused')
}
