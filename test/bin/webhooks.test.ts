import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { tempDir } from '../helpers/app'
import { cleanEnv, requireBinary, runBinary, startBinary } from '../helpers/binary'

setDefaultTimeout(30_000)
beforeAll(requireBinary)

const SECRET = 'whsec_binary_test_secret'

/** What the openssl line of docs/webhooks.md computes: hex HMAC-SHA256 of "t.body" under the whole secret. */
function stripeSignature(body: string, secret = SECRET): string {
  const t = Math.floor(Date.now() / 1000)
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`
}

describe('webhooks through the compiled binary', () => {
  test('signed deliveries create users, survive a restart, and are listed; a forged one is refused', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    const env = cleanEnv({ ROSTER_WEBHOOK_SECRET: `old-secret,${SECRET}` })
    const key = (await runBinary(['keys', 'create', '--name', 'ci', ...data])).stdout.trim()
    const first = await startBinary(data, { env })
    expect(first.stderr.some((line) => line.includes('ROSTER_WEBHOOK_SECRET is not set'))).toBe(
      false,
    )
    const body = JSON.stringify({
      id: 'evt_bin_1',
      type: 'customer.created',
      data: { object: { email: 'hook@example.com', name: 'Hooked' } },
    })
    const ok = await fetch(`${first.url}/webhooks`, {
      method: 'POST',
      body,
      headers: { 'stripe-signature': stripeSignature(body) },
    })
    expect(await ok.json()).toEqual({ received: true })
    const forged = await fetch(`${first.url}/webhooks`, {
      method: 'POST',
      body,
      headers: { 'stripe-signature': stripeSignature(body, 'guess') },
    })
    expect(forged.status).toBe(400)
    await Bun.sleep(100)
    expect(await first.stop()).toBe(0)

    const second = await startBinary(data, { env })
    const again = await fetch(`${second.url}/webhooks`, {
      method: 'POST',
      body,
      headers: { 'stripe-signature': stripeSignature(body) },
    })
    expect(again.status).toBe(200)
    const users = (await (await fetch(`${second.url}/v2/users?email=hook@example.com`)).json()) as {
      data: { name: string }[]
    }
    expect(users.data.map((u) => u.name)).toEqual(['Hooked'])
    const list = (await (
      await fetch(`${second.url}/webhooks/events`, { headers: { 'x-api-key': key } })
    ).json()) as { data: { id: string; status: string }[] }
    expect(list.data).toEqual([expect.objectContaining({ id: 'evt_bin_1', status: 'processed' })])
    expect(await second.stop()).toBe(0)
  })

  test('without ROSTER_WEBHOOK_SECRET it says so at start and refuses every delivery', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', dir.path])
    await Bun.sleep(50)
    expect(server.stderr.some((line) => line.includes('ROSTER_WEBHOOK_SECRET is not set'))).toBe(
      true,
    )
    const body = '{"type":"x","data":{"object":{}}}'
    const reply = await fetch(`${server.url}/webhooks`, {
      method: 'POST',
      body,
      headers: { 'stripe-signature': stripeSignature(body) },
    })
    expect(reply.status).toBe(400)
    await server.stop()
  })
})
