import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, get, onSessionLost, setCsrfToken, type Operator, type SessionAnswer } from './api';
import { DialogHost } from './components/dialog';
import { NoticeHost } from './components/ui';
import { Layout } from './Layout';
import { Login } from './pages/Login';
import { SessionContext, type SessionState } from './session';

interface Signed { operator: Operator; idleTimeoutSeconds: number }

export function App() {
  const [signed, setSigned] = useState<Signed | null>(null);
  const [checking, setChecking] = useState(true);
  const [reason, setReason] = useState<string | null>(null);

  const accept = (answer: SessionAnswer) => {
    setCsrfToken(answer.csrf_token);
    setReason(null);
    setSigned({ operator: answer.operator, idleTimeoutSeconds: answer.idle_timeout_seconds });
  };

  useEffect(() => {
    onSessionLost((detail) => {
      setCsrfToken(null);
      setSigned(null);
      setReason(`You were signed out: ${detail}`);
    });
    get<SessionAnswer>('/session').then(accept, (failure: unknown) => {
      if (failure instanceof ApiError && failure.code === 'session_expired') setReason(`You were signed out: ${failure.detail}`);
      else if (!(failure instanceof ApiError && failure.status === 401)) setReason(failure instanceof Error ? failure.message : String(failure));
    }).finally(() => setChecking(false));
  }, []);

  if (checking) return <p class="loading-page" role="status">Loading…</p>;

  const session: SessionState | null = signed && {
    operator: signed.operator,
    idleTimeoutSeconds: signed.idleTimeoutSeconds,
    update: (change) => setSigned({ ...signed, operator: { ...signed.operator, ...change } }),
    signOut: async () => {
      try {
        await api('DELETE', '/session');
      } finally {
        setCsrfToken(null);
        setSigned(null);
        setReason('You signed out.');
      }
    },
  };

  return (
    <>
      {session ? (
        <SessionContext.Provider value={session}>
          <Layout />
        </SessionContext.Provider>
      ) : (
        <Login onSignedIn={accept} reason={reason} />
      )}
      <DialogHost />
      <NoticeHost />
    </>
  );
}
