// The dashboard's shell: the header (health, connection, theme), the page menu (in
// index.html, so that it paints before any script runs) and the router (#/overview,
// #/destinations...). Pages are modules with {id, title, mount(main, arg)}, where arg is
// what follows the page in the address (#/destinations/add); mount returns the function
// that unmounts the page.

import { store, on, start } from './store.js';
import { h, fill, copyButton } from './ui.js';
import { healthClass } from './format.js';
import { effectiveTheme, setTheme } from './theme.js';
import overview from './pages/overview.js';
import destinations from './pages/destinations.js';
import activity from './pages/activity.js';
import backups from './pages/backups.js';
import exportPage from './pages/export.js';
import restore from './pages/restore.js';
import settings from './pages/settings.js';
import restoreServer from './pages/server.js';
import kit from './pages/kit.js';

const pages = [overview, destinations, activity, backups, exportPage, restore, settings, restoreServer, kit];

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const health = document.getElementById('health');
const conn = document.getElementById('conn');
const agentDown = document.getElementById('agent-down');
const themeButton = document.getElementById('theme');

let unmount = null;
let first = true;
function route() {
  // "#/destinations/add": the page, and what to open on it.
  const [id, arg = ''] = (location.hash.replace(/^#\/?/, '') || 'overview').split('/');
  const page = pages.find((p) => p.id === id) ?? overview;
  unmount?.();
  main.replaceChildren();
  main.dataset.page = page.id;
  unmount = page.mount(main, arg);
  document.title = `${page.title} · walletsync`;
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.page === page.id) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  // After a move (not the first load), put the keyboard where the new page starts.
  if (!first && !main.contains(document.activeElement)) main.querySelector('h1')?.focus();
  first = false;
}
addEventListener('hashchange', route);

function showHealth() {
  const ov = store.overview;
  const text = store.agentDown ? 'The walletsync agent is not running: nothing is being backed up.' : ov?.health ?? '';
  if (health.textContent !== text) health.textContent = text;
  health.className = `health ${store.agentDown ? 'warn' : ov ? healthClass(ov) : ''}`;
}

// showAgentDown replaces the page with what a stopped agent means and how to start it:
// what the page loaded before is no longer current, so it is not shown as if it were.
function showAgentDown() {
  const down = store.agentDown;
  agentDown.hidden = !down;
  main.hidden = down;
  if (!down) return;
  const cmd = store.overview?.startCommand || 'walletsync agent';
  fill(agentDown,
    h('h1', { id: 'agent-down-title' }, 'The walletsync agent is not running'),
    h('p', {}, 'While it is stopped, nothing is backed up: scheduled backups, syncs to backup wallets and restore drills wait until it runs again. ',
      'Your wallet itself is not affected, and the backups already written stay where they are.'),
    h('p', {}, 'Start it in a terminal with:'),
    h('p', { class: 'command' }, h('code', { 'data-testid': 'start-command' }, cmd), ' ', copyButton(cmd, 'the command')),
    h('p', { class: 'muted' }, 'If you installed it as a background service, start the service instead (',
      h('code', {}, 'walletsync service start'), '). This page reconnects by itself once the agent answers at ', location.host,
      ', where it listens again after a restart; if it says it started at another address, ', h('code', {}, 'walletsync open'),
      ' opens the dashboard there.'));
}

const connWords = { connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…', 'signed-out': 'Signed out' };
function showConnection() {
  conn.textContent = store.agentDown ? 'Agent not running' : connWords[store.connection];
  showAgentDown();
  showHealth();
  conn.dataset.state = store.connection;
  document.getElementById('signin').hidden = store.connection !== 'signed-out';
}

function showTheme() {
  const dark = effectiveTheme() === 'dark';
  themeButton.setAttribute('aria-pressed', String(dark));
  themeButton.title = dark ? 'Switch to the light theme' : 'Switch to the dark theme';
}
themeButton.addEventListener('click', () => setTheme(effectiveTheme() === 'dark' ? 'light' : 'dark'));
addEventListener('themechange', showTheme);

on('overview', showHealth);
on('connection', showConnection);
showTheme();
showConnection();
route();
start();
