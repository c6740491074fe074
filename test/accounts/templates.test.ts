import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { EMBEDDED_TEMPLATES, loadTemplates, render } from '../../src/accounts/templates'
import { MAIL_FLOWS } from '../../src/mail/outbox'
import { tempDir } from '../helpers/app'

const values = {
  name: '<script>alert("x")</script> & Co',
  email: 'ada@example.com',
  link: 'https://roster.example/auth/password-reset?token=rat_abc&x="1"',
  expires_in: '15 minutes',
  code: '',
  new_email: '',
}

describe('mail templates', () => {
  test('every flow has a subject, a text and an HTML template that carry the link', () => {
    for (const flow of MAIL_FLOWS) {
      const template = EMBEDDED_TEMPLATES[flow]
      expect(template.subject.length).toBeGreaterThan(0)
      if (flow !== 'email-changed') {
        expect(template.text).toContain('{{link}}')
        expect(template.html).toContain('href="{{link}}"')
      }
    }
  })

  test('the HTML part escapes every value; the text part keeps it as typed', () => {
    const message = render(EMBEDDED_TEMPLATES['password-reset'], values)
    expect(message.html).not.toContain('<script>')
    expect(message.html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co')
    expect(message.html).toContain(
      'href="https://roster.example/auth/password-reset?token=rat_abc&amp;x=&quot;1&quot;"',
    )
    expect(message.text).toContain('Hello <script>alert("x")</script> & Co,')
  })

  test('a value cannot add a header through the subject', () => {
    const message = render(
      { subject: 'Hello {{name}}', text: '', html: '' },
      {
        ...values,
        name: 'Ada\r\nBcc: everyone@example.com',
      },
    )
    expect(message.subject).toBe('Hello Ada Bcc: everyone@example.com')
  })

  test('--mail-templates replaces the embedded templates file by file; unknown placeholders stay', () => {
    using dir = tempDir()
    writeFileSync(join(dir.path, 'password-reset.subject.txt'), 'Reset for {{name}}\n')
    writeFileSync(join(dir.path, 'password-reset.html'), '<p>{{link}} {{unknown}}</p>')
    const templates = loadTemplates(dir.path)
    expect(templates['password-reset'].subject).toBe('Reset for {{name}}')
    expect(templates['password-reset'].text).toBe(EMBEDDED_TEMPLATES['password-reset'].text)
    expect(templates['verify-email']).toEqual(EMBEDDED_TEMPLATES['verify-email'])
    expect(render(templates['password-reset'], values).html).toContain('{{unknown}}')
  })
})
