import postgres from 'postgres'

export type Sql = postgres.Sql
/** A pool or an open transaction: what a function needs that only runs queries. */
export type Db = postgres.Sql | postgres.TransactionSql

export function connect(url: string, max = 10): Sql {
  return postgres(url, {
    max,
    onnotice: () => {},
    connection: { application_name: 'mailroom', TimeZone: 'UTC' },
  })
}
