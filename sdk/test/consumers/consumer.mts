// An ES module caller (compiled with --module node16): the types come from the package's
// `import` condition (dist/esm).
import { createClient, isMailroomError, type MailroomErrorCode, type SendResponse } from '@mailroom/sdk'

const mailroom = createClient({ baseUrl: 'http://127.0.0.1:3000/v1', apiKey: 'mr_key', retries: 2 })

export async function send(): Promise<SendResponse | MailroomErrorCode | string> {
  try {
    return await mailroom.send({ to: 'ada@example.com', subject: 'Hi', text_body: 'Hello' })
  } catch (error) {
    if (isMailroomError(error)) return error.code
    throw error
  }
}

export const members = (id: number) => mailroom.audiences.members.list(id, { limit: 10 })
