// Backups: the encrypted files in each backup folder, with their size, time, whether a
// verify (or restore drill) proved them good, and what retention keeps and why.

import { api } from '../api.js';
import { store, on, putTask } from '../store.js';
import { h, pageHeader, errorBox, badge, busy, unavailable, notice } from '../ui.js';
import { fmtBytes, fmtAgo, fmtWhen, terminal, plainError } from '../format.js';

/** nameTime reads the UTC time in a backup file or bundle name
 * (walletsync-<id>-20261129T201500Z.brc39, walletsync-bundle-20261129T201500Z). */
function nameTime(name) {
  const m = /-(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z(\.brc39)?$/.exec(name);
  return m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z` : null;
}

const retentionText = (r) => `Keeps the newest ${r.last}, the newest of each of the last ${r.daily} days and of the last ${r.weekly} weeks. `
  + 'The newest verified backup is always kept.';

function verifyState(f, task) {
  if (task && !terminal(task.state)) return badge('Verifying…', 'running');
  if (task?.state === 'failed') return h('span', { title: task.error }, badge('Verify failed', 'failed'), ' ', task.message || plainError(task.error));
  const r = f.record;
  if (r?.verifyError) return h('span', {}, badge('Verify failed', 'failed'), ' ', plainError(r.verifyError));
  if (r?.verifiedAt) return h('span', { title: fmtWhen(r.verifiedAt) }, badge('Verified', 'succeeded'), ` ${fmtAgo(r.verifiedAt)}`);
  return h('span', { class: 'muted' }, 'Not verified yet');
}

/** folderSection lists one backup folder and keeps itself current. */
function folderSection(d) {
  const body = h('div');
  const problem = h('div');
  const el = h('section', { class: 'card', 'data-destination': d.id, 'aria-label': d.name },
    h('div', { class: 'card-head' }, h('h2', {}, d.name)), h('p', { class: 'path' }, d.path), problem, body);
  const verifying = new Map(); // file name -> task id
  let listing = null;
  let verifyMissing = false;

  async function load() {
    try {
      listing = await api.backups(d.id);
      render();
    } catch (err) {
      body.replaceChildren(err.unavailable ? unavailable('The list of backup files') : errorBox(err, 'Could not list the folder'));
    }
  }

  async function verify(name, button) {
    await busy(button, async () => {
      try {
        const t = await api.verifyBackup(d.id, name);
        verifying.set(name, t.id);
        putTask(t);
      } catch (err) {
        verifyMissing = err.unavailable;
        problem.replaceChildren(err.unavailable ? unavailable('Verifying a backup') : errorBox(err, 'Could not start the verify'));
      }
    });
    render();
  }

  // render redraws the table; the keyboard stays on the row it was on.
  function render() {
    if (!listing) return;
    const focused = el.contains(document.activeElement) ? document.activeElement.closest('tr')?.dataset.file : null;
    if (!listing.files.length) {
      body.replaceChildren(notice('muted', h('p', {}, 'No backup files here yet. ', 'They appear after the first backup to this folder.')));
      return;
    }
    body.replaceChildren(
      h('p', { class: 'muted small-text' }, retentionText(listing.retention)),
      h('div', { class: 'table-scroll' }, h('table', { class: 'plain backups-table' },
        h('thead', {}, h('tr', {}, ['File', 'Taken', 'Size', 'Verified', 'Retention', ''].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, listing.files.map((f) => {
          const at = f.record?.createdAt ?? nameTime(f.name);
          const task = store.tasks.get(verifying.get(f.name));
          return h('tr', { 'data-file': f.name },
            h('th', { scope: 'row' }, h('span', { class: 'mono small-text', title: f.record?.identityKey }, f.name)),
            h('td', {}, at ? h('span', { title: fmtWhen(at) }, fmtAgo(at)) : '—'),
            h('td', { class: 'num' }, f.record ? fmtBytes(f.record.size) : '—'),
            h('td', {}, verifyState(f, task)),
            h('td', {}, f.keep ? h('span', {}, badge('Kept', 'succeeded'), ` ${(f.reasons ?? []).join('; ')}`)
              : h('span', {}, badge('Goes next', 'queued'), ' deleted at the next backup')),
            h('td', {}, h('button', { type: 'button', class: 'small', disabled: verifyMissing || (task && !terminal(task.state)),
              'aria-label': `Verify ${f.name} now`, onclick: (e) => verify(f.name, e.currentTarget) }, 'Verify now')));
        })))));
    if (focused) body.querySelector(`tr[data-file="${CSS.escape(focused)}"] button`)?.focus();
  }

  load();
  return {
    el,
    load,
    taskChanged(t) {
      const mine = [...verifying.values()].includes(t.id);
      if (mine) render();
      if ((mine || t.target === d.id) && terminal(t.state)) load();
    },
  };
}

export default {
  id: 'backups',
  title: 'Backups',
  mount(main) {
    const list = h('div', { class: 'stack' });
    main.append(pageHeader('Backups', 'The encrypted backup files in your backup folders.'), list);
    let sections = [];
    function render() {
      const folders = (store.config?.destinations ?? []).filter((d) => d.kind === 'folder' || d.kind === 'bundles');
      sections = folders.map(folderSection);
      list.replaceChildren(...sections.map((s) => s.el));
      if (!store.config) list.replaceChildren(store.loadError ? errorBox(store.loadError) : h('p', { class: 'muted' }, 'Loading…'));
      else if (!folders.length) list.replaceChildren(notice('muted', h('p', {}, 'No backup folder yet. ', h('a', { href: '#/destinations' }, 'Add one'), ' to keep encrypted backup files.')));
    }
    render();
    const offs = [
      on('config', render),
      on('backups', (b) => sections.find((s) => s.el.dataset.destination === b?.destination)?.load()),
      on('drill', () => sections.forEach((s) => s.load())),
      on('tasks', (t) => t && sections.forEach((s) => s.taskChanged(t))),
    ];
    return () => offs.forEach((off) => off());
  },
};
