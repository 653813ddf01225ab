// Export: a guided way to write one encrypted BRC-39 backup file of an identity, where the
// person chooses, under a password they choose.

import { api, hooks } from '../api.js';
import { store, on } from '../store.js';
import { taskPanel, startTask, taskStep } from '../task-panel.js';
import {
  h, field, notice, passwordPair, copyButton, uid, wizard, browseButton, pathCheck,
} from '../ui.js';
import { shortKey, fmtSats, fmtBytes, fmtNumber, terminal } from '../format.js';

const titles = ['What to export', 'Where to save it', 'Password', 'Writing', 'Done'];

// The wizard's place survives leaving the page (the export goes on meanwhile); the password
// is never kept here.
const state = { step: 0, wallet: '', identity: '', path: '', overwrite: false, taskId: '' };

const dirname = (p) => p.replace(/[\\/][^\\/]*$/, '') || '.';
const sep = (p) => (p.includes('\\') && !p.includes('/') ? '\\' : '/');

/**
 * suggestName is the backup file's suggested name: the wallet's name and the day, ending in
 * .brc39 (with the identity's first characters when the wallet holds several).
 */
function suggestName() {
  const day = new Date().toISOString().slice(0, 10);
  const base = (state.wallet.replace(/^.*[\\/]/, '') || 'wallet').replace(/\.(sqlite3?|db)$/i, '') || 'wallet';
  const w = store.overview?.wallets.find((x) => x.path === state.wallet);
  const who = (w?.identities.length ?? 0) > 1 ? `-${state.identity.slice(0, 8)}` : '';
  return `${base}${who}-${day}.brc39`;
}

/** suggestPath is the suggested backup file: suggestName in the wallet's folder. */
const suggestPath = () => `${dirname(state.wallet)}${sep(state.wallet)}${suggestName()}`;

/**
 * brc39Offer offers a .brc39 name for a path that lacks one: a name inside a folder that was
 * given, and the same name ending in .brc39 otherwise. null when the path will do.
 */
function brc39Offer(p, folder) {
  if (folder) return `${p.replace(/[\\/]+$/, '')}${sep(p)}${suggestName()}`;
  if (/\.brc39$/i.test(p)) return null;
  return `${p.replace(/\.(json|bak|backup)$/i, '')}.brc39`;
}

function chooseStep(next) {
  const wallets = store.overview?.wallets ?? [];
  if (!wallets.length) return notice('muted', h('p', {}, 'No wallet is configured yet.'));
  state.wallet ||= wallets[0].path;
  const w = wallets.find((x) => x.path === state.wallet) ?? wallets[0];
  state.identity = w.identities.some((i) => i.identityKey === state.identity) ? state.identity : w.identities[0]?.identityKey ?? '';
  const walletSelect = wallets.length > 1 && h('select', { onchange: (e) => { state.wallet = e.target.value; next(0); } },
    wallets.map((x) => h('option', { value: x.path, selected: x.path === state.wallet }, x.path)));
  const group = uid('identity');
  return h('div', { class: 'stack' },
    walletSelect ? field('Wallet', walletSelect) : h('p', {}, 'Wallet: ', h('span', { class: 'path' }, w.path)),
    h('fieldset', {}, h('legend', {}, 'Identity'),
      w.identities.map((i) => h('label', { class: 'choice' },
        h('input', { type: 'radio', name: group, value: i.identityKey, checked: i.identityKey === state.identity,
          onchange: () => { state.identity = i.identityKey; } }),
        h('code', {}, shortKey(i.identityKey)), h('span', { class: 'muted' }, ` ${fmtSats(i.balance)}`)))),
    h('div', { class: 'actions' }, h('button', { type: 'button', class: 'primary', disabled: !state.identity, onclick: () => next(1) }, 'Next')));
}

function whereStep(next) {
  state.path ||= suggestPath();
  const path = h('input', { type: 'text', value: state.path, required: true, spellcheck: 'false', class: 'mono', name: 'path' });
  const browse = browseButton(hooks.chooseSavePath, path);
  // An export never replaces a file unless asked, and then only an older backup file: never a
  // wallet or anything else (the agent refuses those whatever this box says).
  const overwrite = h('input', { type: 'checkbox', name: 'overwrite', checked: state.overwrite });
  const problem = h('div');
  const where = pathCheck(path, 'new-file', () => overwrite.checked);
  const form = h('form', { class: 'stack' },
    field('Save the backup file as', path, 'The full path of the new file. Keep backups off this computer\'s disk too: a USB stick, another disk or a cloud folder.'),
    where.el,
    browse,
    h('label', { class: 'choice' }, overwrite, 'If a backup file already has this name, replace it'),
    problem,
    h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => next(0) }, 'Back'), h('button', { type: 'submit', class: 'primary' }, 'Next')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!path.value.trim()) {
      problem.replaceChildren(notice('error', h('p', {}, 'Give the path of the file to write.')));
      return;
    }
    state.path = path.value.trim();
    state.overwrite = overwrite.checked;
    problem.replaceChildren();
    where.check().then(async (ok) => {
      // A folder, or a name that does not end in .brc39, gets a name that does.
      const folder = !ok && (await api.checkPath(state.path, 'backup-folder').then((c) => c.ok, () => false));
      const offer = (ok || folder) && brc39Offer(state.path, folder);
      if (offer) {
        const use = h('button', { type: 'button', 'data-testid': 'use-brc39-name', onclick: () => {
          path.value = offer;
          path.dispatchEvent(new Event('input', { bubbles: true }));
          problem.replaceChildren();
          where.check();
        } }, `Use ${offer}`);
        const box = notice('warn', h('p', {}, folder
          ? `${state.path} is a folder: the backup file needs a name in it.`
          : 'A backup file\'s name ends in .brc39, so that walletsync and wallets know it when it is restored.'),
        h('div', { class: 'actions' }, use));
        box.dataset.testid = 'brc39-name';
        if (folder) where.el.replaceChildren();
        problem.replaceChildren(box);
        use.focus();
        return;
      }
      if (ok) next(2);
      else path.focus();
    });
  });
  return form;
}

function passwordStep(next) {
  const pw = passwordPair();
  const ack = h('input', { type: 'checkbox', required: true });
  const problem = h('div');
  const go = h('button', { type: 'submit', class: 'primary' }, 'Export');
  const form = h('form', { class: 'stack' },
    h('p', {}, 'The file is encrypted with this password. Anyone who has the file and the password can read your wallet.'),
    pw.el,
    notice('warn', h('p', {}, h('strong', {}, 'A lost password means a lost backup. '),
      'Nobody, walletsync included, can open the file without it. Write it down and keep it somewhere safe.')),
    h('label', { class: 'choice' }, ack, 'I have written the password down.'),
    problem,
    h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => next(1) }, 'Back'), go));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const wrong = pw.check() || (!ack.checked && 'Confirm that you have written the password down.');
    if (wrong) {
      problem.replaceChildren(notice('error', h('p', {}, wrong)));
      return;
    }
    startTask(go, problem,
      () => api.exportFile({ wallet: state.wallet, identityKey: state.identity, path: state.path, password: pw.value(), overwrite: state.overwrite }),
      (t) => { state.taskId = t.id; next(3); },
      'The export did not start');
  });
  return form;
}

function writingStep(next, panel) {
  return taskStep(state.taskId, panel, h('button', { type: 'button', onclick: () => next(2) }, 'Back: try again'));
}

function doneStep(next) {
  const t = store.tasks.get(state.taskId);
  const file = t?.result;
  const rows = Object.values(file?.rows ?? {}).reduce((a, b) => a + b, 0);
  return h('div', { class: 'stack', 'data-testid': 'export-result' },
    notice('ok', h('p', {}, h('strong', {}, 'Saved. '), 'Keep the file and its password in different places.')),
    h('dl', { class: 'facts' },
      h('dt', {}, 'File'), h('dd', {}, h('span', { class: 'path', 'data-testid': 'export-path' }, file?.path ?? ''), ' ', copyButton(file?.path ?? '', 'the path')),
      h('dt', {}, 'Size'), h('dd', {}, `${fmtBytes(file?.size)} (${fmtNumber(rows)} rows)`),
      h('dt', {}, 'SHA-256'), h('dd', {}, h('code', { class: 'hash', 'data-testid': 'export-sha256' }, file?.sha256 ?? ''), ' ', copyButton(file?.sha256 ?? '', 'the SHA-256'))),
    h('p', { class: 'muted' }, 'The SHA-256 fingerprint lets you check later that the file has not changed.'),
    h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => {
      Object.assign(state, { step: 0, path: '', overwrite: false, taskId: '' });
      next(0);
    } }, 'Export another')));
}

export default {
  id: 'export',
  title: 'Export',
  mount(main) {
    const panel = taskPanel('Writing the backup file');
    let loaded = !!store.overview;
    const go = wizard(main, {
      title: 'Export a backup file',
      lead: 'Write an encrypted backup file of your wallet, to keep wherever you choose.',
      titles,
      state,
      views: [chooseStep, whereStep, passwordStep, (next) => writingStep(next, panel), doneStep],
    });
    const offs = [
      on('overview', () => {
        if (!loaded && state.step === 0) go(0, false);
        loaded = !!store.overview;
      }),
      on('tasks', (t) => {
        if (!t || t.id !== state.taskId || state.step !== 3) return;
        if (terminal(t.state)) go(t.state === 'succeeded' ? 4 : 3);
        else panel.update(t);
      }),
    ];
    return () => offs.forEach((off) => off());
  },
};
