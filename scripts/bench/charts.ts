/**
 * The SVG charts of docs/BENCHMARKS.md, drawn from results.json with no dependency: grouped bars
 * (with the spread over rounds as a whisker) and latency distributions (percentile curves on a
 * logarithmic time axis). Plain SVG 1.1, viewable in any browser.
 */
const WIDTH = 760;
const HEIGHT = 380;
const MARGIN = { top: 44, right: 20, bottom: 64, left: 78 };
const PALETTE = ['#4c6ef5', '#2f9e44', '#f08c00', '#c2255c', '#7048e8', '#0c8599'];
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, sans-serif"';

export interface BarSeries {
  name: string;
  /** One value per group; NaN leaves a gap. */
  values: number[];
  low?: number[];
  high?: number[];
}

export interface BarChart {
  title: string;
  groups: string[];
  series: BarSeries[];
  yLabel: string;
  logScale?: boolean;
  format?: (value: number) => string;
}

export interface CurveSeries {
  name: string;
  /** The 0th to 100th percentiles, in ms. */
  percentiles: number[];
}

export interface DistributionChart {
  title: string;
  series: CurveSeries[];
  xLabel: string;
}

function escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function text(x: number, y: number, content: string, attributes = ''): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attributes}>${escape(content)}</text>`;
}

function frame(title: string, body: string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" ${FONT} font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    text(WIDTH / 2, 24, title, 'text-anchor="middle" font-size="15" font-weight="600"'),
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

function legend(names: string[], y: number): string[] {
  const step = (WIDTH - MARGIN.left - MARGIN.right) / Math.max(1, names.length);
  return names.flatMap((name, i) => {
    const x = MARGIN.left + i * step;
    return [
      `<rect x="${x.toFixed(1)}" y="${y - 9}" width="12" height="12" fill="${PALETTE[i % PALETTE.length]}"/>`,
      text(x + 17, y + 1, name),
    ];
  });
}

/** Ticks for a log axis: 1, 2, 5 per decade when there are few decades, else 1 per decade. */
function logTicks(min: number, max: number): number[] {
  const decades = Math.log10(max) - Math.log10(min);
  const steps = decades > 4 ? [1] : [1, 2, 5];
  const ticks: number[] = [];
  for (let exponent = Math.floor(Math.log10(min)); exponent <= Math.ceil(Math.log10(max)); exponent++) {
    for (const step of steps) {
      const tick = step * 10 ** exponent;
      if (tick >= min * 0.999 && tick <= max * 1.001) ticks.push(tick);
    }
  }
  return ticks;
}

function linearTicks(max: number): number[] {
  const rough = max / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= rough) ?? rough;
  return Array.from({ length: Math.floor(max / step) + 1 }, (_, i) => i * step);
}

export function compactNumber(value: number): string {
  if (value >= 10_000) return `${Math.round(value / 1000)}k`;
  if (value >= 1000) return `${(value / 1000).toFixed(1)}k`;
  if (value >= 10) return value.toFixed(0);
  if (value >= 1) return value.toFixed(1);
  return value.toPrecision(2);
}

export function barChart(chart: BarChart): string {
  const format = chart.format ?? compactNumber;
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const all = chart.series.flatMap((s) => [...s.values, ...(s.high ?? [])]).filter((v) => Number.isFinite(v) && v > 0);
  const top = Math.max(...all, 1) * (chart.logScale ? 2 : 1.15);
  const bottom = chart.logScale ? 10 ** Math.floor(Math.log10(Math.min(...all, top))) : 0;
  const y = (value: number) =>
    MARGIN.top +
    plotHeight *
      (1 - (chart.logScale ? (Math.log10(value) - Math.log10(bottom)) / (Math.log10(top) - Math.log10(bottom)) : value / top));
  const ticks = chart.logScale ? logTicks(bottom, top) : linearTicks(top);
  const body: string[] = [];
  for (const tick of ticks) {
    body.push(`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y(tick).toFixed(1)}" y2="${y(tick).toFixed(1)}" stroke="#e9ecef"/>`);
    body.push(text(MARGIN.left - 6, y(tick) + 4, format(tick), 'text-anchor="end" fill="#495057"'));
  }
  body.push(text(18, MARGIN.top + plotHeight / 2, chart.yLabel, `text-anchor="middle" transform="rotate(-90 18 ${MARGIN.top + plotHeight / 2})"`));
  const groupWidth = plotWidth / chart.groups.length;
  const barWidth = (groupWidth * 0.8) / chart.series.length;
  chart.groups.forEach((group, g) => {
    const x0 = MARGIN.left + g * groupWidth + groupWidth * 0.1;
    body.push(text(x0 + groupWidth * 0.4, HEIGHT - MARGIN.bottom + 18, group, 'text-anchor="middle" font-weight="600"'));
    chart.series.forEach((series, s) => {
      const value = series.values[g]!;
      if (!Number.isFinite(value) || value <= 0) return;
      const x = x0 + s * barWidth;
      const color = PALETTE[s % PALETTE.length]!;
      body.push(
        `<rect x="${(x + 1).toFixed(1)}" y="${y(value).toFixed(1)}" width="${(barWidth - 2).toFixed(1)}" height="${(y(bottom || 0) - y(value)).toFixed(1)}" fill="${color}"><title>${escape(`${series.name}, ${group}: ${format(value)}`)}</title></rect>`,
      );
      const low = series.low?.[g];
      const high = series.high?.[g];
      if (low !== undefined && high !== undefined && high > low) {
        const cx = (x + barWidth / 2).toFixed(1);
        body.push(`<line x1="${cx}" x2="${cx}" y1="${y(Math.max(low, bottom || low)).toFixed(1)}" y2="${y(high).toFixed(1)}" stroke="#212529" stroke-width="1.2"/>`);
      }
      body.push(text(x + barWidth / 2, y(high ?? value) - 4, format(value), 'text-anchor="middle" font-size="10" fill="#212529"'));
    });
  });
  body.push(`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${HEIGHT - MARGIN.bottom}" y2="${HEIGHT - MARGIN.bottom}" stroke="#868e96"/>`);
  body.push(...legend(chart.series.map((s) => s.name), HEIGHT - 18));
  return frame(chart.title, body);
}

/** Percentile (y, 0–100) against latency (x, log scale): the further left, the faster. */
export function distributionChart(chart: DistributionChart): string {
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const values = chart.series.flatMap((s) => s.percentiles).filter((v) => Number.isFinite(v) && v > 0);
  const left = 10 ** Math.floor(Math.log10(Math.min(...values, 1)));
  const right = 10 ** Math.ceil(Math.log10(Math.max(...values, left * 10)));
  const x = (ms: number) =>
    MARGIN.left + (plotWidth * (Math.log10(Math.max(ms, left)) - Math.log10(left))) / (Math.log10(right) - Math.log10(left));
  const y = (p: number) => MARGIN.top + plotHeight * (1 - p / 100);
  const body: string[] = [];
  for (const tick of logTicks(left, right)) {
    body.push(`<line x1="${x(tick).toFixed(1)}" x2="${x(tick).toFixed(1)}" y1="${MARGIN.top}" y2="${HEIGHT - MARGIN.bottom}" stroke="#e9ecef"/>`);
    body.push(text(x(tick), HEIGHT - MARGIN.bottom + 16, compactNumber(tick), 'text-anchor="middle" fill="#495057"'));
  }
  for (const p of [0, 25, 50, 75, 90, 100]) {
    body.push(`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y(p).toFixed(1)}" y2="${y(p).toFixed(1)}" stroke="${p === 50 || p === 90 ? '#ced4da' : '#f1f3f5'}"/>`);
    body.push(text(MARGIN.left - 6, y(p) + 4, `p${p}`, 'text-anchor="end" fill="#495057"'));
  }
  body.push(text(MARGIN.left + plotWidth / 2, HEIGHT - MARGIN.bottom + 34, chart.xLabel, 'text-anchor="middle"'));
  chart.series.forEach((series, s) => {
    const points = series.percentiles
      .map((ms, p) => (Number.isFinite(ms) ? `${x(ms).toFixed(1)},${y(p).toFixed(1)}` : null))
      .filter((point): point is string => point !== null);
    body.push(`<polyline points="${points.join(' ')}" fill="none" stroke="${PALETTE[s % PALETTE.length]}" stroke-width="2"><title>${escape(series.name)}</title></polyline>`);
  });
  body.push(...legend(chart.series.map((s) => s.name), HEIGHT - 12));
  return frame(chart.title, body);
}
