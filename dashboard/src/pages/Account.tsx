import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, Section, useAction } from '../components/ui';
import { ROLE_HELP } from '../roles';
import { useSession } from '../session';

interface Setup { secret: string; otpauth_uri: string; qr_svg: string }

/** The server's QR code as an image from a data: URI (img-src allows data:), never as injected markup. */
function qrSource(svg: string): string {
  return 'data:image/svg+xml;base64,' + btoa(unescape(encodeURIComponent(svg)));
}

export function Account() {
  const session = useSession();
  const me = session.operator;
  const [setup, setSetup] = useState<Setup | null>(null);
  const [code, setCode] = useState('');
  const action = useAction();

  const start = () => action.run(async () => setSetup(await api<Setup>('POST', '/session/totp')));
  const confirm = async (event: Event) => {
    event.preventDefault();
    if (await action.run(() => api('POST', '/session/totp/confirm', { code: code.replace(/\s+/g, '') }), 'Two-factor sign-in is on')) {
      session.update({ totp_enabled: true });
      setSetup(null);
      setCode('');
    }
  };
  const disable = async (event: Event) => {
    event.preventDefault();
    if (await action.run(() => api('DELETE', '/session/totp', { code: code.replace(/\s+/g, '') }), 'Two-factor sign-in is off')) {
      session.update({ totp_enabled: false });
      setCode('');
    }
  };

  return (
    <>
      <h1>Your account</h1>
      <Section title="Operator">
        <dl class="facts">
          <dt>Username</dt><dd>{me.username}</dd>
          <dt>Role</dt><dd>{me.role} — {ROLE_HELP[me.role]}</dd>
          <dt>Idle sign-out</dt><dd>after {Math.round(session.idleTimeoutSeconds / 60)} minutes without activity</dd>
        </dl>
      </Section>
      <Section title="Two-factor sign-in (TOTP)">
        <ErrorBox error={action.error} />
        {me.totp_enabled ? (
          <form class="inline-form" onSubmit={disable}>
            <p data-testid="totp-status">On: every sign-in asks for a code from your authenticator app.</p>
            <label class="field">
              <span>Current code (to turn it off)</span>
              <input name="totp-code" inputMode="numeric" autoComplete="one-time-code" required value={code} onInput={(e) => setCode(e.currentTarget.value)} />
            </label>
            <button type="submit" class="danger" disabled={action.busy}>Turn off</button>
          </form>
        ) : setup ? (
          <form onSubmit={confirm}>
            <p>Scan this code with an authenticator app (or type the secret), then enter the 6-digit code it shows.</p>
            <div class="qr"><img src={qrSource(setup.qr_svg)} alt="QR code of the TOTP secret for your authenticator app" data-testid="totp-qr" /></div>
            <dl class="facts">
              <dt>Secret</dt><dd class="mono" data-testid="totp-secret">{setup.secret}</dd>
            </dl>
            <label class="field">
              <span>Code from the app</span>
              <input name="totp-code" inputMode="numeric" autoComplete="one-time-code" required value={code} onInput={(e) => setCode(e.currentTarget.value)} />
            </label>
            <div class="actions start">
              <button type="submit" disabled={action.busy}>Turn on</button>
              <button type="button" class="secondary" onClick={() => setSetup(null)}>Cancel</button>
            </div>
          </form>
        ) : (
          <>
            <p data-testid="totp-status">Off: a password alone signs you in.</p>
            <button type="button" onClick={start} disabled={action.busy}>Set up an authenticator</button>
          </>
        )}
      </Section>
    </>
  );
}
