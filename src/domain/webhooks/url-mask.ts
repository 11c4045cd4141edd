import type { EndpointKind } from '../../store/repositories/webhooks.js';

/**
 * A Discord webhook URL is its own credential: `https://discord.com/api/webhooks/<id>/<token>` lets
 * whoever holds it post to the channel as the app. Tollgate keeps the full URL (deliveries need it) but
 * shows it, to every operator and in the audit log, with the token masked to its last four characters:
 * `…/webhooks/<id>/****abcd`, enough to tell two endpoints apart (docs/decisions.md).
 */

const DISCORD_HOST = /^(?:(?:canary|ptb)\.)?discord(?:app)?\.com$/i;
/** What a masked segment starts with; a URL carrying it is one Tollgate showed, never one to send to. */
export const MASK = '****';
/** A token shorter than this shows nothing of itself (four characters of a short one say too much). */
const SHOWN_FROM = 16;

function parse(raw: string): URL | null {
  try {
    return new URL(raw);
  } catch {
    return null;
  }
}

/** The host as Discord's DNS answers it: `discord.com.` (a fully qualified name) is `discord.com`. */
const bareHost = (url: URL) => url.hostname.replace(/\.+$/, '');

/** The index of the next non-empty segment after `from` (`//` is one separator to a router), -1: none. */
function nextSegment(segments: string[], from: number): number {
  for (let i = from + 1; i < segments.length; i++) if (segments[i] !== '') return i;
  return -1;
}

/**
 * Where the URL's token is: on Discord's own hosts the segment after `webhooks/<id>/` (a `/slack` or `/github`
 * may follow it; empty segments skipped), on any other host of a `discord` endpoint (a relay) its last non-empty
 * segment; -1: none. A relay's query values are masked too (`relay` true): what a relay takes a token in is its
 * own business.
 */
function tokenAt(url: URL, kind: EndpointKind): { segments: string[]; at: number; relay: boolean } {
  const segments = url.pathname.split('/');
  if (DISCORD_HOST.test(bareHost(url))) {
    const hook = segments.findIndex((s) => s.toLowerCase() === 'webhooks');
    const id = hook > 0 ? nextSegment(segments, hook) : -1;
    const at = id > 0 ? nextSegment(segments, id) : -1;
    if (at > 0) return { segments, at, relay: false };
  }
  if (kind !== 'discord') return { segments, at: -1, relay: false };
  let at = segments.length - 1;
  while (at > 0 && segments[at] === '') at--;
  return { segments, at: at > 0 ? at : -1, relay: true };
}

/** A token as shown: MASK, then its last four characters when it is long enough for them to say little. */
const maskToken = (token: string) => MASK + (token.length >= SHOWN_FROM ? token.slice(-4) : '');

/**
 * The credential in a URL's user part, whatever the kind: its password, or a user name alone (`https://<key>@host`,
 * Basic auth with the key as the user). Saving such a URL is refused (egress.ts), but a row that came another way
 * (a restored or hand-edited database) must not show it either. A password shows nothing of itself.
 */
function maskUserinfo(url: URL): boolean {
  if (url.password !== '') {
    if (url.password.startsWith(MASK)) return false;
    url.password = MASK;
    return true;
  }
  if (url.username === '' || url.username.startsWith(MASK)) return false;
  url.username = maskToken(url.username);
  return true;
}

/** The URL as an operator sees it: a token masked (and a relay's query values, and a credential in its user part), everything else as stored. */
export function maskedUrl(raw: string, kind: EndpointKind): string {
  const url = parse(raw);
  if (url === null) return raw;
  const { segments, at, relay } = tokenAt(url, kind);
  const userinfo = maskUserinfo(url);
  if (at < 0 && !relay) return userinfo ? url.toString() : raw;
  if (at >= 0 && !segments[at]!.startsWith(MASK)) {
    segments[at] = maskToken(segments[at]!);
    url.pathname = segments.join('/');
  }
  // Rewritten only when a value is masked, so a query with nothing to hide (`?all`) is shown as stored.
  const shown = (value: string) => value === '' || value.startsWith(MASK);
  if (relay && [...url.searchParams.values()].some((v) => !shown(v))) {
    const query = new URLSearchParams();
    for (const [key, value] of url.searchParams) query.append(key, shown(value) ? value : maskToken(value));
    url.search = query.toString();
  }
  return url.toString();
}

/** Whether a URL is a masked one (as maskedUrl shows it), which is no place to deliver to. */
export function isMaskedUrl(raw: string, kind: EndpointKind): boolean {
  const url = parse(raw);
  if (url === null) return false;
  const { segments, at, relay } = tokenAt(url, kind);
  if (url.password.startsWith(MASK) || url.username.startsWith(MASK)) return true;
  if (at >= 0 && segments[at]!.startsWith(MASK)) return true;
  return relay && [...url.searchParams.values()].some((v) => v.startsWith(MASK));
}
