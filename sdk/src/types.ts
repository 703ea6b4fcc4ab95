/**
 * Convenient aliases of the generated `components['schemas']` (sdk/src/generated/schema.ts).
 * Request bodies that need "at least one of `text_body` and `html_body`" are generated as
 * `{...} & ({ text_body: string } | { html_body: string })`, so the rule is checked at compile time.
 */
import type { components } from './generated/schema.js'

type Schemas = components['schemas']

export type Recipients = Schemas['Recipients']

export type EmailRequest = Schemas['EmailRequest']
export type SendResponse = Schemas['SendResponse']
export type EnqueueResponse = Schemas['EnqueueResponse']

export type Email = Schemas['Email']
export type EmailStatus = Email['status']
export type EmailEvent = Schemas['EmailEvent']
export type EmailEventType = EmailEvent['type']
export type EmailRecipientOutcome = Schemas['EmailRecipientOutcome']
export type EmailResponse = Schemas['EmailResponse']
export type EmailListResponse = Schemas['EmailListResponse']
export type CursorPagination = Schemas['CursorPagination']

export type BatchInlineTemplate = Schemas['BatchInlineTemplate']
export type BatchEmail = Schemas['BatchEmail']
export type BatchRequest = Schemas['BatchRequest']
export type BatchCreatedResponse = Schemas['BatchCreatedResponse']
export type Batch = Schemas['Batch']
export type BatchStatus = Batch['status']
export type BatchResponse = Schemas['BatchResponse']

export type Audience = Schemas['Audience']
export type AudienceWithCount = Schemas['AudienceWithCount']
export type AudienceCreateRequest = Schemas['AudienceCreateRequest']
export type AudienceUpdateRequest = Schemas['AudienceUpdateRequest']
export type AudienceResponse = Schemas['AudienceResponse']
export type AudienceWithCountResponse = Schemas['AudienceWithCountResponse']
export type AudienceListResponse = Schemas['AudienceListResponse']
export type AudienceMember = Schemas['AudienceMember']
export type AudienceMemberInput = Schemas['AudienceMemberInput']
export type AddAudienceMembersRequest = Schemas['AddAudienceMembersRequest']
export type AddAudienceMembersResponse = Schemas['AddAudienceMembersResponse']
export type Pagination = Schemas['Pagination']
export type AudienceMemberListResponse = Schemas['AudienceMemberListResponse']

export type Template = Schemas['Template']
export type TemplateCreateRequest = Schemas['TemplateCreateRequest']
export type TemplateUpdateRequest = Schemas['TemplateUpdateRequest']
export type TemplateResponse = Schemas['TemplateResponse']
export type TemplateListResponse = Schemas['TemplateListResponse']

export type Webhook = Schemas['Webhook']
export type WebhookEventType = Schemas['WebhookEventType']
export type WebhookCreateRequest = Schemas['WebhookCreateRequest']
export type WebhookUpdateRequest = Schemas['WebhookUpdateRequest']
export type WebhookResponse = Schemas['WebhookResponse']
export type WebhookSecretResponse = Schemas['WebhookSecretResponse']
export type WebhookListResponse = Schemas['WebhookListResponse']
export type WebhookDelivery = Schemas['WebhookDelivery']
export type WebhookDeliveryListResponse = Schemas['WebhookDeliveryListResponse']
export type WebhookEmailEvent = Schemas['WebhookEmailEvent']
export type WebhookBatchEvent = Schemas['WebhookBatchEvent']
export type WebhookMemberAddedEvent = Schemas['WebhookMemberAddedEvent']
export type WebhookFormSubmittedEvent = Schemas['WebhookFormSubmittedEvent']

/** Body of the delete operations. */
export type SuccessMessage = Schemas['SuccessMessage']
