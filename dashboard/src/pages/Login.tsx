import { useRef, useState } from 'preact/hooks';
import { api, ApiError, type SessionAnswer } from '../api';
import { ErrorBox } from '../components/ui';

/** Sign-in: username and password, then the authenticator code when the operator has TOTP on. */
export function Login({ onSignedIn, reason }: { onSignedIn: (answer: SessionAnswer) => void; reason: string | null }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [needsCode, setNeedsCode] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const codeInput = useRef<HTMLInputElement>(null);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = needsCode ? { username, password, totp: code.replace(/\s+/g, '') } : { username, password };
      onSignedIn(await api<SessionAnswer>('POST', '/session', body));
    } catch (failure) {
      if (failure instanceof ApiError && failure.code === 'totp_required') {
        setNeedsCode(true);
        setTimeout(() => codeInput.current?.focus(), 0);
      } else {
        setError(failure);
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="login" id="main">
      <form class="card login-card" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">Tollgate</h1>
        <p class="muted">Sign in to the operator dashboard.</p>
        {reason && !error && <p class="warning" role="status" data-testid="signed-out-reason">{reason}</p>}
        {!needsCode ? (
          <>
            <label class="field">
              <span>Username</span>
              <input name="username" autoComplete="username" required value={username} onInput={(e) => setUsername(e.currentTarget.value)} autoFocus />
            </label>
            <label class="field">
              <span>Password</span>
              <input name="password" type="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
            </label>
          </>
        ) : (
          <>
            <p>Enter the 6-digit code from your authenticator app for <strong>{username}</strong>.</p>
            <label class="field">
              <span>Authentication code</span>
              <input
                ref={codeInput} name="totp" inputMode="numeric" autoComplete="one-time-code" pattern="[0-9 ]{6,7}" required
                value={code} onInput={(e) => setCode(e.currentTarget.value)}
              />
            </label>
          </>
        )}
        <ErrorBox error={error} />
        <div class="actions">
          {needsCode && <button type="button" class="secondary" onClick={() => { setNeedsCode(false); setCode(''); setError(null); }}>Back</button>}
          <button type="submit" disabled={busy}>{busy ? 'Signing in…' : needsCode ? 'Verify' : 'Sign in'}</button>
        </div>
      </form>
    </main>
  );
}
