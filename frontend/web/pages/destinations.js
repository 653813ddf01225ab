// Destinations: where the wallet is kept safe. Add, edit and remove them, run one now,
// pause it, set its schedule, and watch (and cancel) its running sync.

import { api, hooks } from '../api.js';
import { store, on, putTask, tasks, refreshConfig, refreshOverview } from '../store.js';
import { taskPanel } from '../task-panel.js';
import {
  h, pageHeader, field, errorBox, taskProblem, pathCheck, badge, busy, scheduleEditor, confirmDialog, notice, uid, setChildren, fill, browseButton,
} from '../ui.js';
import { fmtAgo, fmtWhen, scheduleText, destinationKind, taskKind, terminal } from '../format.js';
import { signerFields, serverConfirmed } from './server.js';

const kindHelp = {
  sqlite: 'A copy of the wallet in one file, kept in sync page by page. It is created if it does not exist yet.',
  folder: 'A folder of encrypted backup files (on an external disk or a cloud-synced folder, say). These need the backup password set in Settings.',
  bundles: 'A folder of whole-wallet snapshots: every identity, the settings and the sync states, each checked by its digests. Not encrypted: choose a folder only you can read.',
  'storage-server': 'A wallet-toolbox storage server (the kind your wallet app may already use), kept in sync chunk by chunk. walletsync checks it before saving.',
};

// dismissed holds the ended tasks whose panels the person closed.
const dismissed = new Set();

/** slug makes a destination id from its name: a-z, 0-9 and '-', unique among ids. */
function slug(name, taken) {
  const base = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 56) || 'destination';
  let id = base;
  for (let n = 2; taken.includes(id); n++) id = `${base}-${n}`;
  return id;
}

/** editor is the form that adds a destination (d empty) or edits d; onDone gets the id of
 * a destination it added. */
function editor(d, { onDone }) {
  const name = h('input', { type: 'text', required: true, value: d?.name ?? '', autocomplete: 'off' });
  const path = h('input', { type: 'text', required: true, value: d?.path ?? '', spellcheck: 'false', autocomplete: 'off', class: 'mono' });
  const group = uid('kind');
  const help = h('p', { class: 'help' });
  const kinds = ['sqlite', 'folder', 'bundles', 'storage-server'].map((k) => h('label', { class: 'choice' },
    h('input', { type: 'radio', name: group, value: k, checked: (d?.kind ?? 'sqlite') === k }), destinationKind(k)));
  const kind = () => kinds.map((l) => l.querySelector('input')).find((r) => r.checked).value;
  // A folder can be chosen with the window's folder dialog; a wallet file is typed.
  const browse = browseButton(hooks.chooseFolder, path);
  // A storage server has a URL and a signer instead of a path (the signer only when added:
  // an edit keeps the key in the secrets, or the wallet, it was added with).
  const server = kind() === 'storage-server' || !d;
  const url = h('input', { type: 'url', value: d?.kind === 'storage-server' ? d.path : '', spellcheck: 'false', autocomplete: 'off', class: 'mono', name: 'server-url' });
  const signer = d ? null : signerFields();
  const serverPart = server ? h('div', { class: 'stack' }, field('Server URL', url, 'Such as https://storage.example.com.'), signer?.el) : null;
  const pathField = field('Path', path, 'The full path on this computer.');
  const isServer = () => kind() === 'storage-server';
  const showHelp = () => {
    help.textContent = kindHelp[kind()];
    if (browse) browse.hidden = kind() === 'sqlite' || isServer();
    pathField.hidden = isServer();
    where.el.hidden = isServer();
    if (serverPart) serverPart.hidden = !isServer();
    path.required = !isServer();
    url.required = isServer();
  };
  const where = pathCheck(path, () => (kind() === 'sqlite' ? 'backup-wallet' : 'backup-folder'));
  kinds.forEach((l) => l.addEventListener('change', () => {
    showHelp();
    if (path.value.trim() && !isServer()) where.check();
  }));
  showHelp();
  const schedule = scheduleEditor(d?.schedule ?? { kind: 'change', debounce: '30s' });
  const problem = h('div');
  const save = h('button', { type: 'submit', class: 'primary' }, d ? 'Save changes' : 'Add destination');
  const form = h('form', { class: 'card editor', 'aria-label': d ? `Edit ${d.name}` : 'New destination' },
    h('h2', {}, d ? `Edit ${d.name}` : 'New destination'),
    field('Name', name, 'What you call it, such as "USB disk" or "Cloud folder".'),
    h('fieldset', {}, h('legend', {}, 'What it is'), kinds, help),
    pathField,
    where.el,
    browse,
    serverPart,
    schedule.el,
    problem,
    h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => onDone() }, 'Cancel'), save));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(save, async () => {
      problem.replaceChildren();
      const who = !d && isServer() ? signer.value() : null;
      if (!d && isServer() && !who) return;
      if (!isServer() && !await where.check()) {
        path.focus();
        return;
      }
      const body = { name: name.value.trim(), kind: kind(), path: (isServer() ? url : path).value.trim(), schedule: schedule.value() };
      try {
        if (d) {
          const put = d.kind === 'storage-server' ? api.putServerDestination : api.putDestination;
          await put(d.id, { ...body, wallet: d.wallet, pause: d.pause, walletURL: d.walletURL });
        } else {
          const taken = store.config?.destinations.map((x) => x.id) ?? [];
          const id = slug(body.name, taken);
          // A storage server is checked by the agent (reached, a toolbox server, signed
          // in, the wallet's network and identity) before it is saved.
          if (isServer()) await api.addServerDestination({ destination: { id, ...body }, signer: who });
          else await api.addDestination({ id, ...body });
          await refreshConfig();
          refreshOverview();
          onDone(id);
          return;
        }
        await refreshConfig();
        refreshOverview();
        onDone();
      } catch (err) {
        problem.replaceChildren(errorBox(err, 'Not saved'));
      }
    });
  });
  return { el: form, focus: () => name.focus() };
}

/** pauseMenu offers the pauses: 1 hour, 8 hours, until resumed. It closes on Escape and
 * when the keyboard moves on. */
function pauseMenu(act, label = 'Pause') {
  const summary = h('summary', { class: 'button' }, label);
  const menu = h('details', { class: 'menu' }, summary);
  const choose = (label, body) => h('button', { type: 'button', role: 'menuitem', onclick: () => {
    menu.open = false;
    act('pause', body);
  } }, label);
  menu.append(h('div', { class: 'menu-items', role: 'menu' },
    choose('For 1 hour', { for: '1h' }), choose('For 8 hours', { for: '8h' }), choose('Until I resume', undefined)));
  menu.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && menu.open) {
      menu.open = false;
      summary.focus();
    }
  });
  menu.addEventListener('focusout', (e) => {
    // relatedTarget is null for a click that focuses nothing (WebKit's buttons): stay open.
    if (e.relatedTarget && !menu.contains(e.relatedTarget)) menu.open = false;
  });
  return menu;
}

/** isPaused says whether destination d is paused now, as the agent decides it
 * (Destination.Paused), from the config that an action just reloaded. */
const isPaused = (d) => !!d.pause && (!d.pause.until || Date.parse(d.pause.until) > Date.now());

/** card is one destination: its facts, its actions, its task panel and its editor. */
function card() {
  const added = h('div');
  const info = h('div');
  const problem = h('div');
  const panelSlot = h('div');
  const editSlot = h('div');
  let panel = null;
  let editing = false;
  let d = null;

  // act asks for a destination action (run, pause or resume); a task comes back from run,
  // the config from the others.
  const act = (verb, body) => api[verb](d.id, body).then(async (res) => {
    problem.replaceChildren();
    if (res?.kind && res?.state) putTask(res);
    else await refreshConfig();
    refreshOverview();
  }).catch((err) => problem.replaceChildren(errorBox(err)));

  const run = h('button', { type: 'button', class: 'primary', onclick: (e) => busy(e.currentTarget, () => act('run')) }, 'Run now');
  const resume = h('button', { type: 'button', onclick: (e) => busy(e.currentTarget, () => act('resume')) }, 'Resume');
  const pause = pauseMenu(act);
  const edit = h('button', { type: 'button', 'aria-expanded': 'false', onclick: () => setEditing(!editing) }, 'Edit');
  const removeBtn = h('button', { type: 'button', class: 'danger-text', onclick: remove }, 'Remove');
  const el = h('section', { class: 'card destination' }, added, info,
    h('div', { class: 'actions' }, run, resume, pause, edit, removeBtn), problem, panelSlot, editSlot);

  function renderInfo() {
    const paused = isPaused(d);
    el.dataset.destination = d.id;
    el.setAttribute('aria-label', d.name);
    fill(info,
      h('div', { class: 'card-head' }, h('h2', {}, d.name), badge(destinationKind(d.kind), 'info'),
        paused ? badge(d.pause?.until ? `Paused until ${fmtWhen(d.pause.until)}` : 'Paused until resumed', 'paused') : null),
      h('p', { class: 'path' }, d.path),
      h('p', {}, scheduleText(d.schedule), ' · Last good backup: ',
        d.lastSuccess ? h('span', { title: fmtWhen(d.lastSuccess) }, fmtAgo(d.lastSuccess)) : 'not backed up here yet'),
      d.kind === 'storage-server' ? h('p', {}, serverConfirmed(d), d.walletURL ? ` · Signed by the wallet at ${d.walletURL}` : ' · Signed with the key in walletsync\'s secrets') : null,
      d.lastFailure ? errorBox(taskProblem({ message: d.lastMessage, error: d.lastError, hint: d.lastHint }), `Failing since ${fmtWhen(d.lastFailure)}`) : null,
      d.alert?.kind === 'late' ? errorBox({ message: d.alert.text, hint: d.alert.fix }, `Late since ${fmtWhen(d.alert.since)}`) : null);
    resume.hidden = !paused;
    pause.hidden = paused;
    edit.setAttribute('aria-expanded', String(editing));
  }

  function setEditing(on) {
    editing = on;
    if (!on) {
      editSlot.replaceChildren();
    } else {
      const ed = editor(d, { onDone: () => setEditing(false) });
      editSlot.replaceChildren(ed.el);
      ed.focus();
    }
    renderInfo();
  }

  async function remove() {
    const ok = await confirmDialog({
      title: `Remove ${d.name}?`,
      body: 'walletsync stops backing up there. Files already written stay where they are.',
      ok: 'Remove', danger: true,
    });
    if (!ok) return;
    try {
      await api.deleteDestination(d.id);
      await refreshConfig();
      refreshOverview();
    } catch (err) {
      problem.replaceChildren(errorBox(err, 'Not removed'));
    }
  }

  let hide = null;
  function renderTask() {
    const t = tasks().find((x) => x.target === d.id && ['sync', 'backup', 'bundle'].includes(x.kind));
    if (!t || (terminal(t.state) && dismissed.has(t.id))) {
      panel = null;
      panelSlot.replaceChildren();
      return;
    }
    if (panel?.task.id !== t.id) {
      hide = h('button', { type: 'button', onclick: () => { dismissed.add(t.id); renderTask(); run.focus(); } }, 'Hide');
      panel = taskPanel('', hide);
      panelSlot.replaceChildren(panel.el);
    }
    panel.rename(`${taskKind(t.kind)} to ${d.name}`);
    panel.update(t);
    hide.hidden = !terminal(t.state);
  }

  return {
    el,
    update(dest) {
      d = dest;
      renderInfo();
      renderTask();
    },
    renderTask,
    /** confirmAdded says the destination was just added, scrolls to it and focuses it. */
    confirmAdded() {
      const noWallet = store.config && !store.config.wallets?.length;
      fill(added, notice('ok', h('p', { 'data-testid': 'added' }, h('strong', {}, 'Added. '),
        noWallet ? ['It cannot run yet: walletsync protects no wallet. ', h('a', { href: '#/overview' }, 'Choose the wallet'), ' first, and it backs that one up.']
          : isPaused(d) ? 'It is paused: resume it to start backing up.' : `${scheduleText(d.schedule)}; the first backup starts soon. "Run now" starts it at once.`)));
      el.scrollIntoView({ block: 'start', behavior: 'instant' });
      // The card keeps its element through updates (its title is redrawn): it takes the focus.
      el.tabIndex = -1;
      el.focus({ preventScroll: true });
      setTimeout(() => fill(added), 15000);
    },
  };
}

/**
 * pausedHeader says, above the list, when destinations are paused, and offers to pause or
 * resume them all.
 */
function pausedHeader() {
  const line = h('div', { 'data-testid': 'paused-header' });
  const problem = h('div');
  const all = (verb, body) => (verb === 'pause' ? api.pauseAll(body) : api.resumeAll())
    .then(async () => { problem.replaceChildren(); await refreshConfig(); refreshOverview(); })
    .catch((err) => problem.replaceChildren(errorBox(err)));
  const pauseAll = pauseMenu(all, 'Pause all');
  const resumeAll = h('button', { type: 'button', onclick: (e) => busy(e.currentTarget, () => all('resume')) }, 'Resume all');
  const el = h('div', { class: 'stack' }, line, problem);
  return {
    el,
    actions: [pauseAll, resumeAll],
    render() {
      const ds = store.config?.destinations ?? [];
      const paused = ds.filter(isPaused);
      pauseAll.hidden = !ds.length || paused.length === ds.length;
      resumeAll.hidden = !paused.length;
      fill(line, paused.length ? notice('warn', h('p', {}, h('strong', {}, paused.length === ds.length
        ? 'Every destination is paused: nothing is being backed up. '
        : `${paused.length} of ${ds.length} destinations ${paused.length === 1 ? 'is' : 'are'} paused: `),
      paused.length === ds.length ? 'Resume them to start again.' : `${paused.map((d) => d.name).join(', ')} ${paused.length === 1 ? 'is' : 'are'} not backed up until resumed.`)) : null);
    },
  };
}

export default {
  id: 'destinations',
  title: 'Destinations',
  mount(main, arg) {
    const list = h('div', { class: 'stack' });
    const adder = h('div');
    const header = pausedHeader();
    const add = h('button', { type: 'button', class: 'primary' }, 'Add a destination');
    const cards = new Map();
    add.addEventListener('click', () => {
      const ed = editor(null, { onDone: (id) => {
        adder.replaceChildren();
        add.hidden = false;
        render();
        if (cards.has(id)) cards.get(id).confirmAdded();
        else add.focus();
      } });
      adder.replaceChildren(ed.el);
      add.hidden = true;
      ed.focus();
    });
    main.append(pageHeader('Destinations', 'The places your wallet is backed up to, and when.', ...header.actions, add), header.el, adder, list);

    function render() {
      const views = store.overview?.destinations ?? store.config?.destinations;
      if (!views) {
        list.replaceChildren(store.loadError ? errorBox(store.loadError, 'Could not load the destinations') : h('p', { class: 'muted' }, 'Loading…'));
        return;
      }
      // The config is newer than the overview right after an edit: its fields win, a pause
      // that it no longer has included.
      const byId = new Map((store.config?.destinations ?? []).map((c) => [c.id, c]));
      const shown = views.filter((v) => !store.config || byId.has(v.id)).map((v) => {
        const c = byId.get(v.id);
        return c ? { ...v, ...c, pause: c.pause } : v;
      });
      for (const c of store.config?.destinations ?? []) if (!shown.some((v) => v.id === c.id)) shown.push(c);
      for (const id of cards.keys()) if (!shown.some((v) => v.id === id)) cards.delete(id);
      const els = shown.map((v) => {
        let c = cards.get(v.id);
        if (!c) cards.set(v.id, (c = card()));
        c.update(v);
        return c.el;
      });
      setChildren(list, els.length ? els : [notice('muted', h('p', {}, 'No destination yet. Add one: a backup wallet file on another disk, or a folder for encrypted backup files.'))]);
      header.render();
    }
    render();
    if (arg === 'add') add.click(); // the Overview's "Add a destination"
    const offs = [
      on('overview', render), on('config', render), on('tick', render),
      on('tasks', () => cards.forEach((c) => c.renderTask())),
    ];
    return () => offs.forEach((off) => off());
  },
};
