// Activity: every task, newest first, with its state, duration, counters and log; a failure
// carries the agent's hint.

import { api } from '../api.js';
import { store, on, tasks, putTask } from '../store.js';
import { progressWords } from '../task-panel.js';
import { h, pageHeader, errorBox, taskProblem, badge, stats, busy, setChildren, notice, fill } from '../ui.js';
import {
  fmtNumber, fmtBytes, fmtDuration, fmtWhen, fmtClock, taskKind, taskState, terminal, outcome,
} from '../format.js';

const pageSize = 50;

/** taskTitle names what a task worked on: a destination, or a file (the drill works on all). */
function taskTitle(t) {
  const file = t.target.replace(/^import:/, '').split(/[\\/]/).at(-1);
  const where = t.target === '.drill' ? '' : store.config?.destinations.find((d) => d.id === t.target)?.name ?? file;
  return where ? `${taskKind(t.kind)} · ${where}` : taskKind(t.kind);
}

function duration(t) {
  if (!t.startedAt) return '';
  const end = t.finishedAt ? Date.parse(t.finishedAt) : Date.now();
  return fmtDuration((end - Date.parse(t.startedAt)) / 1000);
}

/** resultFiles shows what a task produced, where it is a file or files. */
function resultFiles(t) {
  const files = [t.result].flat().filter((r) => r?.path && r?.sha256);
  return files.map((f) => h('p', { class: 'result-file' }, h('span', { class: 'path' }, f.path), ' ',
    h('span', { class: 'muted' }, `${fmtBytes(f.size)}, SHA-256 `), h('code', { class: 'hash' }, f.sha256)));
}

function row(task) {
  const summary = h('summary');
  const problem = h('div');
  const detail = h('p');
  const figures = h('div');
  const files = h('div');
  const cancel = h('button', { type: 'button', class: 'danger' }, 'Cancel');
  const log = h('ol', { class: 'log', 'aria-label': 'Log' });
  const el = h('details', { class: 'task-row', 'data-task': task.id }, summary,
    h('div', { class: 'task-body' }, problem, detail, figures, files, h('div', { class: 'actions' }, cancel)),
    h('h3', { class: 'small-heading' }, 'Log'), log);
  let t = task;
  let lines = null; // loaded on first open

  function appendLine(line) {
    log.append(h('li', {}, h('time', { datetime: line.time }, fmtClock(line.time)), ' ', line.text));
  }

  el.addEventListener('toggle', async () => {
    if (!el.open || lines) return;
    lines = [];
    try {
      lines = await api.taskLog(t.id);
      log.replaceChildren();
      lines.forEach(appendLine);
      if (!lines.length) log.append(h('li', { class: 'muted' }, 'No log lines.'));
    } catch (err) {
      log.replaceChildren(h('li', {}, errorBox(err, 'Could not load the log')));
    }
  });
  cancel.addEventListener('click', async () => {
    try {
      await busy(cancel, async () => putTask(await api.cancelTask(t.id)));
      render(); // busy re-enabled the button: the state decides
    } catch (err) {
      render();
      problem.replaceChildren(errorBox(err, 'Could not cancel'));
    }
  });

  // render updates the row in place: the Cancel button keeps its focus through updates.
  function render() {
    const c = t.counters;
    summary.replaceChildren(
      h('span', { class: 'task-title' }, taskTitle(t)),
      badge(taskState(outcome(t)), outcome(t)),
      h('span', { class: 'muted' }, t.startedAt ? fmtWhen(t.startedAt) : `queued ${fmtWhen(t.queuedAt)}`),
      h('span', { class: 'muted' }, duration(t)),
      h('span', { class: 'muted' }, c.rows ? `${fmtNumber(c.rows)} rows` : ''));
    fill(problem, t.state === 'failed' || t.state === 'interrupted' ? errorBox(taskProblem(t)) : null);
    detail.textContent = terminal(t.state) ? '' : t.detail ?? '';
    detail.hidden = !detail.textContent;
    const p = progressWords(t);
    figures.replaceChildren(stats([
      ['Pages', fmtNumber(c.pages)], ['Rows', p.rows], ...(p.percent ? [['Done', p.percent]] : []), ['Inserted', fmtNumber(c.inserts)],
      ['Updated', fmtNumber(c.updates)], ['Data', fmtBytes(c.bytes)],
      ['Rate', p.rate], ...(terminal(t.state) ? [] : [['Time left', p.left]]),
    ]));
    files.replaceChildren(...resultFiles(t));
    cancel.hidden = terminal(t.state);
    cancel.disabled = t.state === 'cancelling';
    cancel.textContent = t.state === 'cancelling' ? 'Cancelling…' : 'Cancel';
  }
  render();
  return {
    el,
    update(task) {
      t = task;
      render();
    },
    log(line) {
      if (!lines) return; // the log is fetched in full when the row opens
      if (!lines.length) log.replaceChildren();
      lines.push(line);
      appendLine(line);
    },
  };
}

export default {
  id: 'activity',
  title: 'Activity',
  mount(main) {
    const list = h('div', { class: 'task-list' });
    const more = h('button', { type: 'button' }, 'Show older tasks');
    let limit = pageSize;
    more.addEventListener('click', () => {
      limit += pageSize;
      render();
    });
    main.append(pageHeader('Activity', 'Everything walletsync has done, newest first. Open a task to see its log.'), list, more);
    const rows = new Map();
    function render() {
      const all = tasks();
      if (!all.length) {
        list.replaceChildren(store.loadError ? errorBox(store.loadError, 'Could not load the activity') : notice('muted', h('p', {}, 'Nothing has run yet.')));
        more.hidden = true;
        return;
      }
      const els = all.slice(0, limit).map((t) => {
        let r = rows.get(t.id);
        if (r) r.update(t);
        else rows.set(t.id, (r = row(t)));
        return r.el;
      });
      setChildren(list, els);
      more.hidden = all.length <= limit;
    }
    render();
    const offs = [
      on('tasks', (t) => {
        if (t && rows.has(t.id)) rows.get(t.id).update(t);
        else render();
      }),
      on('log', (l) => rows.get(l.taskId)?.log(l.line)),
      on('config', render),
    ];
    return () => offs.forEach((off) => off());
  },
};
