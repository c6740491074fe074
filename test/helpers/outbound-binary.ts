import { expect } from 'bun:test'
import { type RunningBinary, runBinary, startBinary } from './binary'
import { until } from './cluster'
import { startReceiver, verifyDelivery } from './receiver'

/** Where the compiled binary keeps its data for a scenario: flags for serve and for the CLI. */
export interface BinarySetup {
  serveFlags: string[]
  cliFlags: string[]
  env: Record<string, string>
  /** SIGKILL while a receiver hangs (on PostgreSQL the delivery then waits for its lease). */
  killWhileHanging: boolean
}

/**
 * Outbound webhooks as a user runs them, through the compiled binary: signed deliveries in
 * order; a failing receiver retried, then a manual retry; a receiver that is down across a
 * restart of roster; one that hangs while roster is killed; and an endpoint disabled once its
 * retry window has passed. The same steps on SQLite (test/bin) and PostgreSQL (test/postgres).
 */
export async function sendWebhooksThroughTheBinary(setup: BinarySetup): Promise<void> {
  await using receiver = await startReceiver('fail')
  const flags = [...setup.serveFlags, '--webhook-allow-private', '--webhook-retry-window', '20s']
  const key = (
    await runBinary(['keys', 'create', '--name', 'hooks', ...setup.cliFlags], { env: setup.env })
  ).stdout.trim()
  let server: RunningBinary = await startBinary(flags, { env: setup.env })
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  const makeUser = async (n: number) => {
    const made = await call('POST', '/users', { name: `User ${n}`, email: `u${n}@example.com` })
    expect(made.status).toBe(201)
    return String(((await made.json()) as { id: number }).id)
  }
  const delivered = () => receiver.answered.map((entry) => entry.payload.data.target.id)
  try {
    const created = await call('POST', '/webhook-endpoints', {
      url: receiver.url,
      events: ['user.created'],
    })
    expect(created.status).toBe(201)
    const endpoint = (await created.json()) as { id: number; secret: string }
    const deliveries = async () =>
      (
        (await (await call('GET', `/webhook-endpoints/${endpoint.id}/deliveries`)).json()) as {
          data: {
            id: number
            status: string
            attempts: number
            last_error: string | null
            payload: { data: { target: { id: string } } }
          }[]
        }
      ).data

    // Failing: the first is tried, and tried again 5 s later; the others wait behind it.
    const ids = [await makeUser(1), await makeUser(2), await makeUser(3)]
    await until(() => receiver.received.length >= 2, 15_000)
    expect(new Set(receiver.received.map((entry) => entry.headers['webhook-id'])).size).toBe(1)
    const first = (await deliveries()).at(-1)
    expect(first).toMatchObject({ status: 'pending', last_error: 'HTTP 500' })
    // Answering again, and retried by hand: the three arrive, in order, signed.
    receiver.mode = 'ok'
    expect(
      (await call('POST', `/webhook-endpoints/${endpoint.id}/deliveries/${first?.id}/retry`))
        .status,
    ).toBe(200)
    await receiver.until(3)
    expect(delivered()).toEqual(ids)
    for (const entry of receiver.answered) verifyDelivery(entry, endpoint.secret)

    // The receiver is down across a restart of roster: the delivery waits, then goes, once.
    await receiver.down()
    const fourth = await makeUser(4)
    const forFourth = async () =>
      (await deliveries()).find((delivery) => delivery.payload.data.target.id === fourth)
    await until(async () => (await forFourth())?.attempts === 1, 10_000)
    expect((await forFourth())?.last_error).toMatch(/refused|ECONNREFUSED|Connection/i)
    expect(await server.stop('SIGTERM')).toBe(0)
    receiver.up()
    server = await startBinary(flags, { env: setup.env })
    await receiver.until(4, 20_000)
    expect(delivered()).toEqual([...ids, fourth])

    if (setup.killWhileHanging) {
      // Killed while the receiver hangs: nothing was recorded, so it is sent again after.
      receiver.mode = 'hang'
      const fifth = await makeUser(5)
      await until(() => receiver.received.at(-1)?.payload.data.target.id === fifth, 10_000)
      await server.stop('SIGKILL')
      receiver.mode = 'ok'
      server = await startBinary(flags, { env: setup.env })
      await receiver.until(5, 20_000)
      expect(delivered()).toEqual([...ids, fourth, fifth])
    }

    // Failing for the whole window (20 s here): the delivery fails and the endpoint is disabled.
    receiver.mode = 'fail'
    await makeUser(6)
    await until(
      async () =>
        (
          (await (await call('GET', `/webhook-endpoints/${endpoint.id}`)).json()) as {
            status: string
          }
        ).status === 'disabled',
      40_000,
    )
    const disabled = (await (await call('GET', `/webhook-endpoints/${endpoint.id}`)).json()) as {
      disabled_reason: string
    }
    expect(disabled.disabled_reason).toMatch(
      /^Every attempt to deliver evt_\d+ failed for \d+ seconds \(last: HTTP 500\)$/,
    )
    expect((await deliveries())[0]).toMatchObject({ status: 'failed', attempts: 3 })
  } finally {
    await server.stop()
  }
}
