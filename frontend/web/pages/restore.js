// Restore: a guided import of an encrypted backup file. The person chooses the file and
// types its password; the agent checks the file and says exactly what importing it would
// do (the preview); nothing touches the wallet until the person confirms.

import { api, hooks } from '../api.js';
import { store, on, putTask, refreshConfig, refreshOverview } from '../store.js';
import { taskPanel, startTask, taskStep } from '../task-panel.js';
import { bundleRestore } from './restore-bundle.js';
import {
  h, field, errorBox, taskProblem, notice, busy, copyButton, uid, unavailable, wizard, browseButton, pathCheck, confirmDialog,
} from '../ui.js';
import {
  shortKey, fmtBytes, fmtNumber, fmtWhen, chainLabel, tableLabel, tables, terminal,
} from '../format.js';

const titles = ['Choose the file', 'Password', 'Check what changes', 'Importing', 'Done'];

// The wizard's place survives leaving the page. password lives only in this module's
// memory, from the check to the confirm, so that the person types it once.
const state = { step: 0, source: null, wallet: '', mode: 'merge', checkId: '', importId: '', allowOther: false };
let password = '';

const resultOf = (id) => store.tasks.get(id)?.result;

/** source is what a request names: an upload, a path, or a backup wallet file destination. */
const source = (s) => (s.upload ? { upload: s.upload } : s.destination ? { destination: s.destination } : { path: s.path });

/** request is what preview and import both send: the file, its password and the target. */
const request = () => ({ ...source(state.source), password: state.source.destination ? '' : password,
  wallet: state.wallet, mode: state.mode, allowOtherIdentity: state.allowOther });

/**
 * backupWalletSources offers the "Backup wallet file" destinations: a copy of the wallet
 * kept in sync, restored with the same preview as a backup file, and without a password.
 */
function backupWalletSources(go) {
  const files = (store.config?.destinations ?? []).filter((d) => d.kind === 'sqlite');
  if (!files.length) return [];
  return [h('section', { class: 'stack', 'data-testid': 'backup-wallet-sources', 'aria-label': 'Backup wallet files' },
    h('p', {}, 'Restore from a backup wallet file that walletsync keeps in sync:'),
    h('div', { class: 'actions' }, files.map((d) => h('button', { type: 'button', title: d.path, onclick: () => {
      state.source = { destination: d.id, name: `${d.name} (${d.path})` };
      go(1);
    } }, `Use ${d.name}`))))];
}

/** nameTime reads the UTC time in a backup file's name (walletsync-<id>-20261129T201500Z.brc39). */
function nameTime(name) {
  const m = /-(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z\.brc39$/.exec(name);
  return m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z` : null;
}

/**
 * backupFileSources offers the backup files the Backups page lists, of every backup folder,
 * newest first, with when each was taken and where it is: one press chooses one.
 */
function backupFileSources(go) {
  const folders = (store.config?.destinations ?? []).filter((d) => d.kind === 'folder');
  if (!folders.length) return [];
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const el = h('section', { class: 'stack', 'data-testid': 'backup-file-sources', 'aria-label': 'Backup files' },
    h('p', {}, 'Restore a backup file from your backup folders:'), body);
  Promise.all(folders.map((d) => api.backups(d.id).then(
    (l) => l.files.filter((f) => f.name.toLowerCase().endsWith('.brc39')).map((f) => ({
      d, name: f.name, at: f.record?.createdAt ?? nameTime(f.name),
      path: `${d.path.replace(/[\\/]+$/, '')}${d.path.includes('\\') && !d.path.includes('/') ? '\\' : '/'}${f.name}`,
    })),
    (err) => [{ d, err }])))
    .then((lists) => {
      const all = lists.flat();
      const files = all.filter((f) => !f.err).sort((a, b) => (b.at ?? '').localeCompare(a.at ?? ''));
      const failed = all.filter((f) => f.err);
      body.replaceChildren(...kidsOf(
        files.length ? h('div', { class: 'table-scroll' }, h('table', { class: 'plain backup-sources' },
          h('thead', {}, h('tr', {}, ['File', 'Taken', 'Destination', ''].map((c) => h('th', { scope: 'col' }, c)))),
          h('tbody', {}, files.map((f) => h('tr', { 'data-file': f.path },
            h('th', { scope: 'row' }, h('span', { class: 'mono small-text', title: f.path }, f.name)),
            h('td', { 'data-testid': 'source-taken' }, f.at ? fmtWhen(f.at) : '—'),
            h('td', { 'data-testid': 'source-destination' }, f.d.name),
            h('td', {}, h('button', { type: 'button', class: 'small', 'aria-label': `Use ${f.name}`, onclick: () => {
              state.source = { path: f.path, name: f.path };
              go(1);
            } }, 'Choose')))))))
          : h('p', { class: 'muted' }, 'No backup files in your backup folders yet.'),
        ...failed.map((f) => (f.err.unavailable ? null : errorBox(f.err, `Could not list ${f.d.name}`)))));
    });
  return [el];
}

/** kidsOf drops null entries, as h does with its children. */
const kidsOf = (...items) => items.filter((x) => x != null && x !== false);

/**
 * unfinished says, for each configured wallet that holds part of an import that stopped
 * half-way, that it must be finished (the same file imported again) or abandoned, and
 * offers the abandon: the wallet then goes back to exactly what it was before that import.
 */
function unfinished() {
  const busyWallets = (store.overview?.wallets ?? []).filter((w) => w.importInProgress);
  return busyWallets.map((w) => {
    const problem = h('div');
    const abandon = h('button', { type: 'button', class: 'danger' }, 'Abandon that import');
    const box = notice('error',
      h('p', {}, h('strong', {}, 'Import in progress: finish or abandon. '),
        `An import into ${w.path} started ${fmtWhen(w.importInProgress.startedAt)} and stopped before the end, `,
        'so the wallet holds part of a backup. Until it is finished or abandoned, nothing syncs or exports this wallet.'),
      h('p', {}, 'To finish it, choose the same file again below. To take it back, abandon it: the wallet becomes exactly what it was before that import.'),
      h('div', { class: 'actions' }, abandon), problem);
    box.dataset.testid = 'import-unfinished';
    abandon.addEventListener('click', () => startTask(abandon, problem,
      () => api.abandonImport(w.path),
      (t) => {
        const panel = taskPanel('Abandoning the import');
        problem.replaceChildren(panel.el);
        finished(t.id, panel).then((done) => {
          if (done.state === 'succeeded') {
            problem.replaceChildren(notice('ok', h('p', {}, `Abandoned: ${w.path} is as it was before that import.`)));
            abandon.remove();
          }
        });
      },
      'The abandon did not start'));
    return box;
  });
}

function fileStep(go) {
  const input = h('input', { type: 'file', accept: '.brc39,.json', class: 'visually-hidden', id: uid('file') });
  const status = h('div', { 'aria-live': 'polite', id: uid('drop') });
  const drop = h('div', { class: 'dropzone', tabindex: '0', role: 'button', 'aria-describedby': status.id, 'data-autofocus': true },
    h('strong', {}, 'Drop a backup file here'), h('span', { class: 'muted' }, 'or press to choose one (.brc39)'));
  const upload = async (file) => {
    status.replaceChildren(h('p', {}, `Uploading ${file.name} (${fmtBytes(file.size)})…`));
    drop.setAttribute('aria-disabled', 'true');
    try {
      const { upload: id } = await api.upload(file);
      state.source = { upload: id, name: file.name, size: file.size };
      go(1);
    } catch (err) {
      status.replaceChildren(err.unavailable ? unavailable('Uploading a file from the browser')
        : errorBox(err, 'Could not upload the file'));
    } finally {
      drop.removeAttribute('aria-disabled');
    }
  };
  drop.addEventListener('click', () => input.click());
  drop.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      input.click();
    }
  });
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    const file = e.dataTransfer.files[0];
    if (file) upload(file);
  });
  input.addEventListener('change', () => input.files[0] && upload(input.files[0]));

  const path = h('input', { type: 'text', spellcheck: 'false', class: 'mono', name: 'path', value: state.source?.path ?? '' });
  const browse = browseButton(hooks.chooseOpenPath, path);
  const where = pathCheck(path, 'backup-file');
  const byPath = h('form', { class: 'inline-form' }, field('Or type the path of a file on this computer', path), browse,
    h('button', { type: 'submit' }, 'Use this file'));
  byPath.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!path.value.trim()) return;
    where.check().then((ok) => {
      if (!ok) {
        path.focus();
        return;
      }
      state.source = { path: path.value.trim(), name: path.value.trim() };
      go(1);
    });
  });
  return h('div', { class: 'stack' }, ...unfinished(),
    h('p', {}, 'Choose the encrypted backup file (.brc39) to bring back. You will see what it holds before anything changes.'),
    ...backupFileSources(go),
    ...backupWalletSources(go),
    h('p', {}, 'Or ', h('a', { href: '#/restore-server', 'data-testid': 'restore-from-server' }, 'restore from a storage server'), ' your wallet backs up to.'),
    drop, input, status, byPath, where.el);
}

/** facts says what a backup file holds: whose wallet, which network, from where, when. */
function facts(p) {
  const wallet = store.overview?.wallets.find((w) => w.path === state.wallet);
  return h('dl', { class: 'facts' },
    h('dt', {}, 'Identity'), h('dd', {}, h('code', { 'data-testid': 'preview-identity' }, shortKey(p.identityKey)), ' ', copyButton(p.identityKey, 'the identity key')),
    h('dt', {}, 'Network'), h('dd', { 'data-testid': 'preview-chain' }, chainLabel(p.chain),
      wallet?.chain && wallet.chain !== p.chain ? h('strong', { class: 'danger-text' }, ` (your wallet is on the ${chainLabel(wallet.chain)})`) : null),
    h('dt', {}, 'Written by'), h('dd', {}, p.sourceStorage?.storageName || 'a wallet', ' ', h('code', {}, shortKey(p.sourceStorage?.storageIdentityKey))),
    h('dt', {}, 'Exported'), h('dd', {}, fmtWhen(p.exportedAt)));
}

/**
 * restoredPath suggests where a restore goes: a new file beside the wallet, named for the
 * day, never the wallet itself (which is not empty, so a restore into it is refused).
 */
export function restoredPath(wallet) {
  const stamp = new Date().toISOString().slice(0, 10).replaceAll('-', '');
  const cut = Math.max(wallet.lastIndexOf('/'), wallet.lastIndexOf('\\'));
  const dir = wallet.slice(0, cut + 1);
  const base = wallet.slice(cut + 1).replace(/\.(sqlite3?|db)$/i, '');
  return `${dir}${base}-restored-${stamp}.sqlite`;
}

// restoreInto is the "Restore into" check of the password step (null while merging).
let restoreInto = null;

/** targetControl chooses where the file goes: a configured wallet to merge into, or for a
 * restore a new wallet file (by default beside the wallet) or an empty wallet. */
function targetControl() {
  const wallets = store.overview?.wallets ?? [];
  if (state.mode === 'restore') {
    if (!state.wallet || wallets.some((w) => w.path === state.wallet)) state.wallet = restoredPath(wallets[0]?.path ?? '');
    const input = h('input', { type: 'text', class: 'mono', value: state.wallet, spellcheck: 'false', name: 'restore-into',
      oninput: (e) => { state.wallet = e.target.value.trim(); } });
    restoreInto = pathCheck(input, 'new-file');
    return h('div', {}, field('Restore into', input, 'A new wallet file; the one suggested sits beside your wallet. Your wallet is not touched.'), restoreInto.el);
  }
  restoreInto = null;
  if (!wallets.some((w) => w.path === state.wallet)) state.wallet = wallets[0]?.path ?? '';
  if (wallets.length < 2) return h('p', {}, 'Import into: ', h('span', { class: 'path' }, state.wallet));
  return field('Import into', h('select', { onchange: (e) => { state.wallet = e.target.value; } },
    wallets.map((w) => h('option', { value: w.path, selected: w.path === state.wallet }, w.path))));
}

function passwordStep(go) {
  // What was typed stays: Back and a refused check keep the password.
  const pw = h('input', { type: 'password', autocomplete: 'current-password', required: true, 'data-autofocus': true, value: password });
  pw.addEventListener('input', () => { password = pw.value; });
  const target = h('div', {}, targetControl());
  const group = uid('mode');
  const modes = [
    ['merge', 'Merge into this wallet', 'Adds what the file has and the wallet lacks, and newer versions of what both have. Nothing in the wallet is lost.'],
    ['restore', 'Restore into an empty wallet', 'For a new computer: the file becomes the whole wallet. Refused if the wallet is not empty.'],
  ].map(([value, label, help]) => h('label', { class: 'choice' },
    h('input', { type: 'radio', name: group, value, checked: state.mode === value, onchange: () => {
      state.mode = value;
      target.replaceChildren(targetControl());
    } }),
    h('span', { class: 'choice-text' }, h('strong', {}, label), h('span', { class: 'help' }, help))));
  const problem = h('div', { 'data-testid': 'import-problem' });
  const check = h('button', { type: 'submit', class: 'primary' }, 'Check the file');
  const panelSlot = h('div');
  const plain = !!state.source?.destination; // a backup wallet file is not encrypted
  const form = h('form', { class: 'stack' },
    h('p', {}, plain ? 'Backup wallet file: ' : 'File: ', h('span', { class: 'path' }, state.source?.name ?? ''), state.source?.size ? ` (${fmtBytes(state.source.size)})` : ''),
    plain ? h('p', { class: 'help' }, 'A backup wallet file is not encrypted: no password is needed.') : field('Password of the backup file', pw),
    h('fieldset', {}, h('legend', {}, 'How'), modes),
    target,
    problem,
    panelSlot,
    h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => go(0) }, 'Back'), check));

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    password = pw.value;
    problem.replaceChildren();
    busy(check, async () => {
      if (restoreInto && !await restoreInto.check()) return;
      try {
        const t = await api.previewImport(request());
        state.checkId = t.id;
        putTask(t);
        const panel = taskPanel('Checking the file');
        panelSlot.replaceChildren(panel.el);
        const done = await finished(t.id, panel);
        panelSlot.replaceChildren();
        if (done.state === 'succeeded') {
          go(2);
          return;
        }
        // A refusal (another network, already imported, not empty) still says what the file holds.
        const p = resultOf(done.id);
        problem.replaceChildren(...(p?.identityKey
          ? [errorBox(taskProblem(done), 'This file cannot be imported here'), facts(p)]
          : [errorBox(taskProblem(done))]));
      } catch (err) {
        problem.replaceChildren(err.unavailable ? unavailable('Checking a backup file before import') : errorBox(err, 'Could not check the file'));
      }
      pw.select(); // kept, and selected: typing replaces it
      pw.focus();
    });
  });
  return form;
}

/** finished resolves with task id once it has ended, updating panel meanwhile. */
export function finished(id, panel) {
  return new Promise((resolve) => {
    const look = (t) => {
      if (t?.id !== id) return;
      panel.update(t);
      if (terminal(t.state)) {
        off();
        resolve(t);
      }
    };
    const off = on('tasks', look);
    look(store.tasks.get(id));
  });
}

function previewStep(go) {
  const p = resultOf(state.checkId);
  if (!p || (!password && !state.source?.destination)) {
    return h('div', { class: 'stack' }, notice('muted', h('p', {}, 'Check the file again: the password is not kept when you leave this page.')),
      h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => go(1) }, 'Back')));
  }
  const restore = state.mode === 'restore';
  const ack = h('input', { type: 'checkbox', 'aria-describedby': 'nothing-yet' });
  const confirm = h('button', { type: 'submit', class: restore ? 'danger' : 'primary', disabled: true }, restore ? 'Restore now' : 'Import now');
  // Another identity needs its own yes; conflicts cannot be said yes to.
  state.allowOther = false;
  const other = p.otherIdentity ? h('input', { type: 'checkbox', 'data-testid': 'allow-other-identity' }) : null;
  const ready = () => { confirm.disabled = !ack.checked || (other && !other.checked) || p.conflictTotal > 0; };
  ack.addEventListener('change', ready);
  other?.addEventListener('change', () => { state.allowOther = other.checked; ready(); });
  const otherBox = other && notice('error', h('p', {}, h('strong', {}, 'This file holds another identity. '),
    'It belongs to ', h('code', {}, shortKey(p.identityKey)), ', and this wallet to ',
    (p.walletIdentities ?? []).map((k) => h('code', {}, shortKey(k))),
    '. Importing it leaves two identities in one wallet, which is rarely what you want.'),
  h('label', { class: 'choice' }, other, 'I know: bring this other identity into my wallet as well.'));
  if (otherBox) otherBox.dataset.testid = 'preview-other-identity';
  const conflictBox = p.conflictTotal > 0 && notice('error',
    h('p', {}, h('strong', {}, `${fmtNumber(p.conflictTotal)} rows of this file cannot go into this wallet, so it cannot be imported here. `),
      'Nothing has been written. The wallet already holds rows with the same unique keys:'),
    h('ul', {}, (p.conflicts ?? []).map((c) => h('li', {}, `${tableLabel(c.table)} ${(c.key ?? []).join(', ')}: ${c.reason}`))),
    p.conflictTotal > (p.conflicts ?? []).length ? h('p', {}, `and ${fmtNumber(p.conflictTotal - p.conflicts.length)} more.`) : null);
  if (conflictBox) conflictBox.dataset.testid = 'preview-conflicts';
  const problem = h('div');
  const num = (v) => h('td', { class: 'num' }, fmtNumber(v ?? 0));
  const form = h('form', { class: 'stack', 'data-testid': 'import-preview' },
    facts(p),
    p.resumes ? notice('muted', h('p', {}, 'An earlier import of this file stopped before the end: importing it now finishes that one.')) : null,
    otherBox, conflictBox || null,
    h('div', { class: 'table-scroll' }, h('table', { class: 'plain preview-table' },
      h('thead', {}, h('tr', {}, ['What', 'In the file', 'New', 'Updated', 'Unchanged', 'Skipped (older)'].map((c, i) => h('th', { scope: 'col', class: i ? 'num' : '' }, c)))),
      // sync_states rows are not in the document's counts, yet the merge may update one.
      h('tbody', {}, tables({ ...p.counts, ...p.plan }).map((t) => {
        const c = p.plan?.[t] ?? {};
        return h('tr', { 'data-table': t }, h('th', { scope: 'row' }, tableLabel(t)), num(p.counts[t]), num(c.inserts), num(c.updates), num(c.unchanged), num(c.older));
      })),
      h('tfoot', {}, h('tr', {}, h('th', { scope: 'row' }, 'Total'),
        num(Object.values(p.counts).reduce((a, b) => a + b, 0)), num(p.total?.inserts), num(p.total?.updates), num(p.total?.unchanged), num(p.total?.older))))),
    h('p', { id: 'nothing-yet' }, h('strong', {}, 'Nothing has been written yet. '), 'Your wallet changes only when you confirm below.'),
    h('label', { class: 'choice' }, ack, `I want to ${restore ? 'restore' : 'import'} this file into ${state.wallet}.`),
    problem,
    h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => go(1) }, 'Back'), confirm));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    startTask(confirm, problem,
      () => api.importBackup({ ...request(), confirm: true }),
      (t) => { password = ''; state.importId = t.id; go(3); },
      'The import did not start');
  });
  return form;
}

function importingStep(go, panel) {
  return taskStep(state.importId, panel, h('button', { type: 'button', onclick: () => go(1) }, 'Back'));
}

/** restoredView shows the wallet a restore made: where it is, whose, and what it holds. */
function restoredView(r) {
  const counts = r.counts ?? {};
  return h('section', { class: 'card stack', 'data-testid': 'restored-wallet', 'aria-label': 'The restored wallet' },
    h('h3', {}, 'The restored wallet'),
    h('dl', { class: 'facts' },
      h('dt', {}, 'File'), h('dd', { class: 'path', 'data-testid': 'restored-path' }, r.target),
      h('dt', {}, 'Identity'), h('dd', {}, h('code', {}, shortKey(r.identityKey))),
      h('dt', {}, 'Network'), h('dd', {}, chainLabel(r.chain))),
    h('table', { class: 'plain' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'What'), h('th', { scope: 'col', class: 'num' }, 'Rows'))),
      h('tbody', {}, tables(counts).map((t) => h('tr', { 'data-table': t }, h('th', { scope: 'row' }, tableLabel(t)), h('td', { class: 'num' }, fmtNumber(counts[t])))))));
}

/**
 * nextSteps offers what a person does with a restored wallet: make it the wallet the agent
 * protects (in place of the current one, which stays untouched), or keep it aside.
 */
function nextSteps(r) {
  const current = store.config?.wallets?.[0]?.path ?? '';
  const result = h('div', { 'aria-live': 'polite' });
  const adopt = h('button', { type: 'button', class: 'primary' }, 'Make it the wallet walletsync protects');
  const aside = h('button', { type: 'button' }, 'Keep it aside');
  const buttons = h('div', { class: 'actions' }, adopt, aside);
  adopt.addEventListener('click', async () => {
    const ok = await confirmDialog({
      title: 'Protect the restored wallet?',
      body: `walletsync then backs up ${r.target} instead of ${current}, to the same destinations. ${current} stays where it is, untouched. Point your wallet software at the restored file too.`,
      ok: 'Protect it',
    });
    if (!ok) return;
    busy(adopt, async () => {
      try {
        await api.replaceWallet(current, r.target);
        await refreshConfig();
        refreshOverview();
        buttons.remove();
        result.replaceChildren(notice('ok', h('p', {}, h('strong', {}, 'Done. '), `walletsync now protects ${r.target}. `,
          h('a', { href: '#/overview' }, 'See it on the overview'), '.')));
      } catch (err) {
        result.replaceChildren(errorBox(err, 'Not changed'));
      }
    });
  });
  aside.addEventListener('click', () => {
    buttons.remove();
    result.replaceChildren(notice('muted', h('p', {}, `Kept aside at ${r.target}. walletsync goes on protecting ${current}, which this restore did not touch.`)));
  });
  return h('div', { class: 'stack', 'data-testid': 'restore-next' }, h('p', {}, h('strong', {}, 'What next? '),
    'Your wallet is unchanged. The restored one is a separate file:'), buttons, result);
}

function doneStep(go) {
  const r = resultOf(state.importId) ?? {};
  const restored = r.mode === 'restore';
  const again = h('button', { type: 'button', onclick: () => {
    Object.assign(state, { source: null, checkId: '', importId: '', wallet: '' });
    password = '';
    go(0);
  } }, 'Restore another file');
  return h('div', { class: 'stack', 'data-testid': 'import-result' },
    notice('ok', h('p', {}, h('strong', {}, restored ? 'Restored. ' : 'Imported. '),
      `${fmtNumber(r.inserts)} rows added and ${fmtNumber(r.updates)} updated in ${r.target ?? state.wallet}.`)),
    restored ? [restoredView(r), nextSteps(r)] : null,
    h('div', { class: 'actions' }, restored ? null : h('a', { href: '#/overview', class: 'button' }, 'See the wallet'), again));
}

export default {
  id: 'restore',
  title: 'Restore',
  mount(main) {
    const panel = taskPanel('Importing');
    // The snapshot bundle part sits below the wizard while it is at its first step, choosing
    // what to restore from.
    const bundles = bundleRestore(finished);
    const views = [fileStep, passwordStep, previewStep, (next) => importingStep(next, panel), doneStep]
      .map((view, i) => (next) => { bundles.hidden = i !== 0; return view(next); });
    const go = wizard(main, {
      title: 'Restore from a backup file',
      lead: 'Bring back a wallet from an encrypted backup file. You see what changes before anything is written.',
      titles,
      state,
      views,
    });
    main.append(bundles);
    const off = on('tasks', (t) => {
      if (!t || t.id !== state.importId || state.step !== 3) return;
      if (terminal(t.state)) go(t.state === 'succeeded' ? 4 : 3);
      else panel.update(t);
    });
    return off;
  },
};
