export function Content({ appId }: { appId: string }) {
  return <h1 data-app={appId}>Content</h1>;
}
