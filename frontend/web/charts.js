// A small SVG line chart of the last few minutes, drawn from samples the event stream
// brought: no chart library.

import { h } from './ui.js';

const W = 400;
const H = 140;
const pad = { left: 8, right: 8, top: 20, bottom: 20 };
const svgNS = 'http://www.w3.org/2000/svg';

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text != null) el.textContent = text;
  return el;
}

/**
 * lineChart draws series of samples over the last minutes, up to the newest sample. A
 * sample may carry only some of the series' fields: each line joins the samples that have
 * its field, and a series without any is left out.
 * @param {object} o
 * @param {string} o.title
 * @param {{t:number}[]} o.samples   oldest first
 * @param {{key:string, label:string, cls:string}[]} o.series  which sample fields to draw
 * @param {(v:number)=>string} o.format  how a value reads ("12 ms")
 * @param {number} o.windowMs  the longest stretch of time shown
 * @param {string} o.empty  what to say before the first sample
 */
export function lineChart({ title, samples, series, format, windowMs, empty }) {
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img' });
  const x0 = pad.left;
  const x1 = W - pad.right;
  const y0 = H - pad.bottom;
  const y1 = pad.top;
  svg.append(s('line', { x1: x0, y1: y0, x2: x1, y2: y0, class: 'axis' }));
  const latest = samples.at(-1);
  if (!latest) {
    svg.setAttribute('aria-label', `${title}: ${empty}`);
    svg.append(s('text', { x: (x0 + x1) / 2, y: H / 2, 'text-anchor': 'middle', class: 'chart-note' }, empty));
    return figure(title, svg, []);
  }
  // The window grows with the history, from a minute up to windowMs.
  const end = latest.t;
  const span = Math.min(windowMs, Math.max(60000, end - samples[0].t));
  const start = end - span;
  const has = (d) => samples.filter((p) => p[d.key] != null);
  series = series.filter((d) => has(d).length > 0);
  const top = niceCeiling(Math.max(...samples.flatMap((p) => series.map((d) => p[d.key] ?? 0))));
  const px = (t) => x0 + ((t - start) / span) * (x1 - x0);
  const py = (v) => y0 - (v / top) * (y0 - y1);
  svg.append(
    s('line', { x1: x0, y1: y1, x2: x1, y2: y1, class: 'grid' }),
    s('text', { x: x0, y: y1 - 5, class: 'tick' }, format(top)),
    s('text', { x: x0, y: H - 5, class: 'tick' }, `${Math.round(span / 60000)} min ago`),
    s('text', { x: x1, y: H - 5, 'text-anchor': 'end', class: 'tick' }, 'now'),
  );
  for (const d of series) {
    const points = has(d).map((p) => `${px(p.t).toFixed(1)},${py(p[d.key]).toFixed(1)}`).join(' ');
    svg.append(s('polyline', { points, class: `line ${d.cls}` }));
  }
  const legend = series.map((d) => [d, format(has(d).at(-1)[d.key])]);
  svg.setAttribute('aria-label', `${title}, now: ${legend.map(([d, v]) => `${d.label} ${v}`).join(', ')}`);
  return figure(title, svg, legend);
}

function figure(title, svg, legend) {
  return h('figure', { class: 'chart-box' },
    h('figcaption', {}, title),
    svg,
    h('ul', { class: 'legend' }, legend.map(([d, v]) => h('li', { class: d.cls }, h('span', { class: 'swatch' }), `${d.label}: `, h('strong', {}, v)))));
}

// niceCeiling rounds up to 1, 2 or 5 times a power of ten, so the axis reads well.
function niceCeiling(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * p).find((c) => c >= v);
}
