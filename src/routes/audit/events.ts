import type { Server } from 'bun'
import { Elysia } from 'elysia'
import type { FeedHub } from '../../audit/feed-hub'
import { actionMatches, type FeedEntry } from '../../audit/log'
import type { StreamRefusal, StreamSlots } from '../../audit/stream-slots'
import { principalKey } from '../../auth/principal'
import type { Config } from '../../config'
import { AppError } from '../../errors/errors'
import { documented, errorResponses, headerParameters } from '../../http/openapi-schemas'
import { QueryReader } from '../../http/query'
import type { AuthPlugin } from '../auth/plugin'
import { principalOf } from '../auth/principal'
import { guardOf } from '../authorisation'

const tags = ['audit']

export interface EventsRouteInputs {
  auth: AuthPlugin
  hub: Pick<FeedHub, 'subscribe'>
  /** The open streams, capped per credential and in all (one for every mount). */
  slots: Pick<StreamSlots, 'take'>
  /** Whether a Last-Event-ID is a place this feed hands out. */
  isPosition(text: string): boolean
  config: Pick<Config, 'usersAccess' | 'maxEventStreams' | 'maxEventStreamsPerCredential'>
}

/** Unread bytes a subscriber may have waiting before it is dropped (it resumes from the table). */
export const MAX_UNREAD_BYTES = 1 << 20
/**
 * How long one stream lasts: the client reconnects with Last-Event-ID (EventSource does it by
 * itself) and its credential is checked again, so a revoked key or session loses the feed.
 */
export const STREAM_LIFETIME_MS = 10 * 60 * 1000
/** What EventSource waits before reconnecting. */
const RETRY_MS = 3000
/** Types a filter may name. */
const MAX_TYPES = 20
const TYPE = /^[a-z][a-z0-9_]*\.([a-z][a-z0-9_]*|\*)$/

const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  // nginx would otherwise hold events back in its buffer.
  'x-accel-buffering': 'no',
}

/**
 * CONTRACT section 16's live feed: the audit log as Server-Sent Events, in commit order, each
 * with its place as `id`, resumable with Last-Event-ID on any instance.
 */
export function eventsRoutes(inputs: EventsRouteInputs, prefix: '' | '/v1' | '/v2') {
  const { auth, hub, slots, config } = inputs
  const rule = guardOf('GET /events', config.usersAccess)
  return new Elysia({ prefix })
    .use(auth)
    .get(
      '/events',
      ({ request, server, set }) => {
        const { from, types } = readRequest(request, inputs.isPosition)
        const slot = slots.take(principalKey(principalOf(set)))
        if ('retryAfterS' in slot)
          throw tooManyStreams(slot, config)
          // Quiet for up to a heartbeat at a time: the connection's idle timer must not end it.
        ;(server as Server<unknown> | null)?.timeout(request, 0)
        return new Response(eventStream(hub, from, types, slot.release), {
          headers: STREAM_HEADERS,
        })
      },
      {
        ...rule.hook,
        detail: {
          tags,
          summary: 'The audit log, live (audit:read)',
          description: `Server-Sent Events (text/event-stream): every audit event as it is committed, in commit order, as \`id: <place>\` and \`data: <the event as GET /audit shows it>\`. Reconnecting with \`Last-Event-ID\` (EventSource sends it by itself; or \`?last_event_id=\`) resumes after that event on any instance, without loss or repeat. Without it the stream starts with what happens next. \`types\` keeps only some actions (\`user.created,group.*\`). A comment line (\`: heartbeat\`) comes every 15 s; a stream ends after ${STREAM_LIFETIME_MS / 60_000} minutes (the client reconnects, and its credential is checked again); a client far behind gets its backlog at the pace it reads; once caught up, one that lets a megabyte pile up unread is disconnected and resumes from its last event. One credential (an API key, or a user with all its sessions) holds at most ${config.maxEventStreamsPerCredential} streams at once and the instance ${config.maxEventStreams} in all (--max-event-streams-per-credential, --max-event-streams); beyond them 429 RATE_LIMITED with Retry-After, the seconds until the oldest of those streams ends (closing one frees its place at once).`,
          security: rule.security,
          parameters: [
            {
              name: 'types',
              in: 'query',
              description: 'Comma-separated actions or kinds (user.*)',
              schema: { type: 'string' },
            },
            { name: 'last_event_id', in: 'query', schema: { type: 'string' } },
          ],
          ...headerParameters({
            name: 'Last-Event-ID',
            in: 'header',
            schema: { type: 'string' },
            description: 'The id of the last event received: the stream resumes after it',
          }),
          responses: {
            200: {
              description: 'An endless stream of events',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            ...documented(
              errorResponses('UNAUTHORIZED', 'FORBIDDEN', 'VALIDATION_ERROR', 'RATE_LIMITED'),
            ),
          },
        },
      },
    )
    .head(
      '/events',
      ({ request }) => {
        readRequest(request, inputs.isPosition)
        return new Response(null, { headers: STREAM_HEADERS })
      },
      { ...rule.hook, detail: { hide: true } },
    )
}

/** 429 RATE_LIMITED for a stream over a cap, saying which and how to get a place. */
function tooManyStreams(
  refusal: StreamRefusal,
  config: Pick<Config, 'maxEventStreams' | 'maxEventStreamsPerCredential'>,
): AppError {
  const message =
    refusal.over === 'holder'
      ? `This credential has ${config.maxEventStreamsPerCredential} event streams open, as many as it may: close one, or wait`
      : `This server has ${config.maxEventStreams} event streams open, as many as it takes: try again later`
  return new AppError('RATE_LIMITED', message, [], { 'retry-after': String(refusal.retryAfterS) })
}

/** Where to start and which types to send; one VALIDATION_ERROR naming each bad part. */
function readRequest(
  request: Request,
  isPosition: (text: string) => boolean,
): { from: string | null; types: string[] | null } {
  const query = new QueryReader(request.url)
  const header = request.headers.get('last-event-id')
  const given = header === null || header === '' ? query.string('last_event_id') : header
  const from = given === undefined || given === '' ? null : given
  if (from !== null && !isPosition(from)) {
    query.reject('Last-Event-ID', 'is not an id this feed sent', from.slice(0, 200))
  }
  const text = query.string('types', { maxLength: 1000 })
  const types = text === undefined ? null : text.split(',').map((type) => type.trim())
  if (types !== null && (types.length > MAX_TYPES || types.some((type) => !TYPE.test(type)))) {
    query.reject(
      'types',
      `must be up to ${MAX_TYPES} actions or kinds, comma-separated (user.created,group.*)`,
      text,
    )
  }
  query.assertValid()
  return { from, types }
}

const encoder = new TextEncoder()

/**
 * One subscriber's stream: frames as the hub delivers, ended by the client, the hub or time;
 * `release` gives its slot back whichever ends it.
 */
function eventStream(
  hub: Pick<FeedHub, 'subscribe'>,
  from: string | null,
  types: string[] | null,
  release: () => void,
): ReadableStream<Uint8Array> {
  let ended = false
  let unsubscribe = () => {}
  let lifetime: Timer | undefined
  /** The catch-up waiting for the client to read (resolved by `pull`, or by the end). */
  let waiting: (() => void) | null = null
  const wakeWaiting = () => {
    const wake = waiting
    waiting = null
    wake?.()
  }
  const matches = (entry: FeedEntry) =>
    types === null || types.some((type) => actionMatches(entry.event.action, type))
  return new ReadableStream<Uint8Array>(
    {
      async start(controller) {
        const end = () => {
          if (ended) return
          ended = true
          clearTimeout(lifetime)
          wakeWaiting()
          unsubscribe()
          release()
          try {
            controller.close()
          } catch {
            // Already closed by the client's going away.
          }
        }
        /** Queues text; false when the client has let too much pile up unread. */
        const write = (text: string): boolean => {
          if (ended) return false
          controller.enqueue(encoder.encode(text))
          return (controller.desiredSize ?? 0) > -MAX_UNREAD_BYTES
        }
        write(`retry: ${RETRY_MS}\n\n`)
        lifetime = setTimeout(end, STREAM_LIFETIME_MS)
        const subscribed = hub.subscribe(from, {
          deliver(entries) {
            let text = ''
            for (const entry of entries) {
              if (matches(entry))
                text += `id: ${entry.position}\ndata: ${JSON.stringify(entry.event)}\n\n`
            }
            return text === '' || write(text)
          },
          ready() {
            // Below the queue's high-water mark the client keeps up; above it, `pull` says when
            // it has read down to it again.
            if (ended || (controller.desiredSize ?? 0) > 0) return Promise.resolve()
            return new Promise<void>((resolve) => {
              waiting = resolve
            })
          },
          heartbeat: () => write(': heartbeat\n\n'),
          close: end,
        })
        // The feed could not be read (the database did not answer): end, so the slot is free
        // and the client comes back after `retry`.
        unsubscribe = await subscribed.catch(() => {
          end()
          return () => {}
        })
        if (ended) unsubscribe()
      },
      /** The client read the queue down below its high-water mark: the catch-up may go on. */
      pull() {
        wakeWaiting()
      },
      cancel() {
        ended = true
        clearTimeout(lifetime)
        wakeWaiting()
        unsubscribe()
        release()
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }),
  )
}
