import { type Command, Option } from 'commander'
import { clearMailbox, getMailbox, setMailbox, testMailbox } from '../connections/mailbox.ts'
import { type Act, group, passwordOf, UsageError, wholeNumber } from './program.ts'

/** `connection mailbox set|show|clear|test`: the IMAP mailbox a connection's reports are read from. */
export function mailboxCommands(connection: Command, act: Act): void {
  const mailbox = group(
    connection,
    'mailbox',
    "the IMAP mailbox the connection's bounce and complaint reports are read from",
  )
  mailbox
    .command('set')
    .description('test an IMAP login and folder, then save them (nothing is saved when the test fails)')
    .argument('<id>', 'the connection', wholeNumber)
    .requiredOption('--host <host>', 'the IMAP server')
    .addOption(
      new Option('--port <port>', '993 (TLS) or 143 (STARTTLS, required)')
        .argParser(wholeNumber)
        .makeOptionMandatory(),
    )
    .option('--username <user>', 'the IMAP login')
    .option('--password <pw>', 'the password (other users can see it: prefer --password-stdin)')
    .option('--password-stdin', 'read the password from standard input')
    .addOption(
      new Option('--same-login-as-smtp', "log in with the connection's SMTP username and password").conflicts(
        ['username', 'password', 'passwordStdin'],
      ),
    )
    .option('--folder <name>', 'the folder reports arrive in (default INBOX)')
    .option('--no-move', 'leave handled reports in the folder (by default they are moved)')
    .action(
      act(async (s, call) => {
        const { opts } = call
        const password = await passwordOf(call)
        if (!opts.sameLoginAsSmtp && (opts.username === undefined || password === undefined)) {
          throw new UsageError('give --username with --password or --password-stdin, or --same-login-as-smtp')
        }
        return setMailbox(s, call.args[0] as number, {
          host: opts.host,
          port: opts.port,
          username: opts.username,
          password,
          sameLoginAsSmtp: opts.sameLoginAsSmtp,
          folder: opts.folder,
          moveHandled: opts.move,
        })
      }),
    )
  mailbox
    .command('show')
    .description("the connection's mailbox (never its password), or null")
    .argument('<id>', 'the connection', wholeNumber)
    .action(act((s, { args }) => getMailbox(s.sql, args[0] as number)))
  mailbox
    .command('clear')
    .description("stop reading the connection's mailbox and forget its login")
    .argument('<id>', 'the connection', wholeNumber)
    .action(act((s, { args }) => clearMailbox(s.sql, args[0] as number)))
  mailbox
    .command('test')
    .description("test the saved mailbox's login and folder again")
    .argument('<id>', 'the connection', wholeNumber)
    .action(act((s, { args }) => testMailbox(s, args[0] as number)))
}
