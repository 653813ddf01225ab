// The Restore page's snapshot bundle part: the whole wallet brought back from a bundle (every
// identity, settings, sync records), in place. The person picks a bundle of a bundle folder,
// or types a bundle's folder; the agent verifies it and the page shows what it holds; only
// after a confirm does the agent let go of the wallet, swap the bundle's copy in and open the
// wallet again.

import { api, hooks } from '../api.js';
import { store, putTask, refreshOverview } from '../store.js';
import { taskPanel, startTask } from '../task-panel.js';
import {
  h, field, errorBox, taskProblem, notice, unavailable, confirmDialog, browseButton,
} from '../ui.js';
import {
  shortKey, fmtBytes, fmtNumber, fmtWhen, chainLabel, tableLabel, tables,
} from '../format.js';

// The part's place survives leaving the page: the bundle chosen, the wallet it replaces and
// its two tasks.
const state = { source: null, wallet: '', checkId: '', restoreId: '' };

const resultOf = (id) => store.tasks.get(id)?.result;

/** request names the chosen bundle and the wallet it replaces. */
const request = () => ({ ...state.source.req, wallet: walletPath() });

/** walletPath is the wallet a restore replaces: the one chosen, else the first walletsync protects. */
function walletPath() {
  const wallets = (store.config?.wallets ?? []).map((w) => w.path);
  return wallets.includes(state.wallet) ? state.wallet : wallets[0] ?? '';
}

/** walletChoice chooses the wallet to replace when walletsync protects more than one. */
function walletChoice(changed) {
  const wallets = (store.config?.wallets ?? []).map((w) => w.path);
  if (wallets.length < 2) return null;
  return field('Replace the wallet', h('select', { onchange: (e) => { state.wallet = e.target.value; changed(); } },
    wallets.map((p) => h('option', { value: p, selected: p === walletPath() }, p))));
}

/** manifestView shows what a bundle holds, from its manifest. */
function manifestView(m) {
  const data = (m.files ?? [])[0];
  return h('div', { class: 'stack', 'data-testid': 'bundle-manifest' },
    h('dl', { class: 'facts' },
      h('dt', {}, 'Taken'), h('dd', { 'data-testid': 'bundle-created' }, fmtWhen(m.createdAt)),
      h('dt', {}, 'Network'), h('dd', { 'data-testid': 'bundle-chain' }, chainLabel(m.chain)),
      h('dt', {}, 'Wallet storage'), h('dd', {}, m.storageName || 'a wallet', ' ', h('code', {}, shortKey(m.storageIdentityKey))),
      h('dt', {}, 'Identities'), h('dd', { 'data-testid': 'bundle-identities' },
        (m.identities ?? []).map((id, i) => [i ? ', ' : '', h('code', { title: id.identityKey }, shortKey(id.identityKey))])),
      h('dt', {}, 'Size'), h('dd', {}, data ? `${fmtBytes(data.rawSizeBytes)} of wallet, ${fmtBytes(data.sizeBytes)} compressed` : '—'),
      h('dt', {}, 'Written by'), h('dd', {}, `walletsync ${m.walletsyncVersion}`)),
    h('div', { class: 'table-scroll' }, h('table', { class: 'plain' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Table'), h('th', { scope: 'col', class: 'num' }, 'Rows'))),
      h('tbody', {}, tables(m.tables).map((t) => h('tr', { 'data-table': t },
        h('th', { scope: 'row' }, tableLabel(t)), h('td', { class: 'num' }, fmtNumber(m.tables[t]))))))));
}

/**
 * bundleRestore is the part, for the Restore page. finished(id, panel) resolves with a task
 * once it has ended, updating panel meanwhile (the page's own).
 */
export function bundleRestore(finished) {
  const body = h('div', { class: 'stack' });
  const el = h('section', { class: 'card stack wizard', 'data-testid': 'bundle-restore', 'aria-label': 'Restore from a snapshot bundle' },
    h('h2', {}, 'Restore the whole wallet from a snapshot bundle'),
    h('p', {}, 'A bundle is a copy of the entire wallet file: every identity, settings and sync records. ',
      'Restoring one replaces your wallet with it. You see what it holds before anything changes.'),
    body);

  /** back is a button to the list of bundles. */
  const back = (label = 'Choose another') => h('button', { type: 'button', onclick: () => { state.source = null; state.restoreId = ''; render(); } }, label);

  const choose = (req, name) => {
    Object.assign(state, { source: { req, name }, checkId: '', restoreId: '' });
    check();
  };

  /** check verifies the chosen bundle and shows its manifest, or why it cannot be used. */
  async function check() {
    const panel = taskPanel('Checking the bundle');
    const problem = h('div', { 'data-testid': 'bundle-problem' });
    body.replaceChildren(h('p', {}, 'Bundle: ', h('span', { class: 'path' }, state.source.name)), panel.el, problem);
    try {
      const t = await api.previewBundle(state.source.req);
      state.checkId = t.id;
      putTask(t);
      const done = await finished(t.id, panel);
      if (done.state === 'succeeded') {
        render();
        return;
      }
      const m = resultOf(done.id);
      problem.replaceChildren(errorBox(taskProblem(done), 'This bundle cannot be restored'), m?.format ? manifestView(m) : null,
        h('div', { class: 'actions' }, back()));
    } catch (err) {
      problem.replaceChildren(err.unavailable ? unavailable('Restoring a snapshot bundle') : errorBox(err, 'Could not check the bundle'),
        h('div', { class: 'actions' }, back()));
    }
  }

  /** sources lists each bundle folder's bundles, newest first, and a path field. */
  function sources() {
    const folders = (store.config?.destinations ?? []).filter((d) => d.kind === 'bundles');
    const lists = folders.map((d) => {
      const list = h('div', { 'data-bundles': d.id }, h('p', { class: 'muted' }, 'Loading…'));
      api.backups(d.id).then((listing) => {
        // The listing is newest first; a bundle's name says when it was taken.
        const files = listing.files ?? [];
        list.replaceChildren(files.length
          ? h('ul', {}, files.map((f) => h('li', { 'data-bundle': f.name },
            h('span', { class: 'mono small-text' }, f.name), ' ',
            h('button', { type: 'button', class: 'small', onclick: () => choose({ destination: d.id, name: f.name }, `${d.name}: ${f.name}`) }, 'Check this bundle'))))
          : notice('muted', h('p', {}, 'No bundles in this folder yet.')));
      }, (err) => list.replaceChildren(errorBox(err, 'Could not list the folder')));
      return h('div', { class: 'stack' }, h('h3', {}, d.name), h('p', { class: 'path' }, d.path), list);
    });
    const path = h('input', { type: 'text', spellcheck: 'false', class: 'mono', name: 'bundle-path' });
    const browse = browseButton(hooks.chooseFolder, path);
    const byPath = h('form', { class: 'inline-form' }, field('Or type the folder of a bundle on this computer', path), browse,
      h('button', { type: 'submit' }, 'Check this bundle'));
    byPath.addEventListener('submit', (e) => {
      e.preventDefault();
      const p = path.value.trim();
      if (p) choose({ path: p }, p);
    });
    return [...lists, byPath];
  }

  /** preview shows the checked bundle and asks for the confirm. */
  function preview(m) {
    const wallet = walletPath();
    const current = store.overview?.wallets?.find((w) => w.path === wallet);
    const ack = h('input', { type: 'checkbox', 'data-testid': 'bundle-ack' });
    const go = h('button', { type: 'submit', class: 'danger', disabled: true }, 'Restore now');
    ack.addEventListener('change', () => { go.disabled = !ack.checked; });
    const problem = h('div', { 'data-testid': 'bundle-problem' });
    const form = h('form', { class: 'stack', 'data-testid': 'bundle-preview' },
      notice('ok', h('p', {}, h('strong', {}, 'Verified. '),
        'Its digests, SQLite\'s integrity and foreign-key checks and its row counts all match its manifest.')),
      manifestView(m),
      walletChoice(render),
      current?.chain && current.chain !== m.chain
        ? notice('error', h('p', {}, `This bundle is on the ${chainLabel(m.chain)}, your wallet on the ${chainLabel(current.chain)}.`)) : null,
      h('p', {}, h('strong', {}, 'Nothing has been written yet. '),
        `Restoring replaces ${wallet} with this bundle; what the wallet holds now and the bundle lacks is lost. `,
        'Close the wallet app first: walletsync does not replace a wallet another program has open.'),
      h('label', { class: 'choice' }, ack, `I want to replace ${wallet} with this bundle.`),
      problem,
      h('div', { class: 'actions' }, back(), go));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const ok = await confirmDialog({ title: 'Replace your wallet?', ok: 'Replace it', danger: true,
        body: `${wallet} becomes the bundle taken ${fmtWhen(m.createdAt)}. walletsync stops using the wallet while it swaps the file, then opens it again.` });
      if (!ok) return;
      startTask(go, problem, () => api.restoreBundle({ ...request(), confirm: true }),
        (t) => { state.restoreId = t.id; render(); }, 'The restore did not start');
    });
    return form;
  }

  /** restoring follows the restore, then says how it ended. */
  function restoring() {
    const panel = taskPanel('Restoring the bundle');
    const out = h('div', { 'aria-live': 'polite' });
    finished(state.restoreId, panel).then((done) => {
      refreshOverview();
      const again = back('Restore another bundle');
      if (done.state !== 'succeeded') {
        out.replaceChildren(errorBox(taskProblem(done), 'Not restored'), h('div', { class: 'actions' }, again));
        return;
      }
      const r = resultOf(done.id) ?? {};
      out.replaceChildren(h('div', { class: 'stack', 'data-testid': 'bundle-restored' },
        notice('ok', h('p', {}, h('strong', {}, 'Restored. '), `${r.wallet} now holds the bundle taken ${fmtWhen(r.manifest?.createdAt)}, `,
          `with ${fmtNumber(r.manifest?.identities?.length ?? 0)} identities; walletsync has opened it again.`)),
        h('table', { class: 'plain' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Table'), h('th', { scope: 'col', class: 'num' }, 'Rows in the wallet now'))),
          h('tbody', {}, tables(r.tables).map((t) => h('tr', { 'data-table': t },
            h('th', { scope: 'row' }, tableLabel(t)), h('td', { class: 'num' }, fmtNumber(r.tables[t])))))),
        h('div', { class: 'actions' }, h('a', { href: '#/overview', class: 'button' }, 'See the wallet'), again)));
    });
    return [h('p', {}, 'Bundle: ', h('span', { class: 'path' }, state.source?.name ?? '')), panel.el, out];
  }

  function render() {
    const m = resultOf(state.checkId);
    if (state.restoreId) body.replaceChildren(...restoring());
    else if (state.source && m?.format && store.tasks.get(state.checkId)?.state === 'succeeded') body.replaceChildren(preview(m));
    else if (state.source && state.checkId) check();
    else body.replaceChildren(...sources());
  }
  render();
  return el;
}
