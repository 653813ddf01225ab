// Small DOM building blocks the pages share.

import { api } from './api.js';
import { passwordStrength, plainError, parseDuration, goDuration } from './format.js';

/**
 * h builds an element: h('button', {class: 'primary', onclick: f}, 'Save'). Props starting
 * with "on" are listeners; value, checked, disabled and hidden are set as properties; false
 * and null leave an attribute out. Children may be strings, nodes, arrays, null or false.
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props ?? {})) {
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (['value', 'checked', 'disabled', 'hidden'].includes(k)) el[k] = v;
    else if (v === true) el.setAttribute(k, '');
    else if (v !== false && v != null) el.setAttribute(k, v);
  }
  el.append(...kids(children));
  return el;
}

const kids = (children) => children.flat(Infinity).filter((c) => c != null && c !== false);

/**
 * browseButton is a "Browse…" button that puts the path a native dialog returns into input
 * (choose gets input's value and returns a Promise of a path, "" when cancelled), or null
 * when choose is null: in a browser the typed path (and a file drop) are the way.
 */
export function browseButton(choose, input) {
  if (!choose) return null;
  return h('button', { type: 'button', class: 'browse', onclick: async (e) => {
    const button = e.currentTarget;
    button.disabled = true;
    try {
      const p = await choose(input.value);
      if (p) {
        input.value = p;
        input.dispatchEvent(new Event('input', { bubbles: true }));
      }
    } finally {
      button.disabled = false;
    }
  } }, 'Browse…');
}

/**
 * pathCheck checks the path typed in input where it is typed: when the field is left and
 * before its form goes on, the agent says whether it will do for purpose (backup-folder,
 * backup-wallet, backup-file, new-file; see agent/paths.go), and a wrong path is named
 * under the field with what to do. What was typed is never cleared. purpose and overwrite
 * may be functions, read at each check. check() resolves to true when the path will do.
 */
export function pathCheck(input, purpose, overwrite = false) {
  const el = h('div', { class: 'path-problem', 'data-testid': 'path-problem', 'aria-live': 'polite' });
  const value = (v) => (typeof v === 'function' ? v() : v);
  let last = null;
  async function check() {
    const path = input.value.trim();
    let res;
    try {
      res = await api.checkPath(path, value(purpose), value(overwrite));
    } catch (err) {
      if (err.unavailable) return true; // an older agent checks when the work starts
      fill(el, errorBox(err, 'The path could not be checked'));
      return false;
    }
    last = res;
    input.setAttribute('aria-invalid', String(!res.ok));
    fill(el, res.ok
      ? res.note && h('p', { class: 'help' }, res.note)
      : notice('error', h('p', {}, res.message), res.hint ? h('p', { class: 'hint' }, res.hint) : null));
    if (!res.ok) input.setAttribute('aria-errormessage', el.id ||= uid('path'));
    return res.ok;
  }
  input.addEventListener('change', () => { if (input.value.trim()) check(); });
  input.addEventListener('input', () => {
    if (last && !last.ok) {
      // The message described what was typed before: it goes once the path changes.
      fill(el);
      input.removeAttribute('aria-invalid');
      last = null;
    }
  });
  return { el, check };
}

/** fill replaces el's children, skipping null and false as h does. */
export const fill = (el, ...children) => el.replaceChildren(...kids(children));

let ids = 0;
/** uid returns a new element id for label and description links. */
export const uid = (prefix = 'f') => `${prefix}-${++ids}`;

/** field is a labelled control with an optional help text, linked for screen readers. */
export function field(label, control, help) {
  control.id ||= uid();
  const helpEl = help ? h('p', { class: 'help', id: uid('help') }, help) : null;
  if (helpEl) control.setAttribute('aria-describedby', helpEl.id);
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, helpEl);
}

export const notice = (kind, ...children) => h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : null }, ...children);

/**
 * errorBox shows a failure in plain words with the agent's hint, and the technical text
 * (err.detail) behind a "Details" disclosure. The agent words the failures it knows; an
 * older agent's raw text goes through plainError.
 */
export function errorBox(err, lead = '') {
  const message = err?.detail ? err.message : plainError(err?.message ?? String(err));
  return notice('error', h('p', {}, lead ? h('strong', {}, `${lead}: `) : null, message),
    err?.hint ? h('p', { class: 'hint' }, err.hint) : null,
    err?.detail ? h('details', { class: 'error-detail' }, h('summary', {}, 'Details'), h('code', {}, err.detail)) : null);
}

/** taskProblem is a failed task's error as errorBox shows it. */
export const taskProblem = (t) => ({ message: t.message || t.error, hint: t.hint, path: t.path, detail: t.message && t.message !== t.error ? t.error : '' });

/** unavailable says that the agent does not offer something yet. */
export const unavailable = (what) => notice('muted', h('p', {}, `${what} is not available from this agent yet. `,
  'Update walletsync to use it.'));

export const badge = (text, kind = '') => h('span', { class: `badge ${kind}` }, text);

/** copyButton copies text to the clipboard; what names it for screen readers ("the path"). */
export function copyButton(text, what) {
  const label = 'Copy';
  const b = h('button', { type: 'button', class: 'small', 'aria-label': `${label} ${what}`, title: text }, label);
  b.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = 'Copied';
    } catch {
      b.textContent = 'Select and copy';
    }
    setTimeout(() => { b.textContent = label; }, 1500);
  });
  return b;
}

/** stats is a row of labelled figures. */
export const stats = (pairs) => h('dl', { class: 'stats' },
  pairs.map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))));

/** busy disables button while run's promise is pending and returns its result. */
export async function busy(button, run) {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    return await run();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

/**
 * passwordPair is a new password typed twice, with a strength hint. check() returns what is
 * wrong with it in words, or "".
 */
export function passwordPair(min = 8) {
  const first = h('input', { type: 'password', autocomplete: 'new-password', required: true, minlength: min, 'data-autofocus': true });
  const second = h('input', { type: 'password', autocomplete: 'new-password', required: true });
  const meter = h('meter', { min: 0, max: 4, low: 2, high: 3, optimum: 4, value: 0, 'aria-hidden': 'true', hidden: true });
  const label = h('span', { class: 'strength-label', 'aria-live': 'polite' });
  const strength = h('div', { class: 'strength' }, meter, label);
  first.addEventListener('input', () => {
    const s = passwordStrength(first.value);
    meter.value = s.score;
    meter.hidden = !s.score;
    label.textContent = s.label;
  });
  return {
    el: h('div', { class: 'password-pair' },
      field('Password', first, `At least ${min} characters. A few unrelated words make a strong password that is easy to write down.`),
      strength,
      field('Type it again', second)),
    value: () => first.value,
    check() {
      if (first.value.length < min) return `The password needs at least ${min} characters.`;
      if (first.value !== second.value) return 'The two passwords are not the same.';
      return '';
    },
  };
}

const radioLabels = { interval: 'Run on an interval', daily: 'Run every day', change: 'Run when the wallet changes' };

/**
 * scheduleEditor edits a Schedule: every N minutes/hours/days, daily at HH:MM, or (for
 * destinations) when the wallet changes, after a quiet period. value() returns the
 * Schedule the agent reads.
 */
export function scheduleEditor(schedule, { onChange = true, legend = 'When it runs' } = {}) {
  const name = uid('sched');
  const everySecs = parseDuration(schedule?.every) || 3600;
  const unit = [86400, 3600, 60].find((u) => everySecs % u === 0) ?? 60;
  const count = h('input', { type: 'number', min: 1, value: String(everySecs / unit), class: 'narrow', 'aria-label': 'How many' });
  const units = h('select', { 'aria-label': 'Unit' },
    [[60, 'minutes'], [3600, 'hours'], [86400, 'days']].map(([v, t]) => h('option', { value: String(v), selected: v === unit }, t)));
  const at = h('input', { type: 'time', value: schedule?.at || '03:00', 'aria-label': 'Time of day' });
  const quiet = h('input', { type: 'number', min: 1, value: String(parseDuration(schedule?.debounce) || 30), class: 'narrow', 'aria-label': 'Seconds of quiet' });
  const kinds = [
    ['interval', ['Every ', count, ' ', units]],
    ['daily', ['Every day at ', at]],
    ...(onChange ? [['change', ['When the wallet changes, after ', quiet, ' seconds without changes']]] : []),
  ];
  const current = kinds.some(([k]) => k === schedule?.kind) ? schedule.kind : kinds[0][0];
  const radios = kinds.map(([kind, parts]) => {
    const r = h('input', { type: 'radio', name, value: kind, checked: kind === current, 'aria-label': radioLabels[kind] });
    return h('div', { class: 'choice' }, r, h('span', {}, ...parts));
  });
  return {
    el: h('fieldset', { class: 'schedule' }, h('legend', {}, legend), radios),
    value() {
      const kind = radios.map((r) => r.querySelector('input')).find((r) => r.checked).value;
      if (kind === 'interval') return { kind, every: goDuration(Number(count.value) * Number(units.value)) };
      if (kind === 'daily') return { kind, at: at.value };
      return { kind, debounce: goDuration(Number(quiet.value)) };
    },
  };
}

/** confirmDialog asks a yes-or-no question in a modal dialog; it resolves to the answer. */
export function confirmDialog({ title, body, ok = 'OK', danger = false }) {
  return new Promise((resolve) => {
    const heading = uid('dlg');
    const dlg = h('dialog', { 'aria-labelledby': heading },
      h('form', { method: 'dialog' },
        h('h2', { id: heading }, title),
        h('p', {}, body),
        h('div', { class: 'actions' },
          h('button', { type: 'submit', value: 'cancel' }, 'Cancel'),
          h('button', { type: 'submit', value: 'ok', class: danger ? 'danger' : 'primary' }, ok))));
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(dlg.returnValue === 'ok');
    });
    document.body.append(dlg);
    dlg.showModal();
  });
}

/** steps shows where a wizard is: the step titles, the current one marked. */
const steps = (titles, current) => h('ol', { class: 'steps' },
  titles.map((t, i) => h('li', { class: i < current ? 'done' : i === current ? 'current' : '', 'aria-current': i === current ? 'step' : null }, t)));

/** pageHeader is a page's title (focused on navigation) and an optional lead sentence. */
export const pageHeader = (title, lead, ...actions) => h('div', { class: 'page-header' },
  h('div', {}, h('h1', { tabindex: '-1' }, title), lead ? h('p', { class: 'lead' }, lead) : null),
  actions.length ? h('div', { class: 'actions' }, actions) : null);

/** onFrame returns fn wrapped to run at most once per animation frame (never while hidden). */
export function onFrame(fn) {
  let due = false;
  return () => {
    if (due) return;
    due = true;
    requestAnimationFrame(() => {
      due = false;
      fn();
    });
  };
}

/**
 * keepOpen runs render, which replaces container's content, and opens again the details
 * elements (matched by data-key) that were open.
 */
export function keepOpen(container, render) {
  const open = new Set([...container.querySelectorAll('details[open][data-key]')].map((d) => d.dataset.key));
  render();
  for (const d of container.querySelectorAll('details[data-key]')) d.open = open.has(d.dataset.key);
}

/** setChildren makes els parent's children, leaving the DOM (and focus) alone when they are. */
export function setChildren(parent, els) {
  const same = parent.children.length === els.length && els.every((el, i) => parent.children[i] === el);
  if (!same) parent.replaceChildren(...els);
}

/**
 * wizard shows a guided task one step at a time: the step indicator, the step's title and
 * what views[step](go) returns. go(step) moves to a step and focuses its first
 * [data-autofocus] element, else its title. state.step is where it is, kept by the caller
 * so that leaving the page and coming back returns to the same step.
 */
export function wizard(main, { title, lead, titles, views, state }) {
  const indicator = h('div');
  const content = h('div', { class: 'card wizard' });
  main.append(pageHeader(title, lead), indicator, content);
  function go(step, focus = true) {
    state.step = step;
    indicator.replaceChildren(steps(titles, step));
    content.replaceChildren(h('h2', { tabindex: '-1' }, titles[step]), views[step](go));
    if (focus) (content.querySelector('[data-autofocus]') ?? content.querySelector('h2')).focus();
  }
  go(state.step, false);
  return go;
}
