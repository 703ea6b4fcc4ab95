// The dashboard works without this script; it only adds two conveniences.
//
// 1. An element with `data-live="<address>"` is fetched again every `data-live-every` seconds
//    and replaced by what comes back (a running batch's progress, the outbox's newest page);
//    the new element carries on while it still has `data-live`. A signed-out session reloads
//    the page, which then asks to sign in.
// 2. A button with `data-copy="<input id>"` copies that input's value.

const LIVE_HEADER = 'X-Mailroom-Live'

function keepLive(element) {
  const seconds = Number(element.dataset.liveEvery) || 5
  setTimeout(() => refresh(element), seconds * 1000)
}

async function refresh(element) {
  if (document.hidden || !element.isConnected) {
    if (element.isConnected) keepLive(element)
    return
  }
  let response
  try {
    response = await fetch(element.dataset.live, {
      headers: { [LIVE_HEADER]: '1' },
      credentials: 'same-origin',
    })
  } catch {
    keepLive(element)
    return
  }
  if (response.redirected || response.status === 401) {
    window.location.reload()
    return
  }
  if (!response.ok) {
    keepLive(element)
    return
  }
  const template = document.createElement('template')
  template.innerHTML = (await response.text()).trim()
  const next = template.content.firstElementChild
  if (!next) return
  element.replaceWith(next)
  if (next.dataset.live) keepLive(next)
}

function copyButton(button) {
  const input = document.getElementById(button.dataset.copy)
  if (!input) return
  button.hidden = false
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(input.value)
    } catch {
      input.select()
      document.execCommand('copy')
    }
    button.textContent = 'Copied'
  })
}

document.addEventListener('DOMContentLoaded', () => {
  for (const element of document.querySelectorAll('[data-live]')) keepLive(element)
  for (const button of document.querySelectorAll('[data-copy]')) copyButton(button)
})
