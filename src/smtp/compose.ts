import MailComposer from 'nodemailer/lib/mail-composer'
import type Mail from 'nodemailer/lib/mailer'

/**
 * The message as the bytes that go on the wire, composed in one piece by nodemailer's own
 * composer. Handed to a session whole (`raw`), it leaves in one write and the end of data in
 * another; streamed part by part, every MIME part and boundary was a TLS record and a write of
 * its own (nine for a message with text and HTML), each waking the server.
 */
export function composeMessage(mail: Mail.Options): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    new MailComposer(mail).compile().build((error, message) => (error ? reject(error) : resolve(message)))
  })
}
