// The agent's HTTP API, as the dashboard calls it.
//
// The same files run in two places:
//   - in a browser, served by the agent itself: the API is on the page's own origin and the
//     login URL's cookie authenticates every request;
//   - in the desktop window, which may serve these files from elsewhere: before this module
//     loads, the window sets
//         window.walletsyncConfig = { base: "http://127.0.0.1:PORT", token: "..." }
//     and every request (the event stream included) goes to base with
//     "Authorization: Bearer <token>".
// Native file dialogs (hooks below) come from the Wails window, which binds app.go's App
// as window.go.main.App, or from walletsyncConfig's chooseSavePath, chooseOpenPath,
// chooseWalletPath and chooseFolder; each returns a Promise of a path, "" when the person
// cancels.

const config = globalThis.walletsyncConfig ?? {};

/** base is the agent's origin, without a trailing slash; "" means this page's origin. */
export const base = (config.base ?? '').replace(/\/+$/, '');

/**
 * dialog returns walletsyncConfig's hook name, else a call of the window's App binding
 * method with as many of the hook's arguments as the Go method takes (Wails refuses a
 * call with more), else null (a browser, which has no native dialogs). It looks when
 * asked, not when this module loads, so that the window's bindings are found whenever
 * they arrive.
 */
function dialog(name, method, arity) {
  if (typeof config[name] === 'function') return config[name];
  const app = globalThis.go?.main?.App;
  return typeof app?.[method] === 'function' ? (...args) => app[method](...args.slice(0, arity)) : null;
}

/**
 * hooks are what the desktop window adds: native file dialogs, each null in a browser.
 * chooseSavePath(suggested) asks where to save a backup file, chooseOpenPath() for a
 * backup file to open, chooseWalletPath() for the wallet file to protect, chooseFolder()
 * for a folder to keep backup files in.
 */
export const hooks = {
  get chooseSavePath() { return dialog('chooseSavePath', 'SaveBackupFile', 1); },
  get chooseOpenPath() { return dialog('chooseOpenPath', 'OpenBackupFile', 0); },
  get chooseWalletPath() { return dialog('chooseWalletPath', 'OpenWalletFile', 0); },
  get chooseFolder() { return dialog('chooseFolder', 'ChooseBackupFolder', 0); },
};

/** authHeaders are the headers that authenticate a request: none when the cookie does. */
export function authHeaders() {
  return config.token ? { Authorization: `Bearer ${config.token}` } : {};
}

/**
 * ApiError is a failed request: the agent's typed error {code, message, hint, path, detail}, or one that
 * stands for a request that never got an answer (code "offline").
 */
export class ApiError extends Error {
  constructor(status, { code = '', message = '', hint = '', path = '', detail = '' } = {}) {
    super(message || `request failed (${status})`);
    this.status = status;
    this.code = code;
    this.hint = hint;
    this.path = path; // the path the error concerns, when the agent knows it
    this.detail = detail; // the technical text behind a message in plain words
  }

  /**
   * unavailable reports that this agent has no such route: the page shows a "not available
   * yet" state instead of an error. A POST to a missing route meets the dashboard's GET
   * route (405); a GET meets the file server (404 without a typed error).
   */
  get unavailable() {
    return this.code === 'method_not_allowed' || (this.status === 404 && (this.code === '' || this.message.startsWith('no route')));
  }
}

async function request(method, path, body) {
  const headers = { Accept: 'application/json', ...authHeaders() };
  let payload;
  if (body instanceof Blob) {
    headers['Content-Type'] = 'application/octet-stream';
    payload = body;
  } else if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let res;
  try {
    // A browser sends this page's Origin with every fetch that is not a GET, as the agent
    // requires of requests that change state.
    res = await fetch(base + path, { method, headers, body: payload, credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, {
      code: 'offline',
      message: 'The walletsync agent is not answering.',
      hint: 'Check that it is running; this page reconnects by itself.',
    });
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    throw new ApiError(res.status, data?.error ?? { message: text.trim() || res.statusText });
  }
  return data;
}

/** enc escapes one path segment. */
const enc = encodeURIComponent;

/**
 * api is every route of the agent's API that the dashboard calls, and the only place in
 * the dashboard that names one: the paths are those of the route table in agent/routes.go
 * (a Go test holds the two together). JSON in, JSON out; failures throw an ApiError.
 */
export const api = {
  status: () => request('GET', '/api/v1/status'),
  overview: () => request('GET', '/api/v1/overview'),
  config: () => request('GET', '/api/v1/config'),
  saveSettings: (settings) => request('PUT', '/api/v1/settings', settings),

  tasks: () => request('GET', '/api/v1/tasks'),
  taskLog: (id) => request('GET', `/api/v1/tasks/${enc(id)}/log`),
  cancelTask: (id) => request('POST', `/api/v1/tasks/${enc(id)}/cancel`),

  addDestination: (d) => request('POST', '/api/v1/destinations', d),
  putDestination: (id, d) => request('PUT', `/api/v1/destinations/${enc(id)}`, d),
  deleteDestination: (id) => request('DELETE', `/api/v1/destinations/${enc(id)}`),
  /** run answers a task; pause (body {for: "1h"} or none) and resume the config. */
  run: (id) => request('POST', `/api/v1/destinations/${enc(id)}/run`),
  pause: (id, body) => request('POST', `/api/v1/destinations/${enc(id)}/pause`, body),
  resume: (id) => request('POST', `/api/v1/destinations/${enc(id)}/resume`),
  /** pauseAll (body {for: "1h"} or none) and resumeAll answer the config. */
  pauseAll: (body) => request('POST', '/api/v1/pause', body),
  resumeAll: () => request('POST', '/api/v1/resume'),
  backups: (id) => request('GET', `/api/v1/destinations/${enc(id)}/backups`),
  verifyBackup: (id, name) => request('POST', `/api/v1/destinations/${enc(id)}/backups/verify`, { name }),
  drill: () => request('POST', '/api/v1/drill'),
  testPassword: (password) => request('POST', '/api/v1/password/test', { password }),

  exportFile: (req) => request('POST', '/api/v1/export', req),
  /** upload sends a backup file's bytes as they are; the answer's upload names it. */
  upload: (file) => request('POST', '/api/v1/import/upload', file),
  previewImport: (req) => request('POST', '/api/v1/import/preview', req),
  /** addServerDestination adds a storage server once the agent has checked it ({destination, signer}). */
  addServerDestination: (req) => request('POST', '/api/v1/storage-servers', req),
  /** putServerDestination saves an edit of a storage server; a new URL is checked first. */
  putServerDestination: (id, d) => request('PUT', `/api/v1/storage-servers/${enc(id)}`, d),
  /** previewServerRestore ({url, signer, wallet}) and restoreFromServer ({preview, confirm}) answer tasks. */
  previewServerRestore: (req) => request('POST', '/api/v1/storage-servers/restore/preview', req),
  restoreFromServer: (req) => request('POST', '/api/v1/storage-servers/restore', req),
  importBackup: (req) => request('POST', '/api/v1/import', req),
  /** abandonImport takes back an unfinished merge into wallet (a task). */
  abandonImport: (wallet) => request('POST', '/api/v1/import/abandon', { wallet }),
  /** previewBundle verifies a snapshot bundle (a task; its result the manifest); restoreBundle replaces the wallet with it. */
  previewBundle: (req) => request('POST', '/api/v1/bundles/preview', req),
  restoreBundle: (req) => request('POST', '/api/v1/bundles/restore', req),

  secretKeys: () => request('GET', '/api/v1/secrets'),
  setSecret: (key, value) => request('PUT', `/api/v1/secrets/${enc(key)}`, { value }),

  /** foundWallets lists the toolbox wallets the agent finds where wallet apps keep them. */
  foundWallets: () => request('GET', '/api/v1/wallets/found'),
  /** walletCensus counts what a configured wallet holds now: its identities and every table's rows. */
  walletCensus: (path) => request('POST', '/api/v1/wallets/census', { path }),
  /** addWallet makes the agent protect the wallet file at path, once it has checked it is a toolbox wallet. */
  addWallet: (path) => request('POST', '/api/v1/wallets', { path }),
  /** replaceWallet makes the agent protect the wallet file next in place of old. */
  replaceWallet: (old, next) => request('POST', '/api/v1/wallets/replace', { old, new: next }),
  /** checkPath asks whether a typed path will do for its purpose (see agent/paths.go). */
  checkPath: (path, purpose, overwrite = false) => request('POST', '/api/v1/paths/check', { path, purpose, overwrite }),

  service: () => request('GET', '/api/v1/service'),
  installService: () => request('POST', '/api/v1/service/install'),
  uninstallService: () => request('POST', '/api/v1/service/uninstall'),
};

/** eventsURL is the agent's event stream (Server-Sent Events; see events.js). */
export const eventsURL = () => `${base}/api/v1/events`;
