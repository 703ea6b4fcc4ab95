import type { Command } from 'commander'
import { createForm, deleteForm, listForms } from '../forms/forms.ts'
import { enableSignupPage, setSignupPage } from '../signups/signup-pages.ts'
import { type Act, group, ofAccount, wholeNumber } from './program.ts'

/** The operator commands of the hosted pages: forms, and audiences' sign-up pages. */

export function formCommands(program: Command, act: Act): void {
  const form = group(program, 'form', 'hosted forms, whose submissions are emailed to their owner')
  form
    .command('create')
    .description("create a form; its submissions go from the connection to the connection's own address")
    .requiredOption('--account <id>', 'the account', wholeNumber)
    .requiredOption('--name <name>', 'named in the subject of each submission')
    .option('--connection <id>', "the connection (default: the account's default when sending)", wholeNumber)
    .option('--redirect <url>', 'where the browser goes after a submission (default: a thank-you page)')
    .option('--allow-origin <origin...>', 'only these sites may submit (default: any)')
    .action(
      act((s, { opts }) =>
        createForm(
          s.sql,
          opts.account,
          {
            name: opts.name,
            connectionId: opts.connection,
            redirectUrl: opts.redirect,
            allowedOrigins: opts.allowOrigin,
          },
          s.config.publicUrl,
        ),
      ),
    )
  form
    .command('list')
    .description("an account's forms, with their public addresses and submission counts")
    .requiredOption('--account <id>', 'the account', wholeNumber)
    .action(act(ofAccount((s, { opts }) => listForms(s.sql, opts.account, s.config.publicUrl))))
  form
    .command('delete')
    .description('delete a form; its address stops working')
    .argument('<form-id>', 'the form', wholeNumber)
    .action(
      act(async (s, { args }) => {
        await deleteForm(s.sql, null, args[0] as number)
        return { deleted: true }
      }),
    )
}

export function signupPageCommands(program: Command, act: Act): void {
  const signupPage = group(program, 'signup-page', "audiences' hosted sign-up pages (Pro)")
  signupPage
    .command('set')
    .description("create or change an audience's sign-up page (omitted settings are kept)")
    .requiredOption('--audience <id>', 'the audience', wholeNumber)
    .requiredOption('--slug <slug>', 'its address, /signup/<slug>: 3 to 64 of a-z, 0-9 and -')
    .option('--title <t>', "the page's title (default: the audience's name)")
    .option('--description <d>', 'a short text under the title')
    .option('--connection <id>', 'the connection confirmation emails go through', wholeNumber)
    .option('--double-opt-in', 'members join only after following the link of a confirmation email')
    .option('--no-double-opt-in', 'members join at once')
    .action(
      act((s, { opts }) =>
        setSignupPage(
          s.sql,
          null,
          opts.audience,
          {
            slug: opts.slug,
            title: opts.title,
            description: opts.description,
            connectionId: opts.connection,
            doubleOptIn: opts.doubleOptIn,
          },
          s.config.publicUrl,
        ),
      ),
    )
  for (const [word, enabled] of [
    ['disable', false],
    ['enable', true],
  ] as const) {
    signupPage
      .command(word)
      .description(enabled ? 'open the page again' : 'close the page: it answers 404 until enabled')
      .requiredOption('--audience <id>', 'the audience', wholeNumber)
      .action(act((s, { opts }) => enableSignupPage(s.sql, null, opts.audience, enabled, s.config.publicUrl)))
  }
}
