// Storage servers: who signs for one (the Add destination form's part), and the restore
// from one (#/restore-server): the person gives the URL and the signer, sees what the
// server holds for the identity, counted table by table, and only then confirms.

import { api, hooks } from '../api.js';
import { store, on, putTask } from '../store.js';
import { finished } from './restore.js';
import { taskPanel, startTask, taskStep } from '../task-panel.js';
import { h, field, errorBox, taskProblem, notice, busy, uid, wizard, browseButton, copyButton } from '../ui.js';
import { shortKey, fmtNumber, fmtAgo, fmtWhen, chainLabel, tableLabel, tables, terminal } from '../format.js';

/**
 * signerFields chooses who signs for a storage server: the identity's key file (a path on
 * this computer, or a file picked in the browser, read here and sent once: the agent keeps
 * it in its secrets, never in the config), or the person's BRC-100 wallet at a URL.
 * value() is the agent's ServerSigner, or null with the reason shown when nothing is given.
 */
export function signerFields() {
  const group = uid('signer');
  const keyPath = h('input', { type: 'text', class: 'mono', spellcheck: 'false', autocomplete: 'off', name: 'key-file' });
  const picker = h('input', { type: 'file', name: 'key-file-pick' });
  let picked = ''; // the picked file's text, in this page's memory only until sent
  picker.addEventListener('change', async () => {
    picked = picker.files[0] ? await picker.files[0].text() : '';
    if (picked) keyPath.value = '';
  });
  const walletURL = h('input', { type: 'url', class: 'mono', spellcheck: 'false', autocomplete: 'off', name: 'signer-wallet', placeholder: 'http://127.0.0.1:3321' });
  const keyPart = h('div', { class: 'stack' },
    field('Key file', keyPath, 'The identity key file (64 hex digits), readable only by you. walletsync keeps a copy in its secrets, never in its settings.'),
    browseButton(hooks.chooseOpenPath, keyPath),
    field('Or pick the file', picker));
  const walletPart = field('Your wallet\'s address', walletURL, 'A BRC-100 wallet (such as Metanet Desktop) that holds the identity signs each request.');
  const choices = [['key', 'My identity key file'], ['wallet', 'My BRC-100 wallet']].map(([value, label]) => h('label', { class: 'choice' },
    h('input', { type: 'radio', name: group, value, checked: value === 'key', onchange: show }), label));
  const how = () => choices.map((l) => l.querySelector('input')).find((r) => r.checked).value;
  function show() {
    keyPart.hidden = how() !== 'key';
    walletPart.hidden = how() !== 'wallet';
  }
  show();
  const problem = h('div');
  const el = h('fieldset', { 'data-testid': 'server-signer' }, h('legend', {}, 'Who signs'),
    h('p', { class: 'help' }, 'A storage server keeps only the data of the identity that signs: sign as your wallet\'s identity.'),
    choices, keyPart, walletPart, problem);
  return {
    el,
    value() {
      problem.replaceChildren();
      let v = null;
      if (how() === 'wallet') v = walletURL.value.trim() ? { walletURL: walletURL.value.trim() } : null;
      else if (keyPath.value.trim()) v = { keyFile: keyPath.value.trim() };
      else if (picked) v = { key: picked };
      if (!v) problem.replaceChildren(notice('error', h('p', {}, how() === 'wallet' ? 'Give your wallet\'s address.' : 'Choose the key file.')));
      return v;
    },
  };
}

/** serverConfirmed says when a storage server last confirmed holding the backup. */
export function serverConfirmed(d) {
  if (d.kind !== 'storage-server') return null;
  return d.lastConfirmed
    ? h('span', { class: 'small-text', title: fmtWhen(d.lastConfirmed), 'data-testid': 'last-confirmed' }, `Server confirmed ${fmtAgo(d.lastConfirmed)}`)
    : h('span', { class: 'small-text muted', 'data-testid': 'last-confirmed' }, 'The server has not confirmed a backup yet');
}

const titles = ['Server', 'Check what it holds', 'Restoring', 'Done'];

// The wizard's place survives leaving the page; the signer is asked again after a reload.
const state = { step: 0, url: '', previewId: '', restoreId: '' };

const resultOf = (id) => store.tasks.get(id)?.result;

/**
 * signerText says who signs for a configured storage server: its key, kept in walletsync's
 * secrets, or the person's BRC-100 wallet.
 */
const signerText = (d) => (d.walletURL ? `signed by your wallet at ${d.walletURL}` : 'signed with the key walletsync keeps for it');

function serverStep(go) {
  const url = h('input', { type: 'url', class: 'mono', required: true, spellcheck: 'false', autocomplete: 'off', name: 'server-url', value: state.url, 'data-autofocus': true });
  const signer = signerFields();
  const wallet = store.config?.wallets?.[0]?.path ?? '';
  const problem = h('div', { 'data-testid': 'server-problem' });
  const panelSlot = h('div');
  const check = h('button', { type: 'submit', class: 'primary' }, 'Check what it holds');

  // preview asks the agent what the server holds and what restoring it would change.
  const preview = (button, req) => busy(button, async () => {
    problem.replaceChildren();
    try {
      const t = await api.previewServerRestore({ ...req, wallet });
      state.previewId = t.id;
      putTask(t);
      const panel = taskPanel('Reading what the server holds');
      panelSlot.replaceChildren(panel.el);
      const done = await finished(t.id, panel);
      panelSlot.replaceChildren();
      if (done.state === 'succeeded') go(1);
      else problem.replaceChildren(errorBox(taskProblem(done), 'Cannot restore from this server'));
    } catch (err) {
      problem.replaceChildren(errorBox(err, 'Could not ask the server'));
    }
  });

  // The storage servers walletsync backs up to, each with the signer it keeps: nothing to type.
  const servers = (store.config?.destinations ?? []).filter((d) => d.kind === 'storage-server');
  const configured = servers.length ? h('section', { class: 'stack', 'data-testid': 'configured-servers', 'aria-label': 'Your storage servers' },
    h('p', {}, 'Restore from a storage server walletsync backs up to:'),
    h('div', { class: 'stack' }, servers.map((d) => {
      const use = h('button', { type: 'button', 'data-destination': d.id }, `Use ${d.name}`);
      use.addEventListener('click', () => {
        state.url = d.path;
        preview(use, { url: d.path, signer: { destination: d.id } });
      });
      return h('div', { class: 'actions' }, use, h('span', {}, h('span', { class: 'path' }, d.path), ` ${signerText(d)}`));
    }))) : null;

  const form = h('form', { class: 'stack' },
    h('p', {}, 'Bring back what a wallet-toolbox storage server keeps for your identity. You see what it holds before anything is written.'),
    configured,
    servers.length ? h('p', {}, 'Or give another server and who signs for it:') : null,
    field('Server URL', url, 'The storage server your wallet backs up to, such as https://storage.example.com.'),
    signer.el,
    h('p', {}, 'Restore into: ', h('span', { class: 'path' }, wallet)),
    problem, panelSlot,
    h('div', { class: 'actions' }, h('a', { href: '#/restore', class: 'button' }, 'Back to backup files'), check));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    problem.replaceChildren();
    const who = signer.value();
    if (!who) return;
    state.url = url.value.trim();
    preview(check, { url: state.url, signer: who });
  });
  return form;
}

function previewStep(go) {
  const p = resultOf(state.previewId);
  if (!p) return h('div', { class: 'stack' }, notice('muted', h('p', {}, 'Ask the server again.')),
    h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => go(0) }, 'Back')));
  const ack = h('input', { type: 'checkbox', 'aria-describedby': 'server-nothing-yet' });
  const confirm = h('button', { type: 'submit', class: 'primary', disabled: true }, 'Restore now');
  ack.addEventListener('change', () => { confirm.disabled = !ack.checked || p.conflictTotal > 0; });
  const problem = h('div');
  const counts = p.counts ?? {};
  const plan = p.plan ?? {};
  const changes = p.changes ?? {};
  const num = (v) => h('td', { class: 'num' }, fmtNumber(v ?? 0));
  const form = h('form', { class: 'stack', 'data-testid': 'server-preview' },
    h('dl', { class: 'facts' },
      h('dt', {}, 'Server'), h('dd', { class: 'path' }, p.url, p.storageName ? ` (${p.storageName})` : ''),
      h('dt', {}, 'Identity'), h('dd', {}, h('code', { 'data-testid': 'server-identity' }, shortKey(p.identityKey)), ' ', copyButton(p.identityKey, 'the identity key')),
      h('dt', {}, 'Network'), h('dd', {}, chainLabel(p.chain))),
    p.total ? null : notice('muted', h('p', {}, 'The server holds nothing for this identity yet.')),
    p.conflictTotal > 0 ? notice('error', h('p', {}, h('strong', {}, `${fmtNumber(p.conflictTotal)} rows from the server cannot go into this wallet: `),
      'the wallet already holds rows with the same unique keys, so the restore would stop half-way. Nothing has been written.')) : null,
    // As a backup file's preview: what the server holds, and what restoring it changes in the wallet.
    h('div', { class: 'table-scroll' }, h('table', { class: 'plain preview-table' },
      h('thead', {}, h('tr', {}, ['What', 'On the server', 'New', 'Updated', 'Unchanged', 'Skipped (older)'].map((c, i) => h('th', { scope: 'col', class: i ? 'num' : '' }, c)))),
      h('tbody', {}, tables({ ...counts, ...plan }).map((t) => {
        const c = plan[t] ?? {};
        return h('tr', { 'data-table': t }, h('th', { scope: 'row' }, tableLabel(t)), num(counts[t]), num(c.inserts), num(c.updates), num(c.unchanged), num(c.older));
      })),
      h('tfoot', {}, h('tr', {}, h('th', { scope: 'row' }, 'Total'), num(p.total), num(changes.inserts), num(changes.updates), num(changes.unchanged), num(changes.older))))),
    h('p', { id: 'server-nothing-yet' }, h('strong', {}, 'Nothing has been written yet. '),
      'Restoring merges these rows into your wallet: it adds what the wallet lacks and newer versions of what both have; nothing in the wallet is lost.'),
    h('label', { class: 'choice' }, ack, `I want to restore these rows into ${p.wallet}.`),
    problem,
    h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => go(0) }, 'Back'), confirm));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    startTask(confirm, problem,
      () => api.restoreFromServer({ preview: state.previewId, confirm: true }),
      (t) => { state.restoreId = t.id; go(2); },
      'The restore did not start');
  });
  return form;
}

function doneStep(go) {
  const t = store.tasks.get(state.restoreId);
  const r = t?.result ?? {};
  const again = h('button', { type: 'button', onclick: () => {
    Object.assign(state, { previewId: '', restoreId: '' });
    go(0);
  } }, 'Restore again');
  return h('div', { class: 'stack', 'data-testid': 'server-restore-result' },
    notice('ok', h('p', {}, h('strong', {}, 'Restored. '),
      `${fmtNumber(t?.counters?.inserts)} rows added and ${fmtNumber(t?.counters?.updates)} updated in ${r.wallet ?? ''}.`)),
    h('div', { class: 'actions' }, h('a', { href: '#/overview', class: 'button' }, 'See the wallet'), again));
}

export default {
  id: 'restore-server',
  title: 'Restore from a storage server',
  mount(main) {
    const panel = taskPanel('Restoring');
    const go = wizard(main, {
      title: 'Restore from a storage server',
      lead: 'Bring back your wallet from a wallet-toolbox storage server. You see what it holds before anything is written.',
      titles,
      state,
      views: [serverStep, previewStep, (next) => taskStep(state.restoreId, panel, h('button', { type: 'button', onclick: () => next(1) }, 'Back')), doneStep],
    });
    return on('tasks', (t) => {
      if (!t || t.id !== state.restoreId || state.step !== 2) return;
      if (terminal(t.state)) go(t.state === 'succeeded' ? 3 : 2);
      else panel.update(t);
    });
  },
};
