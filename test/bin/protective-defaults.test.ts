import { describe, expect, test } from 'bun:test'
import { tempDir } from '../helpers/app'
import { requireBinary, startBinary, waitForStderr } from '../helpers/binary'

requireBinary()

describe('the binary protects by default (section 11)', () => {
  test('on every interface /users is protected unless asked for by name', async () => {
    using dir = tempDir()
    const server = await startBinary(['--host', '0.0.0.0', '--data-dir', dir.path])
    try {
      expect(server.stderr.join('\n')).toContain('/users protected')
      const port = new URL(server.url).port
      const anonymous = await fetch(`http://127.0.0.1:${port}/users`)
      expect(anonymous.status).toBe(401)
      expect((await anonymous.json()).error.code).toBe('UNAUTHORIZED')
    } finally {
      await server.stop()
    }
  })

  test('on loopback it is open, for localhost only: a rebinding name gets 421', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', dir.path])
    try {
      expect(server.stderr.join('\n')).toContain('/users open')
      const port = new URL(server.url).port
      expect((await fetch(`http://localhost:${port}/users`)).status).toBe(200)
      const rebound = await fetch(`http://127.0.0.1:${port}/users`, {
        method: 'POST',
        headers: { host: `rebind.attacker.example:${port}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Mallory', email: 'm@example.com' }),
      })
      expect(rebound.status).toBe(421)
      expect((await rebound.json()).error.code).toBe('MISDIRECTED_REQUEST')
      const list = await fetch(`http://127.0.0.1:${port}/users`)
      expect((await list.json()).pagination.total).toBe(0)
    } finally {
      await server.stop()
    }
  })

  test('open on every interface, asked for by name, warns', async () => {
    using dir = tempDir()
    const server = await startBinary([
      '--host',
      '0.0.0.0',
      '--users-access',
      'open',
      '--data-dir',
      dir.path,
    ])
    try {
      await waitForStderr(server, 'with /users open (asked for by name)')
    } finally {
      await server.stop()
    }
  })
})
