/** Renders template strings through the placeholder compiler the way the placeholder tests read them. */
import { compileContent, type Payload } from '../../src/templates/placeholders.ts'

/** Renders one template string in all three fields, so each rule is checked field by field. */
export function fields(template: string, payload: Payload) {
  return compileContent({ subject: template, text_body: template, html_body: template })(payload)
}

/** Renders one template string as the subject only. */
export function subject(template: string, payload: Payload): string {
  return compileContent({ subject: template })(payload).subject
}
