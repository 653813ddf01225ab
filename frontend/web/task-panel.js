// The live progress panel of one task: the page state a sync is in (reading, preparing,
// committing, committed, then how it ended), its counters, rate and time left, the table
// it is on, and Cancel, which reads "Cancelling…" until the agent confirms the safe stop
// and then shows the checkpoint that stays acknowledged.

import { api } from './api.js';
import { store, putTask } from './store.js';
import { h, stats, errorBox, notice, badge, busy, fill, taskProblem } from './ui.js';
import {
  fmtNumber, fmtBytes, fmtDuration, tableLabel, syncOrder, taskState, terminal,
} from './format.js';

const phases = ['reading', 'preparing', 'committing', 'committed'];
const phaseWords = {
  reading: 'Reading a page from the wallet',
  preparing: 'Preparing the page',
  committing: 'Storing the page at the destination',
  committed: 'Page stored and acknowledged',
};
// The words for the steps of an import, a verify and a drill (their details).
const stepWords = {
  decrypting: 'Decrypting the file (deriving the key from the password takes a few seconds)',
  validating: 'Checking everything in the file',
  staging: 'Loading the file into a private staging area',
  previewing: 'Comparing the file with your wallet',
  merging: 'Merging into your wallet',
  restoring: 'Restoring the wallet',
  finishing: 'Finishing',
};
const endings = { succeeded: 'Completed', cancelled: 'Cancelled', failed: 'Failed', interrupted: 'Interrupted' };

const capitalize = (s) => s.charAt(0).toUpperCase() + s.slice(1);

/** parseDetail splits a sync's detail ("committing tx_labels") into its phase and table. */
export function parseDetail(detail = '') {
  const [first, ...rest] = detail.split(' ');
  return phases.includes(first) ? { phase: first, table: rest.join(' ') } : { phase: '', table: '', text: detail };
}

/** checkpointOf is the last acknowledged checkpoint in a sync task's result, if any. */
const checkpointOf = (task) => task.result?.sessions?.at(-1)?.checkpoint ?? null;

/** resumableOf says whether the next run continues a sync task's last session from its checkpoint. */
const resumableOf = (task) => task.result?.sessions?.at(-1)?.resumable === true;

/**
 * storedOf is what a sync task's sessions stored at the destination (pages or chunks, and
 * rows): a storage server's chunk sessions keep their progress at the server without a
 * numbered checkpoint, so the pages say what was kept, not the checkpoint alone.
 */
const storedOf = (task) => (task.result?.sessions ?? []).reduce(
  (sum, s) => ({ pages: sum.pages + (s.pages ?? 0), rows: sum.rows + (s.rows ?? 0) }), { pages: 0, rows: 0 });

/**
 * progressWords puts a task's progress in words: rows done of the total, the percentage
 * (never 100% before the end: the total is an estimate), the rate, which reads
 * "measuring…" until the agent has two seconds of samples rather than "0 rows/s", and the
 * time left.
 */
export function progressWords(t) {
  const c = t.counters;
  const ended = terminal(t.state);
  const known = t.total > 0;
  const ratio = known ? Math.min(c.rows / t.total, 1) : 0;
  const percent = !known ? '' : ended ? (t.state === 'succeeded' ? '100%' : `${Math.floor(ratio * 100)}%`) : `${Math.min(Math.floor(ratio * 100), 99)}%`;
  const measuring = !ended && !t.rowsPerSec;
  let left = 'estimating…';
  if (t.etaSeconds) left = `about ${fmtDuration(t.etaSeconds)}`;
  else if (known && c.rows >= t.total) left = 'almost done';
  else if (!known && !measuring) left = 'unknown (no total)';
  return {
    rows: known ? `${fmtNumber(c.rows)} of ${fmtNumber(t.total)}` : fmtNumber(c.rows),
    percent,
    rate: measuring ? 'measuring…' : `${fmtNumber(Math.round(t.rowsPerSec ?? 0))} rows/s · ${fmtBytes(t.bytesPerSec ?? 0)}/s`,
    left,
  };
}

/**
 * cancelledWords says what a cancel left behind and what the next run does, for each kind
 * of task: only a sync keeps a durable checkpoint at its destination, and only a sync from
 * a wallet with a change journal continues from it (the agent's result says resumable).
 */
function cancelledWords(t) {
  switch (t.kind) {
    case 'sync': {
      const cp = checkpointOf(t);
      const stored = storedOf(t);
      if ((!cp || !cp.seq) && stored.pages > 0) {
        const what = `${fmtNumber(stored.pages)} ${stored.pages === 1 ? 'page' : 'pages'} (${fmtNumber(stored.rows)} rows)`;
        return resumableOf(t)
          ? `Cancelled safely. ${what} were stored at the destination and are kept; the next run continues from there.`
          : `Cancelled safely. ${what} were stored at the destination and are kept; the next run starts again at the first table (nothing is stored twice).`;
      }
      if (!cp || !cp.seq) return 'Cancelled safely. Nothing had been stored yet; the next run starts at the beginning.';
      const kept = `Cancelled safely. Everything up to checkpoint ${cp.seq} (${tableLabel(syncOrder[cp.table])}) is kept; `;
      return resumableOf(t)
        ? `${kept}the next run continues from there.`
        : `${kept}the wallet keeps no change journal, so the next run starts again at the first table (nothing is stored twice).`;
    }
    case 'backup': {
      const n = [t.result ?? []].flat().length;
      return `Cancelled. The backup file being written was discarded: no partial file is left in the folder${n ? `, and the ${n} file${n === 1 ? '' : 's'} already written stay` : ''}. The next run writes a new backup file from the start.`;
    }
    case 'export':
      return 'Cancelled. No file was written; export again to make one.';
    case 'import':
      return 'Cancelled. If part of the file was already merged, the Restore page offers to finish that import (the same file again) or to abandon it.';
    default:
      return 'Cancelled. Nothing was changed.';
  }
}

/**
 * taskPanel makes the panel for a task, with extra buttons beside Cancel; update(task)
 * redraws it in place (the Cancel button keeps its focus).
 */
export function taskPanel(title, ...extra) {
  const heading = h('h3', {}, title);
  const state = badge('');
  const phaseList = h('ol', { class: 'phases', 'aria-label': 'Page progress' },
    [...phases, 'end'].map((p) => h('li', { 'data-phase': p }, p === 'end' ? 'Done' : p)));
  const line = h('p', { class: 'state-line', 'aria-live': 'polite' });
  const bar = h('progress', { max: 1, 'aria-label': `${title}: progress` });
  const figures = h('div');
  const problem = h('div');
  const cancel = h('button', { type: 'button', class: 'danger' }, 'Cancel');
  let current = null;
  let cancelling = false; // asked, and not yet confirmed by the agent
  let cancelError = null;
  cancel.addEventListener('click', () => busy(cancel, async () => {
    cancelling = true;
    cancelError = null;
    render();
    try {
      putTask(await api.cancelTask(current.id));
    } catch (err) {
      cancelling = false;
      cancelError = err;
    }
  }).finally(render));
  const el = h('section', { class: 'task-panel', 'aria-label': title },
    h('div', { class: 'task-head' }, heading, state), phaseList, line, bar, figures, problem, h('div', { class: 'actions' }, cancel, extra));

  function render() {
    const t = current;
    const ended = terminal(t.state);
    const { phase, table, text } = parseDetail(t.detail);
    const isSync = phase !== '' || t.kind === 'sync';
    state.textContent = taskState(t.state);
    state.className = `badge ${t.state}`;
    el.dataset.state = t.state;
    el.dataset.phase = ended ? t.state : phase;

    phaseList.hidden = !isSync;
    for (const li of phaseList.children) {
      const p = li.dataset.phase;
      const reached = ended || phases.indexOf(p) <= phases.indexOf(phase);
      li.className = (ended ? p === 'end' : p === phase) ? 'current' : reached && p !== 'end' ? 'done' : '';
      if (p === 'end') li.textContent = ended ? endings[t.state] ?? t.state : 'Done';
    }

    if (t.state === 'cancelling' || (cancelling && !ended)) {
      line.textContent = 'Cancelling… waiting for the page in flight to be safely stored or dropped.';
    } else if (t.state === 'cancelled') {
      line.textContent = cancelledWords(t);
    } else if (t.state === 'succeeded') {
      const pages = isSync ? ` in ${fmtNumber(t.counters.pages)} pages` : '';
      line.textContent = t.counters.rows || !isSync
        ? `Completed: ${fmtNumber(t.counters.rows)} rows${pages}.`
        : 'Completed: already up to date, nothing new to copy.';
    } else if (t.state === 'queued') {
      line.textContent = 'Waiting for the task before it to finish.';
    } else if (!ended) {
      line.textContent = phase ? `${phaseWords[phase]}${table ? ` (${tableLabel(table)})` : ''}` : stepWords[text] ?? capitalize(text || 'starting…');
    } else {
      line.textContent = '';
    }

    bar.hidden = ended;
    if (t.total > 0) {
      bar.max = t.total;
      bar.value = Math.min(t.counters.rows, t.total);
    } else {
      bar.removeAttribute('value'); // the total is unknown: an indeterminate bar
    }

    const c = t.counters;
    const elapsed = t.startedAt ? ((ended ? Date.parse(t.finishedAt) : Date.now()) - Date.parse(t.startedAt)) / 1000 : null;
    const p = progressWords(t);
    figures.replaceChildren(stats([
      ...(isSync ? [['Pages', fmtNumber(c.pages)]] : []),
      ['Rows', p.rows],
      ...(p.percent ? [['Done', p.percent]] : []),
      ['Data', fmtBytes(c.bytes)],
      ['Rate', p.rate],
      ended ? ['Took', fmtDuration(elapsed)] : ['Time left', p.left],
      ...(isSync && !ended ? [['Table', table ? tableLabel(table) : '—']] : []),
    ]));

    if (t.state === 'failed' || t.state === 'interrupted') problem.replaceChildren(errorBox(taskProblem(t)));
    else fill(problem, cancelError && errorBox(cancelError, 'Could not cancel'));

    cancel.hidden = ended;
    const stopping = t.state === 'cancelling' || cancelling;
    cancel.textContent = stopping ? 'Cancelling…' : 'Cancel';
    cancel.disabled = stopping;
    if (ended) cancelling = false;
  }

  return {
    el,
    update(task) {
      current = task;
      render();
    },
    rename(text) {
      heading.textContent = text;
      el.setAttribute('aria-label', text);
      bar.setAttribute('aria-label', `${text}: progress`);
    },
    get task() {
      return current;
    },
  };
}

/**
 * startTask is a wizard's "go" button: while button is busy it posts (post() returns the
 * agent's answer, a task), keeps the task in the store and calls started(task); when the
 * agent refuses, problem shows why, led by what.
 */
export function startTask(button, problem, post, started, what) {
  busy(button, async () => {
    try {
      const t = await post();
      putTask(t);
      started(t);
    } catch (err) {
      problem.replaceChildren(errorBox(err, what));
    }
  });
}

/**
 * taskStep is a wizard step that follows task id in panel; once the task has ended without
 * success it offers back, a button to an earlier step.
 */
export function taskStep(id, panel, back) {
  const t = store.tasks.get(id);
  if (!t) return notice('muted', h('p', {}, 'Starting…'));
  panel.update(t);
  return h('div', { class: 'stack' }, panel.el,
    terminal(t.state) && t.state !== 'succeeded' ? h('div', { class: 'actions' }, back) : null);
}
