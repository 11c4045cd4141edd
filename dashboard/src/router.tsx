/**
 * A small history router: the server answers index.html for every path under /dashboard/,
 * so each page has a real URL that can be bookmarked, reloaded and opened in a new tab.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/dashboard';
const listeners = new Set<() => void>();

/** The path after /dashboard, always starting with '/'; the query string separately. */
export function currentPath(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return path === '' ? '/' : path;
}

export function navigate(to: string, replace = false): void {
  const url = BASE + to;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  listeners.forEach((listener) => listener());
  if (!replace) window.scrollTo(0, 0);
}

addEventListener('popstate', () => listeners.forEach((listener) => listener()));

export function useLocation(): { path: string; search: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((n) => n + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return { path: currentPath(), search: new URLSearchParams(location.search) };
}

/** Matches '/apps/:app/users/:user' against a path; the named parts, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/').filter(Boolean);
  const got = path.split('/').filter(Boolean);
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (w.startsWith(':')) params[w.slice(1)] = decodeURIComponent(g);
    else if (w !== g) return null;
  }
  return params;
}

type LinkProps = { href: string; children: ComponentChildren; class?: string; 'aria-current'?: 'page' | undefined; 'aria-label'?: string; 'data-testid'?: string };

/** An ordinary link (open in a new tab works) that navigates in place on a plain click. */
export function Link({ href, children, ...rest }: LinkProps) {
  return (
    <a
      {...rest}
      href={BASE + href}
      onClick={(event) => {
        if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}
