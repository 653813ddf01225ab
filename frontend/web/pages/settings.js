// Settings: the unattended backup password, retention, the restore drill, the log level,
// the background service and the look.

import { api } from '../api.js';
import { store, on, refreshConfig, tasks, putTask } from '../store.js';
import {
  h, pageHeader, field, errorBox, notice, busy, passwordPair, scheduleEditor, confirmDialog, unavailable, uid, fill,
} from '../ui.js';
import { theme, setTheme } from '../theme.js';
import { fmtAgo, plainError, taskState, terminal, outcome } from '../format.js';

const passwordKey = 'backup-password';

function passwordCard() {
  const status = h('p', { 'data-testid': 'password-status' }, 'Checking…');
  const result = h('div', { 'aria-live': 'polite' });
  const pw = passwordPair();
  const save = h('button', { type: 'submit', class: 'primary' }, 'Save password');
  let isSet = false;
  const show = () => {
    status.replaceChildren(isSet
      ? h('span', {}, h('strong', {}, 'A backup password is set. '), 'It is never shown again.')
      : h('span', {}, h('strong', {}, 'No backup password yet. '), 'Backups to folders cannot run without one.'));
    save.textContent = isSet ? 'Replace password' : 'Save password';
  };
  api.secretKeys().then((r) => {
    isSet = r.keys.includes(passwordKey);
    show();
  }, (err) => status.replaceChildren(errorBox(err)));
  const form = h('form', { class: 'card stack', 'aria-labelledby': 'pw-title' },
    h('h2', { id: 'pw-title' }, 'Backup password'),
    h('p', {}, 'walletsync encrypts the scheduled backups in your backup folders with this password, without asking you each time.'),
    status,
    notice('warn', h('p', {}, h('strong', {}, 'If this password is lost, the backups it encrypts cannot be restored. '),
      'walletsync cannot recover it. Write it down and keep it somewhere safe.')),
    pw.el, result, h('div', { class: 'actions' }, save, h('a', { href: '#/kit', 'data-testid': 'kit-link' }, 'Recovery kit')));
  // A "not the same" or "Saved." describes what was typed before: it goes once that changes.
  form.addEventListener('input', () => result.replaceChildren());
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const wrong = pw.check();
    if (wrong) {
      result.replaceChildren(notice('error', h('p', {}, wrong)));
      return;
    }
    if (isSet && !await confirmDialog({
      title: 'Replace the backup password?',
      body: 'New backups use the new password. Backups already written still need the old one: keep it as long as you keep them.',
      ok: 'Replace',
    })) return;
    busy(save, async () => {
      try {
        const r = await api.setSecret(passwordKey, pw.value());
        isSet = true;
        show();
        form.reset();
        result.replaceChildren(notice('ok', h('p', {}, h('strong', {}, 'Saved. '), r.warning),
          h('p', {}, h('a', { href: '#/kit' }, 'Make a recovery kit'), ': one page to print or save, with a place to write this password by hand.')));
      } catch (err) {
        result.replaceChildren(errorBox(err, 'Not saved'));
      }
    });
  });
  return form;
}

// testPasswordCard is "test my password": the person types the backup password and the
// agent says whether it opens the newest backup file, writing nothing. What was typed is
// cleared after each try.
function testPasswordCard() {
  const input = h('input', { type: 'password', autocomplete: 'off', required: true, name: 'test-password' });
  const result = h('div', { 'aria-live': 'polite', 'data-testid': 'password-test' });
  const test = h('button', { type: 'submit' }, 'Test my password');
  const form = h('form', { class: 'card stack', 'aria-labelledby': 'pwtest-title' },
    h('h2', { id: 'pwtest-title' }, 'Test my password'),
    h('p', {}, 'Type the backup password as you wrote it down: walletsync tries it on the newest backup file and says whether it opens. Nothing is restored or changed.'),
    field('Backup password', input), result, h('div', { class: 'actions' }, test));
  form.addEventListener('input', () => result.replaceChildren());
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(test, async () => {
      try {
        const r = await api.testPassword(input.value);
        input.value = '';
        result.replaceChildren(notice(r.opens ? 'ok' : 'error', h('p', { 'data-opens': String(r.opens) },
          h('strong', {}, r.opens ? 'It opens. ' : 'It does not open. '), r.message)));
      } catch (err) {
        result.replaceChildren(errorBox(err, 'Could not test the password'));
      }
    });
  });
  return form;
}

function settingsCard(drillLine) {
  const c = store.config;
  if (!c) return h('div', {}, store.loadError ? errorBox(store.loadError) : h('p', { class: 'muted' }, 'Loading…'));
  const num = (v, min, label) => h('input', { type: 'number', min, value: String(v), class: 'narrow', 'aria-label': label });
  const last = num(c.retention.last, 1, 'How many of the newest backups to keep');
  const daily = num(c.retention.daily, 0, 'For how many days to keep one a day');
  const weekly = num(c.retention.weekly, 0, 'For how many weeks to keep one a week');
  // Each rule reads as a sentence, its number in the middle.
  const rule = (...parts) => h('p', { class: 'retention-rule' }, ...parts);
  const drill = scheduleEditor(c.drill, { onChange: false, legend: 'How often' });
  const level = h('select', {}, [['error', 'Errors only'], ['warn', 'Warnings and errors'], ['info', 'Normal'], ['debug', 'Everything (for troubleshooting)']]
    .map(([v, t]) => h('option', { value: v, selected: (c.logLevel || 'info') === v }, t)));
  const result = h('div', { 'aria-live': 'polite' });
  const save = h('button', { type: 'submit', class: 'primary' }, 'Save settings');
  const form = h('form', { class: 'stack' },
    h('section', { class: 'card', 'aria-labelledby': 'ret-title' },
      h('h2', { id: 'ret-title' }, 'Which backup files to keep'),
      h('div', { class: 'stack', 'data-testid': 'retention' },
        rule('Keep the newest ', last, ' backups,'),
        rule('and one a day for ', daily, ' days,'),
        rule('and one a week for ', weekly, ' weeks.')),
      h('p', { class: 'help' }, 'Older files in backup folders are deleted after each backup. The newest backup that passed a check is always kept.')),
    h('section', { class: 'card', 'aria-labelledby': 'drill-title' },
      h('h2', { id: 'drill-title' }, 'Restore drill'),
      h('p', {}, 'walletsync regularly restores the newest backup of each backup folder into a scratch wallet and checks it, without touching your wallet.'),
      drill.el,
      drillLine),
    h('section', { class: 'card', 'aria-labelledby': 'log-title' },
      h('h2', { id: 'log-title' }, 'Log'),
      field('How much the agent writes to its log', level)),
    result,
    h('div', { class: 'actions' }, save));
  // "Saved." describes the settings as they were saved: it goes once they change.
  form.addEventListener('input', () => result.replaceChildren());
  form.addEventListener('change', () => result.replaceChildren());
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(save, async () => {
      try {
        await api.saveSettings({
          retention: { last: Number(last.value), daily: Number(daily.value), weekly: Number(weekly.value) },
          drill: drill.value(),
          logLevel: level.value,
        });
        await refreshConfig();
        result.replaceChildren(notice('ok', h('p', {}, 'Saved.')));
      } catch (err) {
        result.replaceChildren(errorBox(err, 'Not saved'));
      }
    });
  });
  return form;
}

/** drillStatus says how the last restore drill went, and runs one on request; off stops
 * its updates. */
function drillStatus() {
  const line = h('p', { 'aria-live': 'polite', 'data-testid': 'drill-status' });
  const run = h('button', { type: 'button' }, 'Run the drill now');
  const el = h('div', { class: 'actions' }, run, line);
  const show = () => {
    const t = tasks().find((x) => x.kind === 'drill');
    run.disabled = !!t && !terminal(t.state);
    if (!t) {
      line.textContent = 'No drill has run yet.';
      return;
    }
    const files = t.result?.files ?? [];
    const words = {
      succeeded: files.length ? `Passed ${fmtAgo(t.finishedAt)}: ${files.length} backup file${files.length === 1 ? '' : 's'} restored and checked.`
        : `Ran ${fmtAgo(t.finishedAt)}: no backup file to check yet.`,
      failed: `Failed ${fmtAgo(t.finishedAt)}: ${t.message || plainError(t.error)}`,
    };
    if (outcome(t) === 'skipped') {
      line.textContent = `Skipped ${fmtAgo(t.finishedAt)}: ${t.result.skipped}. Nothing was checked; the drill runs again once a backup exists.`;
      return;
    }
    const proven = t.result?.passwordProven;
    line.textContent = `${words[t.state] ?? taskState(t.state)} ${proven
      ? `Your backup password was last proven ${fmtAgo(proven)} (Test my password).`
      : 'Your backup password has not been proven by hand yet: use Test my password above.'}`;
  };
  run.addEventListener('click', () => busy(run, async () => {
    try {
      putTask(await api.drill());
    } catch (err) {
      line.replaceChildren(err.unavailable ? unavailable('Running the drill by hand') : errorBox(err));
    }
  }).finally(show));
  show();
  return { el, off: on('tasks', show) };
}

const serviceWords = {
  running: 'Installed and running: walletsync keeps working when this window is closed and after a restart.',
  stopped: 'Installed, but not running now.',
  'not-installed': 'Not installed: walletsync works only while it is started by hand.',
  unavailable: 'Not available on this computer: walletsync works while it is started by hand.',
};

function serviceCard() {
  const body = h('div', { 'aria-live': 'polite' });
  const card = h('section', { class: 'card', 'aria-labelledby': 'svc-title' }, h('h2', { id: 'svc-title' }, 'Background service'), body);
  const act = (verb, button) => busy(button, async () => {
    try {
      show(await (verb === 'install' ? api.installService() : api.uninstallService()));
    } catch (err) {
      body.append(errorBox(err, `Could not ${verb}`));
    }
  });
  function show(s) {
    const installed = s.status === 'running' || s.status === 'stopped';
    fill(body,
      s.status ? h('p', { 'data-testid': 'service-status' }, serviceWords[s.status] ?? s.status) : null,
      s.note ? notice('muted', h('p', { 'data-testid': 'service-note' }, s.note)) : null,
      s.error ? errorBox({ message: s.error, hint: s.hint }, 'The service cannot be managed here') : null,
      s.platform ? h('p', { class: 'muted small-text' }, `Service manager: ${s.platform}`) : null,
      s.status && s.status !== 'unavailable' ? h('div', { class: 'actions' }, installed
        ? h('button', { type: 'button', onclick: (e) => act('uninstall', e.currentTarget) }, 'Uninstall')
        : h('button', { type: 'button', class: 'primary', onclick: (e) => act('install', e.currentTarget) }, 'Install')) : null);
  }
  api.service().then(show, (err) => body.replaceChildren(err.unavailable ? unavailable('The service status') : errorBox(err)));
  return card;
}

function appearanceCard() {
  const group = uid('theme');
  return h('section', { class: 'card', 'aria-labelledby': 'look-title' },
    h('h2', { id: 'look-title' }, 'Appearance'),
    h('fieldset', {}, h('legend', {}, 'Theme'),
      [['', 'Same as the system'], ['light', 'Light'], ['dark', 'Dark']].map(([v, t]) => h('label', { class: 'choice' },
        h('input', { type: 'radio', name: group, value: v, checked: theme() === v, onchange: () => setTheme(v) }), t))));
}

export default {
  id: 'settings',
  title: 'Settings',
  mount(main) {
    const settings = h('div');
    const look = h('div', {}, appearanceCard());
    const drill = drillStatus();
    main.append(pageHeader('Settings'), h('div', { class: 'stack' }, passwordCard(), testPasswordCard(), settings, serviceCard(), look));
    let shown = false;
    const render = () => {
      // Once the form shows, a config change elsewhere must not wipe what is being typed.
      if (shown) return;
      settings.replaceChildren(settingsCard(drill.el));
      shown = !!store.config;
    };
    render();
    const relook = () => look.replaceChildren(appearanceCard());
    addEventListener('themechange', relook);
    const offs = [
      on('config', render),
      drill.off,
      () => removeEventListener('themechange', relook),
    ];
    return () => offs.forEach((off) => off());
  },
};
