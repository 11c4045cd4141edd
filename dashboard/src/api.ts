/**
 * Every call to the admin API. The session is a cookie the browser sends by itself; what the
 * page must add is the CSRF token from the session answer, on every request that changes
 * something (the server answers 403 csrf_failed without it).
 */
export const API = '/admin/v1';

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, readonly detail: string) {
    super(detail);
  }
}

export interface Operator { id: string; username: string; role: Role; totp_enabled: boolean }
export type Role = 'owner' | 'admin' | 'support' | 'viewer';
export interface SessionAnswer { operator: Operator; csrf_token: string; idle_timeout_seconds: number }
export interface Page<T> { items: T[]; next_cursor: string | null; total?: number }

let csrfToken: string | null = null;
let onSignedOut: ((reason: string) => void) | null = null;

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Called when the server says the session is gone (expired, or signed out elsewhere). */
export function onSessionLost(handler: (reason: string) => void): void {
  onSignedOut = handler;
}

async function errorOf(response: Response): Promise<ApiError> {
  let code = 'http_' + response.status;
  let detail = `The server answered ${response.status} ${response.statusText}`.trim();
  try {
    const body = (await response.json()) as { code?: unknown; detail?: unknown };
    if (typeof body.code === 'string') code = body.code;
    if (typeof body.detail === 'string') detail = body.detail;
  } catch {
    // Not JSON (a proxy's error page): keep the status line.
  }
  return new ApiError(response.status, code, detail);
}

const LOST = new Set(['session_expired', 'not_authenticated']);

function lost(error: ApiError, path: string): void {
  if (error.status === 401 && LOST.has(error.code) && !path.startsWith('/session')) onSignedOut?.(error.detail);
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  let response: Response;
  try {
    response = await fetch(API + path, {
      method, headers, credentials: 'same-origin', cache: 'no-store',
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The server could not be reached. Check your connection and try again.');
  }
  if (!response.ok) {
    const error = await errorOf(response);
    lost(error, path);
    throw error;
  }
  if (response.status === 204) return undefined as T;
  // A 202 may come without a body (a replayed webhook delivery): no body is no answer, not an error.
  const text = await response.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const get = <T>(path: string) => api<T>('GET', path);

/** A query string from the set values only (empty strings and undefined are left out). */
export function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') continue;
    search.set(key, String(value));
  }
  const text = search.toString();
  return text ? '?' + text : '';
}

/**
 * Sends a file as the raw request body with XMLHttpRequest, the one browser API that reports
 * upload progress (fetch does not).
 */
export function upload<T>(method: 'POST' | 'PUT', path: string, file: Blob, onProgress: (sent: number, total: number) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, API + path);
    xhr.setRequestHeader('content-type', 'application/octet-stream');
    xhr.setRequestHeader('accept', 'application/json');
    if (csrfToken) xhr.setRequestHeader('x-csrf-token', csrfToken);
    xhr.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : file.size);
    xhr.onerror = () => reject(new ApiError(0, 'network_error', 'The upload was interrupted: the server could not be reached.'));
    xhr.onload = () => {
      let body: { code?: unknown; detail?: unknown } | null = null;
      try {
        body = JSON.parse(xhr.responseText) as { code?: unknown; detail?: unknown };
      } catch {
        body = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) return resolve(body as T);
      const error = new ApiError(
        xhr.status,
        typeof body?.code === 'string' ? body.code : 'http_' + xhr.status,
        typeof body?.detail === 'string' ? body.detail : `The server answered ${xhr.status}`,
      );
      lost(error, path);
      reject(error);
    };
    xhr.send(file);
  });
}

export function messageOf(error: unknown): string {
  if (error instanceof ApiError) return error.detail;
  if (error instanceof Error) return error.message;
  return String(error);
}
