/** Small pieces every page uses: errors, notices, paging, times. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { messageOf, type Page } from '../api';

export const PAGE_SIZE = 25;

export function ErrorBox({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  return <p class="error" role="alert" data-testid="error">{messageOf(error)}</p>;
}

let pushNotice: ((text: string) => void) | null = null;

/** A short confirmation that an action worked, read out by screen readers. */
export function notify(text: string): void {
  pushNotice?.(text);
}

export function NoticeHost() {
  const [text, setText] = useState('');
  const timer = useRef<number>(0);
  useEffect(() => {
    pushNotice = (next) => {
      setText(next);
      clearTimeout(timer.current);
      timer.current = window.setTimeout(() => setText(''), 6000);
    };
    return () => void (pushNotice = null);
  }, []);
  return <div class={text ? 'notice shown' : 'notice'} role="status" aria-live="polite" data-testid="notice">{text}</div>;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function when(iso: string | null | undefined, never = '—'): string {
  if (!iso) return never;
  const date = new Date(iso);
  if (date.getUTCFullYear() >= 9999) return 'forever';
  return dateTime.format(date);
}

/** A duration in minutes as people say it: days, hours or minutes. */
export function minutesText(minutes: number): string {
  if (minutes % 1440 === 0) return `${minutes / 1440} day${minutes === 1440 ? '' : 's'}`;
  if (minutes % 60 === 0) return `${minutes / 60} h`;
  return `${minutes} min`;
}

export function Time({ at, never }: { at: string | null | undefined; never?: string }) {
  if (!at) return <>{never ?? '—'}</>;
  return <time dateTime={at} title={at}>{when(at, never)}</time>;
}

/** A datetime-local input's value (local time) as the ISO instant the API takes, or undefined. */
export function isoFromLocal(value: string): string | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** The value once it has stopped changing for `ms`: a search box asks the server once per pause, not per key. */
export function useDebounced<T>(value: T, ms = 300): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

export interface Paged<T> {
  items: T[];
  total: number | undefined;
  pageNumber: number;
  loading: boolean;
  error: unknown;
  hasNext: boolean;
  next(): void;
  previous(): void;
  reload(): void;
}

/**
 * One page of a server-side list at a time (cursor paging): the browser never holds a whole
 * table, so a list of 100,000 licenses costs what a list of 25 does. `key` restarts at the
 * first page when a filter changes.
 */
export function usePaged<T>(load: (cursor: string | null) => Promise<Page<T>>, key: string): Paged<T> {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [page, setPage] = useState<Page<T> | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => setCursors([null]), [key]);

  const cursor = cursors[cursors.length - 1] ?? null;
  useEffect(() => {
    let live = true;
    setLoading(true);
    loadRef.current(cursor).then(
      (answer) => { if (live) { setPage(answer); setError(null); setLoading(false); } },
      (failure: unknown) => { if (live) { setError(failure); setLoading(false); } },
    );
    return () => void (live = false);
  }, [cursor, cursors.length, key, tick]);

  return {
    items: page?.items ?? [],
    total: page?.total,
    pageNumber: cursors.length,
    loading,
    error,
    hasNext: Boolean(page?.next_cursor),
    next: () => page?.next_cursor && setCursors([...cursors, page.next_cursor]),
    previous: () => cursors.length > 1 && setCursors(cursors.slice(0, -1)),
    reload: useCallback(() => setTick((n) => n + 1), []),
  };
}

export function Pager<T>({ paged, noun }: { paged: Paged<T>; noun: string }) {
  const shown = paged.items.length;
  const first = (paged.pageNumber - 1) * PAGE_SIZE + (shown ? 1 : 0);
  return (
    <nav class="pager" aria-label={`Pages of ${noun}`}>
      <span data-testid="pager-status">
        {paged.loading && !shown ? 'Loading…' : shown ? `${first}–${first + shown - 1}${paged.total !== undefined ? ` of ${paged.total.toLocaleString()}` : ''} ${noun}` : `No ${noun}`}
      </span>
      <button type="button" class="secondary" onClick={paged.previous} disabled={paged.pageNumber <= 1 || paged.loading}>Previous</button>
      <button type="button" class="secondary" onClick={paged.next} disabled={!paged.hasNext || paged.loading}>Next</button>
    </nav>
  );
}

export function Table({ caption, children, empty }: { caption: string; children: ComponentChildren; empty?: boolean }) {
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={caption}>
      <table>
        <caption class="visually-hidden">{caption}</caption>
        {children}
      </table>
      {empty && <p class="empty">Nothing here yet.</p>}
    </div>
  );
}

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card">
      <div class="card-head">
        <h2>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}

/** Runs an action, showing the server's detail on failure and a notice on success. */
export function useAction(): { busy: boolean; error: unknown; run: (work: () => Promise<unknown>, done?: string) => Promise<boolean>; clear(): void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (work: () => Promise<unknown>, done?: string) => {
    setBusy(true);
    setError(null);
    try {
      await work();
      if (done) notify(done);
      return true;
    } catch (failure) {
      setError(failure);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, clear: () => setError(null) };
}
