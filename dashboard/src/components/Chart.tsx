/**
 * A time series drawn with uPlot (canvas; it sizes its parts through element.style, which the
 * CSP allows, never a style attribute), with the same numbers in a table for screen readers
 * and keyboard users.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series { label: string; color: string; values: number[] }

export function TimeChart({ title, times, series, bucket }: { title: string; times: number[]; series: Series[]; bucket: 'hour' | 'day' }) {
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const width = () => Math.max(240, element.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 200,
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, fill: s.color + '22', points: { show: times.length < 40 } }))],
        axes: [{ stroke: '#59636e', grid: { stroke: '#e3e8ef' } }, { stroke: '#59636e', grid: { stroke: '#e3e8ef' }, size: 40 }],
        scales: { y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] } },
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
      },
      [times, ...series.map((s) => s.values)],
      element,
    );
    const observer = new ResizeObserver(() => plot.setSize({ width: width(), height: 200 }));
    observer.observe(element);
    return () => {
      observer.disconnect();
      plot.destroy();
    };
  }, [times, series]);

  const format = new Intl.DateTimeFormat(undefined, bucket === 'hour' ? { month: 'short', day: 'numeric', hour: '2-digit' } : { dateStyle: 'medium' });
  const totals = series.map((s) => s.values.reduce((a, b) => a + b, 0));
  return (
    <figure class="chart card">
      <figcaption>{title}: {series.map((s, i) => `${totals[i]} ${s.label.toLowerCase()}`).join(', ')}</figcaption>
      <div class="chart-box" ref={box} role="img" aria-label={`${title} per ${bucket}, as a chart; the numbers are in the table below`} />
      <details>
        <summary>Numbers</summary>
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">{title} per {bucket}</caption>
            <thead><tr><th scope="col">{bucket === 'hour' ? 'Hour' : 'Day'}</th>{series.map((s) => <th scope="col" class="num">{s.label}</th>)}</tr></thead>
            <tbody>
              {times.map((t, i) => (
                <tr key={t}><td>{format.format(new Date(t * 1000))}</td>{series.map((s) => <td class="num">{s.values[i]}</td>)}</tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
