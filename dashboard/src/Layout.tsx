import { createContext } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import { get, type Page } from './api';
import type { AppRecord } from './types';
import { Link, match, navigate, useLocation } from './router';
import { useSession } from './session';
import { Account } from './pages/Account';
import { AppSettings, AppsPage } from './pages/Apps';
import { Audit } from './pages/Audit';
import { Bans } from './pages/Bans';
import { Content } from './pages/Content';
import { Keys } from './pages/Keys';
import { Licenses } from './pages/Licenses';
import { Operators } from './pages/Operators';
import { Overview } from './pages/Overview';
import { Templates } from './pages/Templates';
import { Tokens } from './pages/Tokens';
import { UserDetail, Users } from './pages/Users';
import { Webhooks } from './pages/Webhooks';

const LAST_APP = 'tollgate.dashboard.app';

interface AppsState { apps: AppRecord[]; refresh(): void }
const AppsContext = createContext<AppsState>({ apps: [], refresh: () => undefined });
export const useApps = () => useContext(AppsContext);

type Route = [pattern: string, title: string, render: (p: Record<string, string>) => preact.JSX.Element];
const ROUTES: Route[] = [
  ['/apps', 'Applications', () => <AppsPage />],
  ['/apps/:app', 'Overview', (p) => <Overview appId={p.app!} />],
  ['/apps/:app/settings', 'Settings', (p) => <AppSettings appId={p.app!} />],
  ['/apps/:app/licenses', 'Licenses', (p) => <Licenses appId={p.app!} />],
  ['/apps/:app/templates', 'Templates', (p) => <Templates appId={p.app!} />],
  ['/apps/:app/users', 'Users', (p) => <Users appId={p.app!} />],
  ['/apps/:app/users/:user', 'User', (p) => <UserDetail appId={p.app!} userId={p.user!} />],
  ['/apps/:app/content', 'Variables and files', (p) => <Content appId={p.app!} />],
  ['/apps/:app/bans', 'Bans', (p) => <Bans appId={p.app!} />],
  ['/apps/:app/keys', 'Signing keys', (p) => <Keys appId={p.app!} />],
  ['/apps/:app/webhooks', 'Webhooks', (p) => <Webhooks appId={p.app!} />],
  ['/tokens', 'Admin tokens', () => <Tokens />],
  ['/operators', 'Operators', () => <Operators />],
  ['/audit', 'Audit log', () => <Audit />],
  ['/account', 'Your account', () => <Account />],
];

const APP_PAGES: [suffix: string, label: string][] = [
  ['', 'Overview'], ['/users', 'Users'], ['/licenses', 'Licenses'], ['/templates', 'Templates'], ['/content', 'Variables and files'],
  ['/bans', 'Bans'], ['/keys', 'Signing keys'], ['/webhooks', 'Webhooks'], ['/settings', 'Settings'],
];

export function Layout() {
  const session = useSession();
  const { path } = useLocation();
  const [apps, setApps] = useState<AppRecord[]>([]);
  const [appsTick, setAppsTick] = useState(0);
  const [menuOpen, setMenuOpen] = useState(false);
  const main = useRef<HTMLElement>(null);
  const shownPath = useRef<string | null>(null);

  useEffect(() => {
    // The picker lists the first 100 applications; the Applications page pages through all of them.
    get<Page<AppRecord>>('/apps?limit=100').then((page) => setApps(page.items), () => setApps([]));
  }, [appsTick]);

  const found = ROUTES.map(([pattern, title, render]) => ({ title, render, params: match(pattern, path) })).find((r) => r.params);
  const appId = found?.params?.app;
  useEffect(() => {
    if (appId) localStorage.setItem(LAST_APP, appId);
  }, [appId]);

  useEffect(() => {
    if (path === '/' || path === '') {
      const last = localStorage.getItem(LAST_APP);
      navigate(last ? `/apps/${last}` : '/apps', true);
    }
  }, [path]);

  const app = apps.find((a) => a.id === appId);
  useEffect(() => {
    document.title = `${found?.title ?? 'Not found'}${app ? ' · ' + app.name : ''} · Tollgate`;
  }, [path, app?.name]);

  useEffect(() => {
    setMenuOpen(false);
    // Move focus to the new page so keyboard and screen-reader users start at its top. Only when the
    // operator went from one page to another: not on the first render (a reload or a bookmark), nor on
    // the redirect from /dashboard/ to the last application, which is still the first page shown.
    // preventScroll: navigate() has put the window at the top, header included; focusing <main>
    // must not scroll the header away.
    const previous = shownPath.current;
    shownPath.current = path;
    if (previous !== null && previous !== '/' && previous !== '' && previous !== path) main.current?.focus({ preventScroll: true });
  }, [path]);

  const pickerApp = appId ?? localStorage.getItem(LAST_APP) ?? '';
  const isOwner = session.operator.role === 'owner';

  return (
    <AppsContext.Provider value={{ apps, refresh: () => setAppsTick((n) => n + 1) }}>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <Link href="/" class="brand">Tollgate</Link>
        <label class="app-picker">
          <span class="visually-hidden">Application</span>
          <select
            value={apps.some((a) => a.id === pickerApp) ? pickerApp : ''}
            onChange={(e) => {
              const id = e.currentTarget.value;
              if (!id) return navigate('/apps');
              const rest = appId ? path.replace(/^\/apps\/[^/]+/, '').replace(/^\/users\/.+$/, '/users') : '';
              navigate(`/apps/${id}${rest}`);
            }}
          >
            <option value="">All applications…</option>
            {apps.map((a) => <option value={a.id}>{a.name}</option>)}
          </select>
        </label>
        <button type="button" class="menu-toggle secondary" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>Menu</button>
        <div class="whoami">
          <Link href="/account" data-testid="whoami">{session.operator.username} <span class="badge">{session.operator.role}</span></Link>
          <button type="button" class="secondary" onClick={() => void session.signOut()}>Sign out</button>
        </div>
      </header>
      <div class="shell">
        <nav id="nav" class={menuOpen ? 'side open' : 'side'} aria-label="Main">
          {pickerApp && apps.some((a) => a.id === pickerApp) && (
            <>
              <p class="nav-heading">{apps.find((a) => a.id === pickerApp)?.name}</p>
              <ul>
                {APP_PAGES.map(([suffix, label]) => {
                  const href = `/apps/${pickerApp}${suffix}`;
                  const current = path === href || (suffix === '/users' && path.startsWith(href + '/'));
                  return <li><Link href={href} aria-current={current ? 'page' : undefined}>{label}</Link></li>;
                })}
              </ul>
            </>
          )}
          <p class="nav-heading">Service</p>
          <ul>
            <li><Link href="/apps" aria-current={path === '/apps' ? 'page' : undefined}>Applications</Link></li>
            <li><Link href="/tokens" aria-current={path === '/tokens' ? 'page' : undefined}>Admin tokens</Link></li>
            {isOwner && <li><Link href="/operators" aria-current={path === '/operators' ? 'page' : undefined}>Operators</Link></li>}
            <li><Link href="/audit" aria-current={path === '/audit' ? 'page' : undefined}>Audit log</Link></li>
            <li><Link href="/account" aria-current={path === '/account' ? 'page' : undefined}>Your account</Link></li>
          </ul>
        </nav>
        <main id="main" ref={main} tabIndex={-1}>
          {found ? found.render(found.params!) : <NotFound />}
        </main>
      </div>
    </AppsContext.Provider>
  );
}

function NotFound() {
  return (
    <>
      <h1>Page not found</h1>
      <p>There is no dashboard page at this address. <Link href="/apps">Go to the applications</Link>.</p>
    </>
  );
}
