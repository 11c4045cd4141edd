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

/** Whether the URL's last path segment is a credential: every `discord` endpoint's, and any URL of Discord's own webhooks. */
function carriesToken(url: URL, kind: EndpointKind): boolean {
  return kind === 'discord' || (DISCORD_HOST.test(url.hostname) && /\/webhooks\/[^/]+\/[^/]+\/?$/.test(url.pathname));
}

/** The URL's path segments and the index of its last non-empty one (the token), or -1. */
function tokenAt(url: URL): { segments: string[]; at: number } {
  const segments = url.pathname.split('/');
  let at = segments.length - 1;
  while (at > 0 && segments[at] === '') at--;
  return { segments, at: at > 0 ? at : -1 };
}

/** The URL as an operator sees it: a token masked, everything else as stored. */
export function maskedUrl(raw: string, kind: EndpointKind): string {
  const url = parse(raw);
  if (url === null || !carriesToken(url, kind)) return raw;
  const { segments, at } = tokenAt(url);
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
  if (url === null || !carriesToken(url, kind)) return false;
  const { segments, at } = tokenAt(url);
  return at >= 0 && segments[at]!.startsWith(MASK);
}
