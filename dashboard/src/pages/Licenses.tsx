export function Licenses({ appId }: { appId: string }) {
  return <h1 data-app={appId}>Licenses</h1>;
}
