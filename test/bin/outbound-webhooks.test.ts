import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { tempDir } from '../helpers/app'
import { cleanEnv, requireBinary, runBinary, startBinary } from '../helpers/binary'
import { sendWebhooksThroughTheBinary } from '../helpers/outbound-binary'

setDefaultTimeout(120_000)
beforeAll(requireBinary)

describe('outbound webhooks through the compiled binary (SQLite)', () => {
  test('signed and in order; retried, resent by hand, kept across a restart and a SIGKILL; the endpoint disabled after its window', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    await sendWebhooksThroughTheBinary({
      serveFlags: data,
      cliFlags: data,
      env: cleanEnv(),
      killWhileHanging: true,
    })
  })

  test('without --webhook-allow-private a URL on this machine is refused, IPv6 forms carrying an IPv4 address too; --help names both flags', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    const key = (await runBinary(['keys', 'create', '--name', 'k', ...data])).stdout.trim()
    const server = await startBinary(data)
    try {
      const refused = {
        'http://127.0.0.1:9/hooks': '127.0.0.1 is not a global unicast address: loopback',
        'http://[::7f00:1]/hooks': 'IPv4-compatible, carrying 127.0.0.1: loopback',
        'http://[::ffff:0:7f00:1]/hooks': 'IPv4-translated (SIIT), carrying 127.0.0.1: loopback',
        'http://[::a9fe:a9fe]/latest/meta-data': 'carrying 169.254.169.254: link-local',
      }
      for (const [url, what] of Object.entries(refused)) {
        const answer = await fetch(`${server.url}/webhook-endpoints`, {
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ url, events: ['*'] }),
        })
        expect(answer.status).toBe(422)
        const body = (await answer.json()) as {
          error: { code: string; details: { field: string; message: string }[] }
        }
        expect(body.error.code).toBe('VALIDATION_ERROR')
        expect(body.error.details[0]?.field).toBe('url')
        expect(body.error.details[0]?.message).toContain(what)
        expect(body.error.details[0]?.message).toContain('--webhook-allow-private')
      }
    } finally {
      await server.stop()
    }
    const help = await runBinary(['serve', '--help'])
    expect(help.stdout).toContain('--webhook-allow-private')
    expect(help.stdout).toContain('--webhook-retry-window')
    const bad = await runBinary(['serve', ...data, '--webhook-retry-window', '2s'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--webhook-retry-window')
  })
})
