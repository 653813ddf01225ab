// Recovery kit: one printable page with what a restore on a new computer needs (the
// wallet's identity and network, each destination and where it is, the steps), and a box
// to write the backup password in by hand. The password is printed only when the person
// asks and types it, and the agent confirms it opens the newest backup: the agent never
// reads a stored password back. "Save as a text file" is a download the browser saves
// where the person chooses; the agent writes no file.

import { store, on } from '../store.js';
import { api } from '../api.js';
import { h, pageHeader, errorBox, busy, field } from '../ui.js';
import { chainLabel, destinationKind } from '../format.js';

// where says where a destination's backups are, for a person on another computer.
function where(d) {
  switch (d.kind) {
    case 'folder': return `the newest .brc39 file in the folder ${d.path}`;
    case 'bundles': return `the newest bundle folder in ${d.path}`;
    case 'storage-server': return `the storage server at ${d.path}, which keeps it under the wallet's identity`;
    default: return `the backup wallet file ${d.path}`;
  }
}

// steps are the steps to restore, as text, for the page and the text file alike.
export function kitSteps(ov) {
  const kinds = new Set(ov.destinations.map((d) => d.kind));
  const steps = [
    'Install walletsync on the new computer (this version or a newer one) and open its dashboard (walletsync open).',
    'Find a backup from the list above: if the computer holding it is lost, use another destination.',
  ];
  if (kinds.has('folder')) {
    steps.push('A backup file (.brc39): on the Restore page choose the file, type the backup password, check that the preview shows the identity and network above, and restore it into a new wallet file. On the command line: walletsync import --in FILE --db NEW-WALLET.sqlite');
  }
  if (kinds.has('sqlite')) steps.push('A backup wallet file (.sqlite): it is a whole wallet already; copy it to the new computer and point your wallet app at it (no password needed).');
  if (kinds.has('bundles')) steps.push('A bundle folder: on the Restore page choose "Restore a bundle", or walletsync bundle restore --in BUNDLE --to NEW-WALLET.sqlite (no password needed).');
  if (kinds.has('storage-server')) steps.push('A storage server: on the Restore page choose "Restore from a storage server", with the identity key of your wallet to sign in.');
  steps.push('Choose "Make it the wallet walletsync protects" (or walletsync wallet protect --db NEW-WALLET.sqlite) so that backups start again, and open the wallet in your wallet app.');
  return steps;
}

// kitText is the kit as a plain text file.
export function kitText(ov, password, now = new Date()) {
  const lines = ['walletsync recovery kit', `Made ${now.toISOString()}`, ''];
  for (const w of ov.wallets) {
    lines.push(`Wallet: ${w.path}`, `Network: ${chainLabel(w.chain)}`);
    for (const id of w.identities) lines.push(`Identity key: ${id.identityKey}`);
    lines.push('');
  }
  lines.push('Where it is backed up:');
  for (const d of ov.destinations) lines.push(`- ${d.name} (${destinationKind(d.kind)}): ${where(d)}`);
  lines.push('', 'To restore on a new computer:');
  kitSteps(ov).forEach((s, i) => lines.push(`${i + 1}. ${s}`));
  lines.push('', `Backup password: ${password || '______________________________ (write it here by hand)'}`, '');
  return lines.join('\n');
}

function kitBody(ov, password) {
  return h('article', { class: 'kit', 'data-testid': 'kit' },
    h('h2', {}, 'walletsync recovery kit'),
    h('p', { class: 'muted' }, `Made ${new Date().toLocaleString()}. Keep it somewhere safe, away from this computer: with it and the password, anyone can restore this wallet.`),
    ov.wallets.map((w) => h('section', { class: 'kit-wallet', 'data-kit-wallet': w.path },
      h('h3', {}, 'Your wallet'),
      h('dl', {},
        h('dt', {}, 'File'), h('dd', {}, h('code', {}, w.path)),
        h('dt', {}, 'Network'), h('dd', { 'data-testid': 'kit-network' }, chainLabel(w.chain)),
        w.identities.map((id) => [h('dt', {}, 'Identity key'), h('dd', {}, h('code', { class: 'kit-key', 'data-testid': 'kit-identity' }, id.identityKey))])))),
    h('section', {},
      h('h3', {}, 'Where it is backed up'),
      ov.destinations.length
        ? h('ul', {}, ov.destinations.map((d) => h('li', { 'data-kit-destination': d.id }, h('strong', {}, d.name), ` (${destinationKind(d.kind)}): ${where(d)}`)))
        : h('p', {}, 'Nowhere yet: add a destination first, or this kit has nothing to restore from.')),
    h('section', {},
      h('h3', {}, 'To restore on a new computer'),
      h('ol', { 'data-testid': 'kit-steps' }, kitSteps(ov).map((s) => h('li', {}, s)))),
    h('section', { class: 'kit-password' },
      h('h3', {}, 'Backup password'),
      password
        ? h('p', { class: 'kit-password-value', 'data-testid': 'kit-password' }, h('code', {}, password))
        : h('div', { class: 'kit-write-here', 'data-testid': 'kit-password-box', 'aria-label': 'Write the backup password here by hand' }),
      h('p', { class: 'muted small-text' }, 'The backups in folders cannot be restored without it, and walletsync cannot recover it.')));
}

export default {
  id: 'kit',
  title: 'Recovery kit',
  mount(main) {
    let password = '';
    let link = null;
    const body = h('div');
    const problem = h('div', { 'aria-live': 'polite', 'data-testid': 'kit-problem' });
    const input = h('input', { type: 'password', autocomplete: 'off', name: 'kit-password' });
    const ask = h('form', { class: 'row', hidden: true },
      h('div', { class: 'grow' }, field('Type the backup password to print it on the kit', input)),
      h('button', { type: 'submit' }, 'Put it on the kit'));
    const toggle = h('input', { type: 'checkbox', name: 'print-password', onchange: () => {
      ask.hidden = !toggle.checked;
      if (!toggle.checked) {
        password = '';
        render();
      }
    } });
    const print = h('button', { type: 'button', class: 'primary', onclick: () => window.print() }, 'Print');
    const save = h('button', { type: 'button', onclick: () => {
      const ov = store.overview;
      if (!ov) return;
      // A data: address, not a blob: one, which the Content-Security-Policy's connect-src
      // would keep the page from reading back.
      link?.remove();
      link = h('a', { href: `data:text/plain;charset=utf-8,${encodeURIComponent(kitText(ov, password))}`, download: 'walletsync-recovery-kit.txt', 'data-testid': 'kit-download', hidden: true });
      main.append(link);
      link.click();
    } }, 'Save as a text file');
    ask.addEventListener('submit', (e) => {
      e.preventDefault();
      problem.replaceChildren();
      busy(ask.querySelector('button'), async () => {
        const typed = input.value;
        input.value = '';
        try {
          const r = await api.testPassword(typed);
          if (!r.opens || !r.unattended) {
            problem.replaceChildren(errorBox({ message: r.opens ? 'That password opens the newest backup, but walletsync now writes backups with another one: print that one.' : r.message }, 'Not printed'));
            return;
          }
          password = typed;
          render();
        } catch (err) {
          problem.replaceChildren(errorBox(err, 'Not printed'));
        }
      });
    });
    main.append(pageHeader('Recovery kit', 'What a restore on a new computer needs, on one page to print or save.'),
      h('div', { class: 'stack' },
        h('section', { class: 'card no-print', 'aria-label': 'Kit options' },
          h('p', {}, 'Print it, or save it as a text file where you choose (a USB stick, a password manager): walletsync keeps no copy. ',
            'The password is left blank for you to write in by hand, unless you ask for it to be printed.'),
          h('label', { class: 'choice' }, toggle, 'Print the backup password on the kit'),
          ask, problem,
          h('div', { class: 'actions' }, print, save)),
        body));
    const render = () => {
      const ov = store.overview;
      body.replaceChildren(ov ? kitBody(ov, password) : h('p', { class: 'muted' }, 'Loading…'));
    };
    render();
    const off = on('overview', render);
    return off;
  },
};
