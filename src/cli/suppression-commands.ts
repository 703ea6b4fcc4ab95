import { type Command, InvalidArgumentError, Option } from 'commander'
import { EmailAddressSchema } from '../generated/routes.ts'
import { listSuppressions, removeSuppression, suppressManually } from '../suppressions/suppressions.ts'
import { type Act, group, ofAccount, wholeNumber } from './program.ts'

/** The operator commands of an account's suppression list (docs/operator-cli.md). */
export function suppressionCommands(program: Command, act: Act): void {
  const suppression = group(
    program,
    'suppression',
    "an account's suppressed addresses, which it no longer mails",
  )
  suppression
    .command('list')
    .description("the account's suppressed addresses, newest first")
    .requiredOption('--account <id>', 'the account', wholeNumber)
    .addOption(new Option('--reason <reason>', 'only this reason').choices(REASONS))
    .option('--email <prefix>', 'only addresses that begin with this text (any case)')
    .option('--limit <n>', 'at most this many, 1 to 1000 (default 100)', pageSize, 100)
    .action(
      act(
        ofAccount(async (s, { opts }) => {
          const page = await listSuppressions(s.sql, opts.account, {
            reason: opts.reason,
            email: opts.email,
            limit: opts.limit,
          })
          return page.suppressions
        }),
      ),
    )
  suppression
    .command('add')
    .description('suppress addresses (reason manual); one already suppressed as strongly keeps its entry')
    .requiredOption('--account <id>', 'the account', wholeNumber)
    .argument('<email...>', 'the addresses', collectAddress, [] as string[])
    .addOption(
      new Option('--scope <scope>', 'all mail, or batches only').choices(['all', 'marketing']).default('all'),
    )
    .action(
      act(
        ofAccount((s, { opts, args }) =>
          suppressManually(
            s.sql,
            opts.account,
            { emails: args[0] as string[], scope: opts.scope },
            'operator',
          ),
        ),
      ),
    )
  suppression
    .command('remove')
    .description('remove an address from the list: mail to it goes out again')
    .requiredOption('--account <id>', 'the account', wholeNumber)
    .argument('<email>', 'the address (any case)')
    .action(
      act(
        ofAccount(async (s, { opts, args }) => {
          await removeSuppression(s.sql, opts.account, args[0] as string)
          return { removed: true }
        }),
      ),
    )
}

const REASONS = ['hard_bounce', 'complaint', 'unsubscribe', 'manual']

function pageSize(raw: string): number {
  const n = wholeNumber(raw)
  if (n < 1 || n > 1000) throw new InvalidArgumentError('must be 1 to 1000')
  return n
}

/** Each address as the API checks it, so that the command adds nothing the API would refuse. */
function collectAddress(raw: string, previous: string[]): string[] {
  if (!EmailAddressSchema.safeParse(raw).success)
    throw new InvalidArgumentError(`${raw} is not an email address`)
  return [...previous, raw]
}
