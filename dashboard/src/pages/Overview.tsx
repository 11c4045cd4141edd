export function Overview({ appId }: { appId: string }) {
  return <h1 data-app={appId}>Overview</h1>;
}
