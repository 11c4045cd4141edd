export function Tokens() {
  return <h1>Tokens</h1>;
}
