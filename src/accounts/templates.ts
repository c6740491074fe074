import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { MailFlow } from '../mail/outbox'

/** One message's three parts; `{{name}}` places a value (escaped in HTML). */
export interface Template {
  subject: string
  text: string
  html: string
}

/** The values a template may place. */
export interface TemplateValues {
  /** The user's name. */
  name: string
  /** The address the message goes to. */
  email: string
  /** The page the message's button opens (built from --public-url). */
  link: string
  /** How long the link lasts, in words ("15 minutes"). */
  expires_in: string
  /** A magic link's 6-digit code; empty in the other flows. */
  code: string
  /** An email change's new address (the old address's notices name it). */
  new_email: string
}

const page = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>
<body style="font-family: system-ui, sans-serif; line-height: 1.5; color: #1a1a1a">
${body}
</body></html>
`
const button = (label: string) =>
  `<p><a href="{{link}}" style="display: inline-block; padding: 0.6em 1.2em; background: #1f4fd1; color: #fff; text-decoration: none; border-radius: 4px">${label}</a></p>
<p>Or open this address: <a href="{{link}}">{{link}}</a></p>`

/** The templates built into the binary, one per flow. */
export const EMBEDDED_TEMPLATES: Record<MailFlow, Template> = {
  'verify-email': {
    subject: 'Confirm your email address',
    text: `Hello {{name}},

Please confirm that {{email}} is your address by opening this link:

{{link}}

The link works once and lasts {{expires_in}}. If you did not ask for this, ignore this message.
`,
    html: page(
      'Confirm your email address',
      `<p>Hello {{name}},</p>
<p>Please confirm that {{email}} is your address.</p>
${button('Confirm my address')}
<p>The link works once and lasts {{expires_in}}. If you did not ask for this, ignore this message.</p>`,
    ),
  },
  'password-reset': {
    subject: 'Reset your password',
    text: `Hello {{name}},

Somebody (we hope you) asked to reset the password of {{email}}. Choose a new one here:

{{link}}

The link works once and lasts {{expires_in}}. Every session of the account ends when the
password changes. If you did not ask for this, ignore this message: nothing changes.
`,
    html: page(
      'Reset your password',
      `<p>Hello {{name}},</p>
<p>Somebody (we hope you) asked to reset the password of {{email}}.</p>
${button('Choose a new password')}
<p>The link works once and lasts {{expires_in}}. Every session of the account ends when the password changes. If you did not ask for this, ignore this message: nothing changes.</p>`,
    ),
  },
  'magic-link': {
    subject: 'Your sign-in link',
    text: `Hello {{name}},

Sign in by opening this link:

{{link}}

or by entering this code: {{code}}

The link and the code work once and last {{expires_in}}. If you did not ask for this, ignore
this message.
`,
    html: page(
      'Your sign-in link',
      `<p>Hello {{name}},</p>
${button('Sign in')}
<p>Or enter this code: <strong style="font-size: 1.4em; letter-spacing: 0.1em">{{code}}</strong></p>
<p>The link and the code work once and last {{expires_in}}. If you did not ask for this, ignore this message.</p>`,
    ),
  },
  'email-change': {
    subject: 'Confirm your new email address',
    text: `Hello {{name}},

Please confirm that {{email}} should become the address of your account:

{{link}}

The link works once and lasts {{expires_in}}. Until then the account keeps its old address.
`,
    html: page(
      'Confirm your new email address',
      `<p>Hello {{name}},</p>
<p>Please confirm that {{email}} should become the address of your account.</p>
${button('Confirm the new address')}
<p>The link works once and lasts {{expires_in}}. Until then the account keeps its old address.</p>`,
    ),
  },
  'email-changed': {
    subject: 'Your email address is changing',
    text: `Hello {{name}},

Somebody signed in to your account asked to change its address from {{email}} to
{{new_email}}. The change happens when the new address confirms it; this address then gets a
link that undoes it.

If this was not you, reset your password now and tell your administrator.
`,
    html: page(
      'Your email address is changing',
      `<p>Hello {{name}},</p>
<p>Somebody signed in to your account asked to change its address from {{email}} to {{new_email}}. The change happens when the new address confirms it; this address then gets a link that undoes it.</p>
<p>If this was not you, reset your password now and tell your administrator.</p>`,
    ),
  },
  'email-change-undo': {
    subject: 'Your email address was changed',
    text: `Hello {{name}},

The address of your account was changed from {{email}} to {{new_email}}.

If this was not you, undo the change here:

{{link}}

Undoing it moves the account back to {{email}} and signs it out everywhere; then reset your
password from this address. The link works once and lasts {{expires_in}}. If you made the
change, ignore this message.
`,
    html: page(
      'Your email address was changed',
      `<p>Hello {{name}},</p>
<p>The address of your account was changed from {{email}} to {{new_email}}.</p>
<p>If this was not you, undo the change:</p>
${button('Undo the change')}
<p>Undoing it moves the account back to {{email}} and signs it out everywhere; then reset your password from this address. The link works once and lasts {{expires_in}}. If you made the change, ignore this message.</p>`,
    ),
  },
  invitation: {
    subject: 'You are invited',
    text: `Hello {{name}},

An account has been made for you ({{email}}). Choose your password here:

{{link}}

The link works once and lasts {{expires_in}}.
`,
    html: page(
      'You are invited',
      `<p>Hello {{name}},</p>
<p>An account has been made for you ({{email}}).</p>
${button('Choose my password')}
<p>The link works once and lasts {{expires_in}}.</p>`,
    ),
  },
}

const PART_FILES = { subject: 'subject.txt', text: 'txt', html: 'html' } as const

/**
 * The embedded templates with those of `dir` in their place, file by file (`FLOW.subject.txt`,
 * `FLOW.txt`, `FLOW.html`): a directory may replace only the HTML of one flow.
 */
export function loadTemplates(dir: string | null): Record<MailFlow, Template> {
  if (dir === null) return EMBEDDED_TEMPLATES
  const loaded = {} as Record<MailFlow, Template>
  for (const [flow, embedded] of Object.entries(EMBEDDED_TEMPLATES) as [MailFlow, Template][]) {
    const part = (name: keyof Template) => {
      const file = join(dir, `${flow}.${PART_FILES[name]}`)
      return existsSync(file) ? readFileSync(file, 'utf8') : embedded[name]
    }
    loaded[flow] = { subject: part('subject').trim(), text: part('text'), html: part('html') }
  }
  return loaded
}

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (character) => HTML_ESCAPES[character] as string)
}

/**
 * A message from a template: every `{{name}}` replaced by its value, escaped in the HTML part
 * (a user's name is whatever the user typed). Subjects lose line breaks, so no value can add a
 * header. An unknown `{{name}}` is left as written.
 */
export function render(template: Template, values: TemplateValues): Template {
  const fill = (text: string, encode: (value: string) => string) =>
    text.replace(/\{\{\s*([a-z_]+)\s*\}\}/g, (whole, name: string) =>
      Object.hasOwn(values, name) ? encode(values[name as keyof TemplateValues]) : whole,
    )
  return {
    subject: fill(template.subject, (value) => value.replace(/[\r\n]+/g, ' ')),
    text: fill(template.text, (value) => value),
    html: fill(template.html, escapeHtml),
  }
}
