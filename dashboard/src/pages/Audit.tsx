export function Audit() {
  return <h1>Audit</h1>;
}
