import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { call, onSignedOut, session } from './api'
import { ActivityPage } from './pages/activity'
import { EndpointsPage } from './pages/endpoints'
import { GroupsPage } from './pages/groups'
import { KeysPage } from './pages/keys'
import { MailOutboxPage } from './pages/mail'
import { OverviewPage } from './pages/overview'
import { SecurityPage } from './pages/security'
import { UploadsPage } from './pages/uploads'
import { UsersPage } from './pages/users'
import { WebhooksPage } from './pages/webhooks'
import { SignIn } from './sign-in'
import './console.css'

const PAGES = [
  { hash: '#/', title: 'Overview', Page: OverviewPage },
  { hash: '#/users', title: 'Users', Page: UsersPage },
  { hash: '#/groups', title: 'Groups', Page: GroupsPage },
  { hash: '#/keys', title: 'API keys', Page: KeysPage },
  { hash: '#/uploads', title: 'Uploads', Page: UploadsPage },
  { hash: '#/webhooks', title: 'Webhooks received', Page: WebhooksPage },
  { hash: '#/webhooks-sent', title: 'Webhooks sent', Page: EndpointsPage },
  { hash: '#/mail', title: 'Mail outbox', Page: MailOutboxPage },
  { hash: '#/activity', title: 'Activity', Page: ActivityPage },
  { hash: '#/security', title: 'Security', Page: SecurityPage },
] as const

function currentPage() {
  // A page's own view state follows its path in the fragment (#/users?q=ada&page=2).
  const path = location.hash.split('?')[0]
  return PAGES.find((page) => page.hash === path) ?? PAGES[0]
}

function App() {
  const [signedIn, setSignedIn] = useState(session.signedIn())
  const [reason, setReason] = useState<string | null>(null)
  const [page, setPage] = useState(currentPage)

  useEffect(() => {
    const follow = () => setPage(currentPage())
    addEventListener('hashchange', follow)
    addEventListener('popstate', follow)
    return () => {
      removeEventListener('hashchange', follow)
      removeEventListener('popstate', follow)
    }
  }, [])
  useEffect(
    () =>
      onSignedOut(() => {
        setReason(
          'roster no longer accepts this sign-in (the key was revoked, or the session ended). Sign in again.',
        )
        setSignedIn(false)
      }),
    [],
  )
  useEffect(() => {
    document.title = signedIn ? `${page.title} · roster console` : 'Sign in · roster console'
  }, [signedIn, page])

  if (!signedIn) {
    return (
      <SignIn
        reason={reason}
        onSignedIn={() => {
          setReason(null)
          setSignedIn(true)
        }}
      />
    )
  }
  const signOut = async () => {
    // An admin's session ends on the server too; a key is only forgotten here.
    const admin = session.admin() !== null
    if (admin) await call('/logout', { method: 'POST' }).catch(() => {})
    session.forget()
    setReason(admin ? 'Signed out.' : 'Signed out. The key has been forgotten.')
    setSignedIn(false)
  }
  const { Page } = page
  return (
    <>
      <header>
        <p class="brand">roster console</p>
        <nav aria-label="Sections">
          <ul>
            {PAGES.map((entry) => (
              <li key={entry.hash}>
                <a href={entry.hash} aria-current={entry === page ? 'page' : undefined}>
                  {entry.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <h1>{page.title}</h1>
        <Page />
      </main>
    </>
  )
}

const root = document.getElementById('console')
if (root !== null) render(<App />, root)
