import { useEffect, useState } from 'preact/hooks'
import { call } from '../api'
import {
  CursorPager,
  ErrorNote,
  Field,
  formatDate,
  ListTable,
  useCursorView,
  useLoad,
} from '../components'
import { type FeedState, follow } from '../feed'

interface AuditEvent {
  id: string
  at: string
  actor: { type: string; id: string | null }
  action: string
  target: { type: string; id: string | null }
  request_id: string | null
  ip: string | null
  changes: Record<string, { before: unknown; after: unknown } | { changed: true }> | null
}

interface AuditPage {
  data: AuditEvent[]
  pagination: { limit: number; next_cursor: string | null }
}

// A type, not an interface: the URL's view (useCursorView) takes string records.
type Filters = {
  action: string
  actorType: string
  targetType: string
  targetId: string
}

const ACTOR_TYPES = ['user', 'api_key', 'scim', 'cli', 'webhook', 'system'] as const
const NO_FILTERS: Filters = { action: '', actorType: '', targetType: '', targetId: '' }
/** Live events kept above the first page. */
const MAX_LIVE = 100

const LIVE_TEXT: Record<FeedState, string> = {
  connecting: 'Connecting to the live feed…',
  live: 'Live: new events appear at the top as they happen.',
  reconnecting: 'The live feed was interrupted; reconnecting…',
  stopped: 'The live feed is off.',
}

function queryOf(filters: Filters): URLSearchParams {
  const query = new URLSearchParams({ limit: '20' })
  if (filters.action !== '') query.set('action', filters.action)
  if (filters.actorType !== '') query.set('actor_type', filters.actorType)
  if (filters.targetType !== '') query.set('target_type', filters.targetType)
  if (filters.targetId !== '') query.set('target_id', filters.targetId)
  return query
}

/** Whether a live event passes the filters (the feed filters by action only). */
function passes(event: AuditEvent, filters: Filters): boolean {
  return (
    (filters.actorType === '' || event.actor.type === filters.actorType) &&
    (filters.targetType === '' || event.target.type === filters.targetType) &&
    (filters.targetId === '' || event.target.id === filters.targetId)
  )
}

/**
 * The audit log, newest first, filterable, with what happens next added live from /events; the
 * filters and the page are kept in the URL.
 */
export function ActivityPage() {
  const list = useCursorView(NO_FILTERS)
  const { pages } = list
  const { cursor } = pages
  const { action, actorType, targetType, targetId } = list.view
  const filters: Filters = { action, actorType, targetType, targetId }
  const [draft, setDraft] = useState<Filters>(filters)
  // Back, Forward or a shared link change the filters: the fields show them.
  useEffect(() => setDraft(filters), [action, actorType, targetType, targetId])
  const { data, error } = useLoad(async () => {
    const query = queryOf(filters)
    if (cursor !== null) query.set('cursor', cursor)
    return (await call<AuditPage>(`/audit?${query}`)).body
  }, [action, actorType, targetType, targetId, cursor])
  const [live, setLive] = useState<AuditEvent[]>([])
  const [following, setFollowing] = useState(true)
  const [state, setState] = useState<FeedState>('stopped')

  // Live only on the first page: older pages hold still while someone reads them.
  const onFirstPage = cursor === null
  useEffect(() => {
    setLive([])
    if (!following || !onFirstPage) {
      setState('stopped')
      return
    }
    const types = filters.action === '' ? '' : `?types=${encodeURIComponent(filters.action)}`
    return follow(
      `/events${types}`,
      (frame) => {
        const event = JSON.parse(frame.data) as AuditEvent
        if (passes(event, filters)) setLive((shown) => [event, ...shown].slice(0, MAX_LIVE))
      },
      setState,
    )
  }, [following, onFirstPage, action, actorType, targetType, targetId])

  const apply = (event: Event) => {
    event.preventDefault()
    list.filter({ ...draft, action: draft.action.trim(), targetId: draft.targetId.trim() })
  }
  const shown = data === null ? [] : dedupe([...live, ...data.data])

  return (
    <>
      <form class="toolbar filters" onSubmit={apply} aria-label="Filter the activity">
        <Field
          label="Action"
          name="action"
          value={draft.action}
          hint="user.updated, or a kind: user.*"
          onInput={(action) => setDraft({ ...draft, action })}
        />
        <p class="field">
          <label for="activity-actor">Who</label>
          <select
            id="activity-actor"
            value={draft.actorType}
            onChange={(event) =>
              setDraft({ ...draft, actorType: (event.currentTarget as HTMLSelectElement).value })
            }
          >
            <option value="">Anyone</option>
            {ACTOR_TYPES.map((type) => (
              <option key={type} value={type}>
                {type}
              </option>
            ))}
          </select>
        </p>
        <Field
          label="Target type"
          name="target-type"
          value={draft.targetType}
          hint="user, group, api_key, upload…"
          onInput={(targetType) => setDraft({ ...draft, targetType })}
        />
        <Field
          label="Target id"
          name="target-id"
          value={draft.targetId}
          onInput={(targetId) => setDraft({ ...draft, targetId })}
        />
        <button type="submit" class="primary">
          Show
        </button>
      </form>
      <p class="choices">
        <label>
          <input
            type="checkbox"
            checked={following}
            onChange={(event) => setFollowing((event.currentTarget as HTMLInputElement).checked)}
          />{' '}
          Follow live
        </label>
      </p>
      <p class="notice" role="status" aria-live="polite">
        {onFirstPage ? LIVE_TEXT[state] : 'An older page: the live feed shows on the first.'}
      </p>
      <ErrorNote error={error} />
      {data !== null && (
        <>
          <ListTable
            class="activity"
            caption={<>Audit events, newest first</>}
            columns={['When', 'Who', 'Action', 'Target', 'Changes', 'From']}
          >
            {shown.map((event) => (
              <tr key={event.id}>
                <td>{formatDate(event.at)}</td>
                <td>{actorText(event.actor)}</td>
                <td>
                  <code>{event.action}</code>
                </td>
                <td>
                  {event.target.type}
                  {event.target.id === null ? '' : ` ${event.target.id}`}
                </td>
                <td>
                  <Changes changes={event.changes} />
                </td>
                <td>
                  {event.ip ?? '—'}
                  {event.request_id !== null && (
                    <small class="request-id">
                      <br />
                      {event.request_id}
                    </small>
                  )}
                </td>
              </tr>
            ))}
          </ListTable>
          {shown.length === 0 && <p>No events match.</p>}
          <CursorPager label="Pages" pages={pages} next={data.pagination.next_cursor} showNewest />
        </>
      )}
    </>
  )
}

/** Live events that the reloaded page also holds appear once. */
function dedupe(events: AuditEvent[]): AuditEvent[] {
  const seen = new Set<string>()
  return events.filter((event) => {
    if (seen.has(event.id)) return false
    seen.add(event.id)
    return true
  })
}

function actorText(actor: AuditEvent['actor']): string {
  if (actor.id === null) return actor.type === 'user' ? 'someone not signed in' : actor.type
  return `${actor.type} ${actor.id}`
}

/** Each changed field as `field: before → after` (a secret only as changed). */
function Changes(props: { changes: AuditEvent['changes'] }) {
  if (props.changes === null) return <>—</>
  return (
    <ul class="changes">
      {Object.entries(props.changes).map(([field, change]) => (
        <li key={field}>
          <strong>{field}</strong>:{' '}
          {'changed' in change
            ? 'changed'
            : `${shownValue(change.before)} → ${shownValue(change.after)}`}
        </li>
      ))}
    </ul>
  )
}

function shownValue(value: unknown): string {
  if (value === null || value === undefined) return '—'
  return typeof value === 'string' ? value : JSON.stringify(value)
}
