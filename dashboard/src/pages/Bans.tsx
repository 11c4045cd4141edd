export function Bans({ appId }: { appId: string }) {
  return <h1 data-app={appId}>Bans</h1>;
}
