import { afterEach, describe, expect, test } from 'bun:test'
import type { Server } from 'bun'
import { Elysia } from 'elysia'
import { serveApp } from '../../src/http/serve-app'

let server: Server<unknown> | null = null
afterEach(() => {
  server?.stop(true)
  server = null
})

/** A small app with the shapes roster's routes have: static, with a parameter, a catch-all. */
function sampleApp() {
  let fallbackCalls = 0
  const app = new Elysia()
    .onRequest(({ set }) => {
      set.headers['x-seen-by-hook'] = 'yes'
    })
    .get('/things', () => ({ list: true }))
    .post('/things', ({ body }) => ({ created: body }))
    .get('/things/:id', ({ params }) => ({ id: params.id }))
    .get('/who', ({ request, server }) => ({ address: server?.requestIP(request)?.address }))
    .all('/*', ({ request }) => {
      fallbackCalls += 1
      return new Response(`fallback ${request.method} ${new URL(request.url).pathname}`, {
        status: 404,
      })
    })
  return { app, fallbacks: () => fallbackCalls }
}

async function start() {
  const { app, fallbacks } = sampleApp()
  server = serveApp(app, { hostname: '127.0.0.1', port: 0 })
  return { base: `http://127.0.0.1:${server.port}`, app, fallbacks }
}

describe('serving the app through Bun’s router', () => {
  test('static and parameter routes answer with the app’s hooks applied', async () => {
    const { base } = await start()
    const list = await fetch(`${base}/things`)
    expect(await list.json()).toEqual({ list: true })
    expect(list.headers.get('x-seen-by-hook')).toBe('yes')
    const one = await fetch(`${base}/things/42`)
    expect(await one.json()).toEqual({ id: '42' })
    const created = await fetch(`${base}/things`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    })
    expect(await created.json()).toEqual({ created: { a: 1 } })
  })

  test('an unknown path and an unrouted method reach the app’s own fetch (the catch-all)', async () => {
    const { base, fallbacks } = await start()
    const unknown = await fetch(`${base}/nowhere`)
    expect(unknown.status).toBe(404)
    expect(await unknown.text()).toBe('fallback GET /nowhere')
    const wrongMethod = await fetch(`${base}/things/7`, { method: 'DELETE' })
    expect(await wrongMethod.text()).toBe('fallback DELETE /things/7')
    expect(fallbacks()).toBe(2)
  })

  test('the app knows its server: a route reads the client’s address from it', async () => {
    const { base, app } = await start()
    expect(app.server).toBe(server)
    const who = await fetch(`${base}/who`)
    expect(await who.json()).toEqual({ address: '127.0.0.1' })
  })

  test('a route answers every request, not only the first (its handler is composed on the first)', async () => {
    const { base } = await start()
    for (let i = 0; i < 3; i++) {
      expect(await (await fetch(`${base}/things/${i}`)).json()).toEqual({ id: String(i) })
    }
  })
})
