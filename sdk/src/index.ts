/**
 * @mailroom/sdk: TypeScript client of the Mailroom email sending API.
 *
 * - `createClient({ baseUrl, apiKey })` returns friendly methods that resolve to the success
 *   body and throw a `MailroomError` on any non-2xx answer, plus `raw`, the openapi-fetch client.
 * - A network failure (fetch rejects) propagates as is: retry `send` with the same
 *   `idempotencyKey`.
 */
export {
  createClient,
  type FetchLike,
  type ListMembersQuery,
  type MailroomClient,
  type MailroomClientOptions,
  type RawClient,
  type RequestOptions,
  type SendOptions,
} from './client.js'
export {
  API_ERROR_CODES,
  API_ERRORS,
  type ApiErrorCode,
  type ErrorBodyShape,
  type ErrorDetails,
  isMailroomError,
  isMailroomNetworkError,
  MailroomError,
  type MailroomErrorCode,
  type MailroomErrorInit,
  MailroomNetworkError,
  type MailroomNetworkErrorCode,
  type MailroomNetworkErrorInit,
  type SimpleErrorBody,
  type StandardErrorBody,
  type TemplateLimitErrorBody,
  type ValidationErrorBody,
  type ValidationIssue,
} from './errors.js'
export type { components, operations, paths } from './generated/schema.js'
export type * from './types.js'
