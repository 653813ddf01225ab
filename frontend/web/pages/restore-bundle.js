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

// More of the wallet file's tables by their names for people (format.js names the synced ones).
const fileTableLabels = { settings: 'Wallet settings', monitor_events: 'Monitor events' };
const fileTableLabel = (t) => fileTableLabels[t] ?? tableLabel(t);

/** tableGroup says whose a table of the wallet file is: walletsync's, Knex's, or the wallet's. */
const tableGroup = (t) => (t.startsWith('walletsync_') ? 'walletsync' : t.startsWith('knex_migrations') ? 'knex' : 'wallet');

/**
 * tablesTable lists the tables of one group with the bundle's rows and, when census is
 * known, the wallet's rows now. label names each table.
 */
function tablesTable(testid, caption, names, m, census, label) {
  return h('div', { class: 'table-scroll' }, h('table', { class: 'plain', 'data-testid': testid },
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Table'), h('th', { scope: 'col', class: 'num' }, 'In the bundle'),
      census ? h('th', { scope: 'col', class: 'num' }, 'In your wallet now') : null)),
    h('tbody', {}, names.map((t) => h('tr', { 'data-table': t },
      h('th', { scope: 'row' }, label(t)), h('td', { class: 'num' }, fmtNumber(m.tables?.[t] ?? 0)),
      census ? h('td', { class: 'num' }, fmtNumber(census.tables?.[t] ?? 0)) : null)))));
}

/**
 * manifestView shows what a bundle holds, from its manifest: the wallet's tables by their
 * names for people, and apart from them walletsync's own tables and Knex's migration
 * records; beside each, when census (what the wallet holds now) is given, the wallet's rows.
 */
function manifestView(m, census = null) {
  const data = (m.files ?? [])[0];
  const names = tables({ ...m.tables, ...census?.tables });
  const group = (g) => names.filter((t) => tableGroup(t) === g);
  const mono = (t) => h('code', {}, t);
  return h('div', { class: 'stack', 'data-testid': 'bundle-manifest' },
    h('dl', { class: 'facts' },
      h('dt', {}, 'Taken'), h('dd', { 'data-testid': 'bundle-created' }, fmtWhen(m.createdAt)),
      h('dt', {}, 'Network'), h('dd', { 'data-testid': 'bundle-chain' }, chainLabel(m.chain)),
      h('dt', {}, 'Wallet storage'), h('dd', {}, m.storageName || 'a wallet', ' ', h('code', {}, shortKey(m.storageIdentityKey))),
      h('dt', {}, 'Identities'), h('dd', { 'data-testid': 'bundle-identities' },
        (m.identities ?? []).map((id, i) => [i ? ', ' : '', h('code', { title: id.identityKey }, shortKey(id.identityKey))])),
      h('dt', {}, 'Size'), h('dd', {}, data ? `${fmtBytes(data.rawSizeBytes)} of wallet, ${fmtBytes(data.sizeBytes)} compressed` : '—'),
      h('dt', {}, 'Written by'), h('dd', {}, `walletsync ${m.walletsyncVersion}`)),
    tablesTable('bundle-wallet-tables', 'Your wallet\'s data', group('wallet'), m, census, fileTableLabel),
    group('walletsync').length ? tablesTable('bundle-walletsync-tables',
      `walletsync's own records (sync checkpoints and id maps, schema ${m.schema?.walletsync ?? 0})`, group('walletsync'), m, census, mono) : null,
    group('knex').length ? tablesTable('bundle-knex-tables',
      `The wallet-toolbox's migration records (Knex: ${fmtNumber(m.schema?.toolboxMigrations ?? 0)} migrations, the last ${m.schema?.toolboxLatest || '—'})`,
      group('knex'), m, census, mono) : null);
}

/**
 * lossView says exactly what replacing the wallet with the bundle loses, from what the
 * wallet holds now (census): the identities the bundle lacks, the tables where the wallet
 * holds more rows than the bundle, and every change made after the bundle was taken.
 */
function lossView(m, census) {
  const inBundle = new Set((m.identities ?? []).map((i) => i.identityKey));
  const gone = (census.identities ?? []).filter((k) => !inBundle.has(k));
  const fewer = tables(census.tables).filter((t) => tableGroup(t) === 'wallet' && (census.tables[t] ?? 0) > (m.tables?.[t] ?? 0));
  const box = notice('warn',
    h('p', {}, h('strong', {}, 'What a restore loses. '),
      `Restoring replaces the whole file: ${census.wallet} becomes exactly the bundle taken ${fmtWhen(m.createdAt)}, `,
      'so every change made to the wallet since then is lost, also in tables whose counts match.'),
    gone.length ? h('p', { 'data-testid': 'bundle-lost-identities' }, `The bundle does not hold ${gone.length === 1 ? 'this identity' : 'these identities'} of your wallet, lost with all their data: `,
      gone.map((k, i) => [i ? ', ' : '', h('code', { title: k }, shortKey(k))]), '.') : null,
    fewer.length ? [h('p', {}, 'Your wallet holds more rows than the bundle in these tables; at least the difference is lost:'),
      h('ul', { 'data-testid': 'bundle-lost-rows' }, fewer.map((t) => h('li', { 'data-table': t },
        `${fileTableLabel(t)}: ${fmtNumber(census.tables[t])} now, ${fmtNumber(m.tables?.[t] ?? 0)} in the bundle, at least ${fmtNumber(census.tables[t] - (m.tables?.[t] ?? 0))} lost`)))]
      : h('p', {}, 'In every table the bundle holds at least as many rows as your wallet.'),
    h('p', {}, 'The wallet as it is now is not kept: export a backup file of it first if you may need what it holds.'));
  box.dataset.testid = 'bundle-loss';
  return box;
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
    // What the wallet holds now, beside what the bundle holds, and what the swap loses.
    const shown = h('div', { class: 'stack' }, manifestView(m), h('p', { class: 'muted' }, 'Counting what your wallet holds now…'));
    api.walletCensus(wallet).then(
      (census) => shown.replaceChildren(manifestView(m, census), lossView(m, census)),
      (err) => shown.replaceChildren(...[manifestView(m), err.unavailable ? null : errorBox(err, 'Could not count what your wallet holds now')].filter(Boolean)),
    );
    const form = h('form', { class: 'stack', 'data-testid': 'bundle-preview' },
      notice('ok', h('p', {}, h('strong', {}, 'Verified. '),
        'Its digests, SQLite\'s integrity and foreign-key checks and its row counts all match its manifest.')),
      shown,
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
