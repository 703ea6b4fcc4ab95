-- A connection's mailbox, optional: the IMAP login Mailroom reads the bounce and complaint
-- reports of the connection's mail from. A null username and password mean the connection's
-- own SMTP login; the password is sealed as the SMTP password is. Handled reports are moved out of
-- the folder unless the owner turned that off.
create table connection_mailboxes (
  connection_id integer primary key references connections (id) on delete cascade,
  host text not null,
  port integer not null check (port in (993, 143)),
  username text,
  password_encrypted text,
  folder text not null default 'INBOX',
  move_handled boolean not null default true,
  created_at timestamptz not null default mailroom_now(),
  updated_at timestamptz not null default mailroom_now(),
  check ((username is null) = (password_encrypted is null))
);
