// Pure functions that turn the API's values into the words a person reads.

const number = new Intl.NumberFormat();
const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const clock = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });

export const fmtNumber = (n) => number.format(n ?? 0);

export function fmtBytes(n) {
  n = n ?? 0;
  if (n < 1000) return `${n} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let i = -1;
  do {
    n /= 1000;
    i++;
  } while (n >= 1000 && i < units.length - 1);
  return `${n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

/** fmtDuration says how long, in seconds, minutes and hours: "3 min 20 s". */
export function fmtDuration(seconds) {
  if (seconds == null || !isFinite(seconds)) return '—';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  return `${Math.round(h / 24)} days`;
}

/** fmtAgo says when, relative to now: "just now", "3 minutes ago", "in 2 hours". */
export function fmtAgo(iso, now = Date.now()) {
  if (!iso) return 'never';
  const d = (now - Date.parse(iso)) / 1000;
  const future = d < 0;
  const a = Math.abs(d);
  if (a < 60) return future ? 'in less than a minute' : 'just now';
  const [n, unit] = a < 3600 ? [a / 60, 'minute'] : a < 172800 ? [a / 3600, 'hour'] : [a / 86400, 'day'];
  const k = Math.floor(n);
  const words = `${k} ${unit}${k === 1 ? '' : 's'}`;
  return future ? `in ${words}` : `${words} ago`;
}

export const fmtWhen = (iso) => (iso ? when.format(new Date(iso)) : '—');
export const fmtClock = (iso) => clock.format(new Date(iso));

/**
 * shortPath shortens a long path to its last two parts ("…/Backups/wallet.sqlite"), for
 * tables; the full path goes in a title beside it.
 */
export function shortPath(p = '', max = 36) {
  if (p.length <= max) return p;
  const parts = p.split(/[\\/]/).filter(Boolean);
  const tail = parts.slice(-2).join(p.includes('/') ? '/' : '\\');
  return `…${p.includes('/') ? '/' : '\\'}${tail.length > max ? parts.at(-1) : tail}`;
}

/** shortKey is an identity key as a person can compare it: the first and last 8 digits. */
export const shortKey = (k) => (k && k.length > 20 ? `${k.slice(0, 8)}…${k.slice(-8)}` : k ?? '');

export function fmtSats(sats) {
  const bsv = (sats ?? 0) / 1e8;
  return `${bsv.toLocaleString(undefined, { maximumFractionDigits: 8 })} BSV`;
}

/** syncOrder is the tables in the order a sync walks them; a checkpoint names its table by position. */
export const syncOrder = [
  'users', 'proven_txs', 'output_baskets', 'output_tags', 'tx_labels', 'transactions', 'outputs',
  'tx_labels_map', 'output_tags_map', 'certificates', 'certificate_fields', 'commissions', 'proven_tx_reqs',
];

const tableLabels = {
  users: 'Identity',
  proven_txs: 'Proven transactions',
  proven_tx_reqs: 'Proof requests',
  output_baskets: 'Baskets',
  transactions: 'Transactions',
  commissions: 'Commissions',
  outputs: 'Outputs (coins)',
  output_tags: 'Tags',
  output_tags_map: 'Tag links',
  tx_labels: 'Labels',
  tx_labels_map: 'Label links',
  certificates: 'Certificates',
  certificate_fields: 'Certificate fields',
  sync_states: 'Sync records',
};

export const tableLabel = (t) => tableLabels[t] ?? t;

/** tables returns the table names of a per-table map in sync order, unknown ones last. */
export function tables(counts) {
  const names = Object.keys(counts ?? {});
  const rank = (t) => (syncOrder.includes(t) ? syncOrder.indexOf(t) : syncOrder.length);
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

const chainLabels = { main: 'Main network', test: 'Test network', teratest: 'Teratest network', mock: 'Mock network' };
export const chainLabel = (c) => chainLabels[c] ?? (c || 'Unknown network');

const destinationKinds = { sqlite: 'Backup wallet file', folder: 'Backup folder', bundles: 'Snapshot bundle folder', 'storage-server': 'Storage server' };
export const destinationKind = (k) => destinationKinds[k] ?? k;

const taskKinds = {
  sync: 'Sync',
  backup: 'Backup',
  bundle: 'Bundle',
  export: 'Export',
  verify: 'Verify',
  drill: 'Restore drill',
  'import-preview': 'Import check',
  import: 'Import',
  'bundle-restore': 'Bundle restore',
  'server-preview': 'Storage server check',
  'server-restore': 'Restore from a storage server',
};
export const taskKind = (k) => taskKinds[k] ?? k;

const taskStates = {
  queued: 'Waiting',
  running: 'Running',
  cancelling: 'Cancelling…',
  cancelled: 'Cancelled',
  succeeded: 'Done',
  failed: 'Failed',
  interrupted: 'Interrupted',
  skipped: 'Skipped',
};
export const taskState = (s) => taskStates[s] ?? s;

/**
 * outcome is a task's state as a person reads it: "skipped" for a success that checked
 * nothing (a restore drill before any backup existed), else the task's own state.
 */
export const outcome = (t) => (t.state === 'succeeded' && t.result?.skipped ? 'skipped' : t.state);
export const terminal = (s) => ['cancelled', 'succeeded', 'failed', 'interrupted'].includes(s);

/** parseDuration reads a Go duration ("1h0m0s", "30s", "168h0m0s") as seconds. */
export function parseDuration(text) {
  const units = { h: 3600, m: 60, s: 1, ms: 0.001 };
  let total = 0;
  for (const [, n, u] of String(text ?? '').matchAll(/([\d.]+)(h|ms|m|s)/g)) total += Number(n) * units[u];
  return total;
}

/** goDuration writes seconds as a Go duration the agent reads. */
export const goDuration = (seconds) => `${Math.round(seconds)}s`;

/** every says "every 2 hours", "every day", "every 90 minutes". */
export function every(seconds) {
  for (const [size, unit] of [[86400, 'day'], [3600, 'hour'], [60, 'minute']]) {
    if (seconds >= size && seconds % size === 0) {
      const n = seconds / size;
      return n === 1 ? `every ${unit}` : `every ${n} ${unit}s`;
    }
  }
  return `every ${seconds} seconds`;
}

export function scheduleText(s) {
  switch (s?.kind) {
    case 'interval': return `Runs ${every(parseDuration(s.every))}`;
    case 'daily': return `Runs every day at ${s.at}`;
    case 'change': return `Runs when the wallet changes (after ${fmtDuration(parseDuration(s.debounce) || 30)} of quiet)`;
  }
  return 'No schedule';
}

/**
 * passwordStrength estimates how hard a password is to guess, from its length and the kinds
 * of characters in it: a hint, not a guarantee.
 */
export function passwordStrength(pw) {
  if (!pw) return { score: 0, label: '' };
  let pool = 0;
  if (/[a-z]/.test(pw)) pool += 26;
  if (/[A-Z]/.test(pw)) pool += 26;
  if (/\d/.test(pw)) pool += 10;
  if (/[^a-zA-Z\d]/.test(pw)) pool += 33;
  let bits = pw.length * Math.log2(Math.max(pool, 2));
  const distinct = new Set(pw).size;
  if (distinct < pw.length / 2) bits /= 2; // repeats: "aaaaaaaa", "abcabcabc"
  if (bits < 40) return { score: 1, label: 'Weak: easy to guess' };
  if (bits < 60) return { score: 2, label: 'Fair: add more words or characters' };
  if (bits < 80) return { score: 3, label: 'Strong' };
  return { score: 4, label: 'Very strong' };
}

/**
 * plainError puts a failure in plain words: the agent's message when it is already plain,
 * a clearer sentence for the failures a person meets most.
 */
export function plainError(message = '') {
  if (/wrong password|tampered|authentication failed/i.test(message)) {
    return 'That password does not open this file (or the file was changed since it was written). Nothing was changed.';
  }
  if (/no such file|not exist|cannot find/i.test(message)) return 'The file or folder was not found.';
  if (/permission denied/i.test(message)) return 'walletsync is not allowed to use that file or folder.';
  return message;
}

// healthClass is the overview's colour: 'alert' (red) when a destination is late or
// failing, 'warn' (amber) for anything else short of good news, 'ok' (green).
export function healthClass(ov) {
  if (ov.alerts?.length) return 'alert';
  return ov.healthy ? 'ok' : 'warn';
}
