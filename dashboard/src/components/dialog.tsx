/**
 * Confirmation and one-time-secret dialogs on the native <dialog> element: showModal() makes
 * the rest of the page inert, traps focus, and Escape cancels, with no code of ours to get
 * wrong. A promise-returning ask() keeps call sites as short as window.confirm, which is not
 * used because it cannot be styled, cannot name the object in bold or ask for a typed name,
 * and some browsers let users silence it for good.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

interface Request {
  title: string;
  body: ComponentChildren;
  confirmLabel: string;
  danger: boolean;
  /** The user must type this text (an app's name) before the button is enabled. */
  typeToConfirm?: string;
  /** An information dialog: one button, resolves true. */
  info?: boolean;
  resolve: (ok: boolean) => void;
}

let show: ((request: Request) => void) | null = null;

export function ask(options: { title: string; body: ComponentChildren; confirmLabel: string; danger?: boolean; typeToConfirm?: string }): Promise<boolean> {
  return new Promise((resolve) => show?.({ danger: true, ...options, resolve }));
}

/** Shows something once (a new secret or token), with a copy button; resolves when closed. */
export function reveal(title: string, label: string, secret: string, note: ComponentChildren): Promise<void> {
  return new Promise((resolve) =>
    show?.({
      title, confirmLabel: 'I have stored it', danger: false, info: true, resolve: () => resolve(),
      body: (
        <>
          <p>{note}</p>
          <label class="field">
            <span>{label}</span>
            <input class="mono secret" readOnly value={secret} data-testid="revealed-secret" onFocus={(e) => e.currentTarget.select()} />
          </label>
          <button type="button" class="secondary" onClick={() => void navigator.clipboard?.writeText(secret)}>Copy to clipboard</button>
        </>
      ),
    }),
  );
}

export function DialogHost() {
  const [request, setRequest] = useState<Request | null>(null);
  const [typed, setTyped] = useState('');
  const ref = useRef<HTMLDialogElement>(null);

  useEffect(() => {
    show = (next) => {
      setTyped('');
      setRequest(next);
    };
    return () => void (show = null);
  }, []);

  useEffect(() => {
    const dialog = ref.current;
    if (request && dialog && !dialog.open) dialog.showModal();
  }, [request]);

  const finish = (ok: boolean) => {
    ref.current?.close();
    request?.resolve(ok);
    setRequest(null);
  };

  const blocked = request?.typeToConfirm !== undefined && typed !== request.typeToConfirm;
  return (
    <dialog ref={ref} class="dialog" aria-labelledby="dialog-title" onCancel={(e) => { e.preventDefault(); finish(false); }}>
      {request && (
        <form method="dialog" onSubmit={(e) => { e.preventDefault(); if (!blocked) finish(true); }}>
          <h2 id="dialog-title">{request.title}</h2>
          <div class="dialog-body">{request.body}</div>
          {request.typeToConfirm !== undefined && (
            <label class="field">
              <span>Type <strong>{request.typeToConfirm}</strong> to confirm</span>
              <input value={typed} onInput={(e) => setTyped(e.currentTarget.value)} autoComplete="off" />
            </label>
          )}
          <div class="actions">
            {!request.info && <button type="button" class="secondary" autoFocus onClick={() => finish(false)}>Cancel</button>}
            <button type="submit" class={request.danger ? 'danger' : ''} disabled={blocked} autoFocus={request.info}>{request.confirmLabel}</button>
          </div>
        </form>
      )}
    </dialog>
  );
}
