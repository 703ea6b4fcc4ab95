import type { ConnectionView } from '../connections/connections.ts'
import { When } from './layout.tsx'

/** A connection's state as a tag, and for a pause, until when, by whom and why. */
export function ConnectionStatus(props: { connection: ConnectionView }) {
  const { connection } = props
  if (connection.status === 'disabled') return <mark class="tag bad">disabled</mark>
  if (connection.status === 'active') return <mark class="tag good">active</mark>
  return (
    <>
      <mark class="tag warn">paused</mark>{' '}
      <small>
        {connection.paused_until ? (
          <>
            until <When at={connection.paused_until} />
          </>
        ) : (
          'until resumed'
        )}
        {connection.paused_by === 'operator' ? ' by hand' : null}
        {connection.paused_by === 'pushback' ? ' by Mailroom: the provider kept asking to slow down' : null}
        {connection.paused_by === 'unreachable' ? (
          <>
            {' '}
            by Mailroom: the server was out of reach (it is checked every minute, and resumed when it answers)
          </>
        ) : null}
        {connection.pause_reason ? <span class="wrap">: {connection.pause_reason}</span> : null}
      </small>
    </>
  )
}
