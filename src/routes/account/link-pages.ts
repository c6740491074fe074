import { inlineHash, pageHeaders } from '../../http/page-headers'

/**
 * The pages the links in mail open (`/auth/<flow>?token=…`). Opening one changes nothing: mail
 * scanners fetch links before people do, so the page asks for a click (and a reset for the new
 * password) and then posts the token to the flow's `/confirm`, on the same origin.
 */
const SCRIPT = `
const form = document.querySelector('form')
const status = document.getElementById('status')
const token = new URLSearchParams(location.search).get('token') || ''
if (token === '') { status.textContent = 'This link has no token. Open the whole link from the message.'; form.hidden = true }
form.addEventListener('submit', async (event) => {
  event.preventDefault()
  const body = { token }
  const password = form.querySelector('input[name=password]')
  if (password) body.password = password.value
  form.querySelector('button').disabled = true
  status.textContent = 'One moment…'
  try {
    const answer = await fetch(location.pathname + '/confirm', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    })
    const json = await answer.json().catch(() => ({}))
    if (answer.ok) { status.textContent = form.dataset.done; form.hidden = true; return }
    status.textContent = (json.error && json.error.message) || 'That did not work; ask for a new link.'
  } catch { status.textContent = 'roster could not be reached; try again.' }
  form.querySelector('button').disabled = false
})
`

const STYLE = `body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1a1a1a}
label{display:block;margin:1rem 0 .25rem}input{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}
button{margin-top:1rem;padding:.6rem 1.2rem;font:inherit;background:#1f4fd1;color:#fff;border:0;border-radius:4px}
@media (prefers-color-scheme:dark){body{background:#111;color:#eee}}`

export const LINK_PAGE_HEADERS = {
  ...pageHeaders([
    "default-src 'none'",
    `script-src ${inlineHash(SCRIPT)}`,
    `style-src ${inlineHash(STYLE)}`,
    "connect-src 'self'",
    "form-action 'none'",
  ]),
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
}

function page(title: string, intro: string, fields: string, button: string, done: string) {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">
<title>${title}</title><style>${STYLE}</style></head>
<body><main><h1>${title}</h1><p>${intro}</p>
<form data-done="${done}">${fields}<button type="submit">${button}</button></form>
<p id="status" role="status" aria-live="polite"></p></main>
<script type="module">${SCRIPT}</script></body></html>
`
}

export const VERIFY_EMAIL_PAGE = page(
  'Confirm your email address',
  'Press the button to confirm that this address is yours.',
  '',
  'Confirm my address',
  'Thank you: your address is confirmed. You may close this page.',
)

export const PASSWORD_RESET_PAGE = page(
  'Choose a new password',
  'Every session of the account ends when the password changes.',
  '<label for="password">New password (at least 8 characters)</label><input id="password" name="password" type="password" autocomplete="new-password" minlength="8" maxlength="128" required>',
  'Set the new password',
  'Your password is changed. Sign in with the new one.',
)

export const MAGIC_LINK_PAGE = page(
  'Sign in',
  'Press the button to sign in on this device.',
  '',
  'Sign in',
  'You are signed in. You may close this page.',
)

export const EMAIL_CHANGE_PAGE = page(
  'Confirm your new email address',
  'Press the button to make this address the account’s address.',
  '',
  'Confirm the new address',
  'Your address is changed. Sign in with it from now on.',
)

export const EMAIL_CHANGE_UNDO_PAGE = page(
  'Undo the change of your email address',
  'Press the button to move the account back to this address. Every session of the account ends; then reset the password from this address.',
  '',
  'Undo the change',
  'The account is back at this address and signed out everywhere. Reset its password now.',
)

export const INVITATION_PAGE = page(
  'Welcome',
  'Choose the password of your new account.',
  '<label for="password">Password (at least 8 characters)</label><input id="password" name="password" type="password" autocomplete="new-password" minlength="8" maxlength="128" required>',
  'Set my password',
  'Your account is ready. Sign in with your address and this password.',
)
