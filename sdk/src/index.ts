/**
 * @mailroom/sdk: TypeScript client of the Mailroom email sending API.
 *
 * - `createClient({ baseUrl, apiKey, retries?, timeoutMs?, maxRetryDelayMs? })` returns one
 *   method per API operation (generated from openapi/openapi.yaml), resolving to the success
 *   body, plus `raw`, the openapi-fetch client.
 * - An error answer throws a `MailroomError` whose `code` comes from the API's error catalog;
 *   no answer at all throws a `MailroomNetworkError` (`NETWORK_ERROR` or `TIMEOUT`).
 * - With `retries`, the client follows the API's retry guidance (see `MailroomClientOptions`).
 * - `verifyWebhook(payload, headers, secret)` checks a webhook delivery and returns its event.
 */
export {
  createClient,
  type FetchLike,
  type MailroomClient,
  type MailroomClientOptions,
  type RawClient,
} from './client.js'
export type { RequestOptions } from './core.js'
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
export type {
  ListAudienceMembersQuery,
  ListEmailsQuery,
  MailroomOperations,
  SendEmailOptions,
} from './generated/operations.js'
export type { components, operations, paths } from './generated/schema.js'
export type * from './types.js'
export {
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookEvent,
  type WebhookHeaders,
  WebhookVerificationError,
} from './webhooks.js'
