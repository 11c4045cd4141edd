export function Operators() {
  return <h1>Operators</h1>;
}
