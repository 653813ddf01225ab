// The dashboard's state: what it loaded from the API, kept current by the event stream.
// Pages read store and listen with on(topic, fn); topics: "overview", "config", "tasks"
// (a Task), "log" (a TaskLog), "backups" (a backup file written), "drill", "metrics",
// "connection", "tick" (a minute passed while the page is visible).

import { api } from './api.js';
import { EventStream } from './events.js';
import { terminal } from './format.js';

/** chartWindow is how much of the live charts' history is kept, in milliseconds. */
export const chartWindow = 5 * 60 * 1000;

export const store = {
  overview: null,
  config: null,
  tasks: new Map(), // id -> Task
  connection: 'connecting', // live, reconnecting, signed-out
  // agentDown: the agent does not answer at all (not a dropped stream): the page says so
  // instead of showing what it loaded before as if it were current.
  agentDown: false,
  loadError: null,
  latency: [], // {t, backupP50, backupP95} or {t, restoreP50, restoreP95} in ms, from "metrics" events
  throughput: [], // {t, bytes} per second, summed over the running tasks
};

const listeners = new Map();

/** on calls fn on every emit of topic; it returns the function that stops that. */
export function on(topic, fn) {
  if (!listeners.has(topic)) listeners.set(topic, new Set());
  listeners.get(topic).add(fn);
  return () => listeners.get(topic).delete(fn);
}

function emit(topic, arg) {
  for (const fn of listeners.get(topic) ?? []) fn(arg);
}

/** tasks returns the known tasks, newest first. */
export const tasks = () => [...store.tasks.values()].sort((a, b) => Date.parse(b.queuedAt) - Date.parse(a.queuedAt));

/**
 * start loads the state and opens the event stream from the cursor the agent reported
 * before the load, so that nothing that happens meanwhile is lost.
 */
export async function start() {
  let since = '';
  try {
    since = (await api.status()).events;
  } catch (err) {
    setConnection(err.status === 401 ? 'signed-out' : 'reconnecting');
  }
  new EventStream({ since, onEvent: apply, onState: setConnection }).start();
  await reload();
  let minute = null;
  const tick = () => {
    clearInterval(minute);
    if (document.hidden) return;
    minute = setInterval(() => {
      refreshOverview();
      emit('tick');
    }, 60000);
  };
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) {
      refreshOverview();
      emit('tick');
    }
    tick();
  });
  tick();
}

// held collects the events that arrive while a reload is in flight: applied after it, on
// top of the state it loaded, they are never overwritten by an older answer.
let held = null;
let reloadAgain = false;

/** reload loads everything the pages show. */
async function reload() {
  if (held) {
    reloadAgain = true;
    return;
  }
  held = [];
  do {
    reloadAgain = false;
    const [overview, config, list] = await Promise.allSettled([
      api.overview(), api.config(), api.tasks(),
    ]);
    store.loadError = [overview, config, list].find((r) => r.status === 'rejected')?.reason ?? null;
    if (config.status === 'fulfilled') store.config = config.value;
    if (overview.status === 'fulfilled') store.overview = overview.value;
    if (list.status === 'fulfilled') store.tasks = new Map(list.value.map((t) => [t.id, t]));
  } while (reloadAgain);
  const events = held;
  held = null;
  events.forEach(apply);
  emit('config');
  emit('overview');
  emit('tasks');
}

let overviewDue = null;
/** refreshOverview reloads the overview soon, once for a burst of reasons. */
export function refreshOverview() {
  clearTimeout(overviewDue);
  overviewDue = setTimeout(async () => {
    try {
      store.overview = await api.overview();
      store.loadError = null;
    } catch (err) {
      store.loadError = err;
    }
    emit('overview');
  }, 200);
}

/** refreshConfig reloads the configuration; pages that edit it call it after a change. */
export async function refreshConfig() {
  try {
    store.config = await api.config();
  } catch (err) {
    store.loadError = err;
  }
  emit('config');
}

/** putTask records a task snapshot (from an event or a response) and tells the pages. */
export function putTask(task, at = Date.now()) {
  if (held) {
    held.push({ type: 'task.progress', time: new Date(at).toISOString(), data: task });
    return;
  }
  const old = store.tasks.get(task.id);
  // A replayed event can be older than the state loaded after its cursor: an ended task
  // never runs again.
  if (old && terminal(old.state) && !terminal(task.state)) return;
  store.tasks.set(task.id, task);
  sampleThroughput(at);
  emit('tasks', task);
}

function setConnection(state) {
  const was = store.connection;
  store.connection = state;
  if (state === 'live') {
    if (store.loadError || store.agentDown) reload();
    store.agentDown = false;
  }
  if (state === 'reconnecting') probe();
  if (state !== was || state === 'live') emit('connection', state);
}

let probing = false;
// probe asks the agent for its status once the event stream is lost: no answer at all
// means the agent is not running (an answer means only the stream dropped).
async function probe() {
  if (probing) return;
  probing = true;
  let down = false;
  try {
    await api.status();
  } catch (err) {
    down = err.code === 'offline';
  }
  probing = false;
  if (store.connection !== 'reconnecting' || down === store.agentDown) return;
  store.agentDown = down;
  emit('connection', store.connection);
}

function apply(ev) {
  if (held) {
    if (ev.type === 'missed') reloadAgain = true;
    else held.push(ev);
    return;
  }
  const at = Date.parse(ev.time) || Date.now();
  switch (ev.type) {
    case 'task.queued':
    case 'task.started':
    case 'task.progress':
      putTask(ev.data, at);
      break;
    case 'task.finished':
      putTask(ev.data, at);
      refreshOverview();
      break;
    case 'task.log':
      emit('log', ev.data);
      break;
    case 'destination.changed':
      refreshConfig();
      refreshOverview();
      break;
    case 'backup.written':
      emit('backups', ev.data);
      refreshOverview();
      break;
    case 'drill.finished':
      emit('drill', ev.data);
      refreshOverview();
      break;
    case 'metrics': {
      // One line per direction of the background work the probe ran beside.
      const fg = ev.data?.foreground;
      const dir = ev.data?.direction === 'restore' ? 'restore' : 'backup';
      if (fg) push(store.latency, { t: at, [`${dir}P50`]: fg.p50Ms ?? 0, [`${dir}P95`]: fg.p95Ms ?? 0 });
      emit('metrics');
      break;
    }
    case 'missed':
      // Events were lost (the agent restarted, or this page fell behind): what they would
      // have changed is unknown, so load it all again.
      reload();
      break;
  }
}

// sampleThroughput records the summed rate of the running tasks: the sync throughput chart.
function sampleThroughput(at) {
  let bytes = 0;
  for (const t of store.tasks.values()) {
    if (t.state === 'running' || t.state === 'cancelling') bytes += t.bytesPerSec ?? 0;
  }
  push(store.throughput, { t: at, bytes });
  emit('metrics');
}

function push(series, sample) {
  series.push(sample);
  while (series.length && series[0].t < sample.t - chartWindow) series.shift();
}
