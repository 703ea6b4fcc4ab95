import postgres from 'postgres'

export type Sql = postgres.Sql
export type TransactionSql = postgres.TransactionSql

export function connect(url: string, max = 10): Sql {
  return postgres(url, {
    max,
    onnotice: () => {},
    // Timestamps leave the database already formatted where the API needs text; the rest are Dates.
    connection: { application_name: 'mailroom', TimeZone: 'UTC' },
  })
}
