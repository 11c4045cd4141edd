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

/**
 * Where the URL's token is: on Discord's own hosts the segment after `webhooks/<id>/` (a `/slack` or `/github`
 * may follow it), on any other host of a `discord` endpoint (a relay) its last non-empty segment; -1: none.
 */
function tokenAt(url: URL, kind: EndpointKind): { segments: string[]; at: number } {
  const segments = url.pathname.split('/');
  if (DISCORD_HOST.test(url.hostname)) {
    const hook = segments.indexOf('webhooks');
    if (hook > 0 && (segments[hook + 2] ?? '') !== '') return { segments, at: hook + 2 };
  }
  if (kind !== 'discord') return { segments, at: -1 };
  let at = segments.length - 1;
  while (at > 0 && segments[at] === '') at--;
  return { segments, at: at > 0 ? at : -1 };
}

/** The URL as an operator sees it: a token masked, everything else as stored. */
export function maskedUrl(raw: string, kind: EndpointKind): string {
  const url = parse(raw);
  if (url === null) return raw;
  const { segments, at } = tokenAt(url, kind);
  if (at < 0) return raw;
  const token = segments[at]!;
  if (token.startsWith(MASK)) return raw;
  segments[at] = MASK + (token.length >= SHOWN_FROM ? token.slice(-4) : '');
  url.pathname = segments.join('/');
  return url.toString();
}

/** Whether a URL is a masked one (as maskedUrl shows it), which is no place to deliver to. */
export function isMaskedUrl(raw: string, kind: EndpointKind): boolean {
  const url = parse(raw);
  if (url === null) return false;
  const { segments, at } = tokenAt(url, kind);
  return at >= 0 && segments[at]!.startsWith(MASK);
}
