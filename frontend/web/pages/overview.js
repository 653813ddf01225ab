// Overview: is my wallet backed up, where, and when was the last good backup? And is the
// background work slowing the wallet down? (the live charts)

import { store, on, chartWindow, refreshConfig, refreshOverview } from '../store.js';
import { api, hooks } from '../api.js';
import { h, pageHeader, errorBox, badge, copyButton, onFrame, keepOpen, busy, browseButton } from '../ui.js';
import { lineChart } from '../charts.js';
import { parseDetail, progressWords } from '../task-panel.js';
import { serverConfirmed } from './server.js';
import {
  fmtAgo, fmtWhen, fmtSats, fmtNumber, fmtBytes, shortKey, chainLabel, tableLabel, tables,
  destinationKind, scheduleText, terminal, shortPath, healthClass,
} from '../format.js';

// The tables a person recognises; the rest are under "All tables".
const headline = ['transactions', 'outputs', 'output_baskets', 'tx_labels', 'certificates'];

// healthCard is the overview's answer: green, amber ("not backed up yet", paused) or red
// (a destination is late or failing, each listed with its fix when there are several).
function healthCard(ov) {
  const alerts = ov.alerts ?? [];
  return h('section', { class: `card health-card ${healthClass(ov)}`, 'aria-labelledby': 'health-title', 'data-health': healthClass(ov) },
    h('h2', { id: 'health-title', class: 'visually-hidden' }, 'Backup health'),
    h('span', { class: 'health-icon', 'aria-hidden': 'true' }, ov.healthy ? '✓' : '!'),
    h('div', {},
      h('p', { class: 'health-sentence', 'data-testid': 'health' }, ov.health),
      alerts.length > 1 ? h('ul', { class: 'alert-list', 'data-testid': 'alerts' }, alerts.map((a) => h('li', { 'data-alert': a.destination }, `${a.text} ${a.fix}`))) : null));
}

function identityView(id) {
  const counts = id.counts ?? {};
  return h('div', { class: 'identity', 'data-identity': id.identityKey },
    h('div', { class: 'identity-top' },
      h('p', { class: 'balance' }, h('strong', {}, fmtSats(id.balance)),
        h('span', { class: 'muted' }, ` in ${fmtNumber(id.spendableOutputs)} spendable outputs`)),
      h('div', { class: 'identity-line' },
        h('span', { class: 'muted' }, 'Identity '),
        h('code', { title: id.identityKey }, shortKey(id.identityKey)),
        copyButton(id.identityKey, 'the identity key'))),
    h('dl', { class: 'counts' }, headline.map((t) => h('div', { 'data-table': t },
      h('dt', {}, tableLabel(t)), h('dd', {}, fmtNumber(counts[t] ?? 0))))),
    h('details', { class: 'all-tables', 'data-key': `tables-${id.identityKey}` },
      h('summary', {}, 'All tables'),
      h('table', { class: 'plain' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Table'), h('th', { scope: 'col', class: 'num' }, 'Rows'))),
        h('tbody', {}, tables(counts).map((t) => h('tr', { 'data-table': t },
          h('td', {}, tableLabel(t)), h('td', { class: 'num' }, fmtNumber(counts[t]))))))));
}

function walletCard(w) {
  return h('section', { class: 'card', 'aria-label': 'Wallet' },
    h('div', { class: 'card-head' }, h('h2', {}, 'Your wallet'), w.chain ? badge(chainLabel(w.chain), 'info') : null,
      h('span', { class: 'path small-text push' }, w.path)),
    w.error ? errorBox({ message: w.error, hint: w.errorHint, detail: w.errorDetail }, 'The wallet cannot be opened') : null,
    w.identities.map(identityView));
}

// chooseWalletCard is the first run's one step: the agent protects no wallet until the
// person names the file. It is built once per visit, so an overview refresh keeps what
// was typed.
function chooseWalletCard() {
  const input = h('input', {
    type: 'text', class: 'mono', name: 'wallet-path', autocomplete: 'off', spellcheck: 'false',
    placeholder: '/home/you/.bsv-desktop/wallet-<identity>-main.sqlite', 'aria-describedby': 'choose-wallet-help',
  });
  const problem = h('div', { 'data-testid': 'wallet-problem' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Protect this wallet');
  const protect = async (btn, path) => {
    problem.replaceChildren();
    try {
      await busy(btn, () => api.addWallet(path));
      await refreshConfig();
      refreshOverview();
    } catch (err) {
      problem.replaceChildren(errorBox(err, 'walletsync cannot protect this file'));
    }
  };
  const submit = (e) => {
    e.preventDefault();
    return protect(button, input.value.trim());
  };
  const found = h('div', { 'data-testid': 'found-wallets' }, h('p', { class: 'muted' }, 'Looking where wallet apps keep their wallets…'));
  api.foundWallets().then((list) => found.replaceChildren(list.length
    ? h('ul', { class: 'plain-list' }, list.map((w) => h('li', { 'data-found': w.path },
      h('strong', {}, w.app), ' ', h('code', { class: 'path', title: w.path }, w.path), h('br'),
      w.error ? h('span', { class: 'muted' }, w.error)
        : h('span', { class: 'small-text' },
          `${w.identities?.length ? `Identity ${w.identities.map(shortKey).join(', ')}` : 'No identity yet'} · ${chainLabel(w.chain)} · ${fmtBytes(w.sizeBytes)} · changed ${fmtAgo(w.modified)} `,
          h('button', { type: 'button', class: 'primary small', onclick: (e) => protect(e.currentTarget, w.path) }, 'Protect this wallet')))))
    : h('p', { class: 'muted' }, 'No wallet found where wallet apps keep them; type its path below.')))
    .catch((err) => found.replaceChildren(errorBox(err, 'Could not look for wallets')));
  return h('section', { class: 'card', 'aria-labelledby': 'choose-wallet-title', 'data-testid': 'choose-wallet' },
    h('h2', { id: 'choose-wallet-title' }, 'Choose the wallet to protect'),
    h('p', { id: 'choose-wallet-help' }, 'Pick a wallet found on this computer, or type the full path of your wallet app\'s SQLite wallet file. ',
      'walletsync checks that it is a wallet before it protects it, and never changes which wallet your app uses.'),
    found,
    h('form', { class: 'row', onsubmit: submit },
      h('label', { class: 'grow' }, h('span', { class: 'visually-hidden' }, 'Wallet file'), input),
      browseButton(hooks.chooseWalletPath, input), button),
    problem);
}

function destinationStatus(d) {
  const t = store.tasks.get(d.running?.id) ?? d.running;
  if (t && !terminal(t.state)) {
    const { phase, text } = parseDetail(t.detail);
    // A storage server that does not answer: said as the agent words it, not as work going on.
    if (text?.startsWith('cannot reach ')) return h('a', { href: '#/destinations', class: 'badge failed', 'data-testid': 'unreachable' }, `C${text.slice(1)}`);
    const p = progressWords(t);
    return h('a', { href: '#/destinations', class: 'badge running' },
      t.state === 'queued' ? 'Waiting' : `Working${phase ? ` (${phase})` : ''}: ${p.percent ? `${p.percent}, ` : ''}${p.rows} rows`);
  }
  if (d.alert?.kind === 'failing') {
    return h('span', { title: d.lastError, 'data-alert': 'failing' }, badge('Failing', 'failed'), h('span', { class: 'small-text' }, ` ${d.lastMessage || d.lastError}`),
      h('span', { class: 'small-text alert-fix' }, d.alert.fix));
  }
  if (d.alert?.kind === 'late') {
    return h('span', { title: d.alert.text, 'data-alert': 'late' }, badge('Late', 'failed'), h('span', { class: 'small-text alert-fix' }, d.alert.fix));
  }
  if (d.paused) return badge(d.pause?.until ? `Paused until ${fmtWhen(d.pause.until)}` : 'Paused', 'paused');
  return d.lastSuccess ? badge('OK', 'succeeded') : badge('Not backed up here yet', 'queued');
}

// drillCell says when a restore drill last proved a destination's newest backup good; the
// drill checks backup folders and bundle folders.
function drillCell(d) {
  if (d.kind === 'sqlite' || d.kind === 'storage-server') return h('span', { class: 'muted', title: 'Restore drills check backup folders and bundle folders' }, '—');
  if (d.lastVerifyError) return h('span', { title: d.lastVerifyError }, badge('Failed', 'failed'), h('span', { class: 'small-text' }, ' the newest backup did not restore'));
  if (!d.lastVerified) return h('span', { class: 'muted' }, 'Not yet');
  return h('span', { title: fmtWhen(d.lastVerified), 'data-testid': 'drill-passed' }, `Passed ${fmtAgo(d.lastVerified)}`);
}

function destinationsCard(ov) {
  if (!ov.destinations.length) {
    return h('section', { class: 'card' }, h('h2', {}, 'Where it is backed up'),
      h('p', {}, 'Nowhere yet. ', h('a', { href: '#/destinations/add' }, 'Add a destination'), ' to start keeping your wallet safe.'));
  }
  return h('section', { class: 'card', 'aria-labelledby': 'dest-title' },
    h('h2', { id: 'dest-title' }, 'Where it is backed up'),
    h('table', { class: 'plain destinations-table' },
      h('thead', {}, h('tr', {}, ['Destination', 'Last good backup', 'Last restore drill', 'Next run', 'Status'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ov.destinations.map((d) => h('tr', { 'data-destination': d.id, class: d.alert ? 'alert' : '' },
        h('th', { scope: 'row' }, h('span', { class: 'dest-name' }, d.name), h('span', { class: 'muted small-text' }, destinationKind(d.kind)),
          h('span', { class: 'path small-text dest-path', title: d.path, 'data-testid': 'dest-path' }, shortPath(d.path))),
        h('td', { 'data-testid': 'last-success' }, d.lastSuccess
          ? h('span', { title: fmtWhen(d.lastSuccess) }, fmtAgo(d.lastSuccess), h('span', { class: 'muted small-text' }, fmtWhen(d.lastSuccess)), serverConfirmed(d))
          : ['Not backed up here yet', serverConfirmed(d)]),
        h('td', {}, drillCell(d)),
        h('td', {}, d.paused ? h('span', { class: 'muted' }, 'Paused')
          : d.nextRun ? h('span', { title: fmtWhen(d.nextRun) }, fmtAgo(d.nextRun)) : h('span', { class: 'muted' }, scheduleText(d.schedule))),
        h('td', {}, destinationStatus(d)))))));
}

function charts() {
  const ms = (v) => `${v < 10 ? v.toFixed(1) : Math.round(v)} ms`;
  return h('section', { class: 'card', 'aria-labelledby': 'live-title' },
    h('h2', { id: 'live-title' }, 'Live: does background work slow the wallet?'),
    h('div', { class: 'chart-row' },
      lineChart({
        title: 'Wallet response time',
        samples: store.latency,
        series: [
          { key: 'backupP95', label: 'backing up: slowest 5% (p95)', cls: 's1' },
          { key: 'backupP50', label: 'backing up: typical (p50)', cls: 's1 typical' },
          { key: 'restoreP95', label: 'restoring: slowest 5% (p95)', cls: 's2' },
          { key: 'restoreP50', label: 'restoring: typical (p50)', cls: 's2 typical' },
        ],
        format: ms,
        windowMs: chartWindow,
        empty: 'Waiting for measurements…',
      }),
      lineChart({
        title: 'Background sync throughput',
        samples: store.throughput,
        series: [{ key: 'bytes', label: 'data', cls: 's3' }],
        format: (v) => `${fmtBytes(v)}/s`,
        windowMs: chartWindow,
        empty: 'No sync has run since this page opened.',
      })));
}

export default {
  id: 'overview',
  title: 'Overview',
  mount(main) {
    const health = h('div');
    const wallets = h('div', { class: 'stack' });
    const dests = h('div');
    const live = h('div');
    const chooser = chooseWalletCard();
    main.append(pageHeader('Overview', 'Is your wallet backed up, where, and when?'), h('div', { class: 'stack' }, health, dests, wallets, live));
    const render = onFrame(() => {
      const ov = store.overview;
      if (!ov) {
        health.replaceChildren(store.loadError ? errorBox(store.loadError, 'Could not load the overview') : h('p', { class: 'muted' }, 'Loading…'));
        return;
      }
      health.replaceChildren(healthCard(ov));
      if (!ov.wallets.length) {
        // Left where it is: moving the form would drop the focus and the person's click.
        if (wallets.childNodes.length !== 1 || wallets.firstChild !== chooser) wallets.replaceChildren(chooser);
      } else {
        keepOpen(wallets, () => wallets.replaceChildren(...ov.wallets.map(walletCard)));
      }
      dests.replaceChildren(destinationsCard(ov));
    });
    const renderDestinations = onFrame(() => store.overview && dests.replaceChildren(destinationsCard(store.overview)));
    const renderCharts = onFrame(() => live.replaceChildren(charts()));
    render();
    renderCharts();
    const offs = [on('overview', render), on('tasks', renderDestinations), on('tick', renderDestinations), on('metrics', renderCharts)];
    return () => offs.forEach((off) => off());
  },
};
