export function Keys({ appId }: { appId: string }) {
  return <h1 data-app={appId}>Keys</h1>;
}
