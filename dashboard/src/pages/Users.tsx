export function Users({ appId }: { appId: string }) {
  return <h1 data-app={appId}>Users</h1>;
}
export function UserDetail({ appId, userId }: { appId: string; userId: string }) {
  return <h1 data-app={appId}>{userId}</h1>;
}
