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
// Optional hooks of the window: chooseSavePath(suggested) and chooseOpenPath(), each a
// function returning a Promise of a path ("" when the person cancels), for native dialogs.

const config = globalThis.walletsyncConfig ?? {};

/** base is the agent's origin, without a trailing slash; "" means this page's origin. */
export const base = (config.base ?? '').replace(/\/+$/, '');

/** hooks are what the desktop window adds: native file dialogs. */
export const hooks = {
  chooseSavePath: typeof config.chooseSavePath === 'function' ? config.chooseSavePath : null,
  chooseOpenPath: typeof config.chooseOpenPath === 'function' ? config.chooseOpenPath : null,
};

/** authHeaders are the headers that authenticate a request: none when the cookie does. */
export function authHeaders() {
  return config.token ? { Authorization: `Bearer ${config.token}` } : {};
}

/**
 * ApiError is a failed request: the agent's typed error {code, message, hint}, or one that
 * stands for a request that never got an answer (code "offline").
 */
export class ApiError extends Error {
  constructor(status, { code = '', message = '', hint = '' } = {}) {
    super(message || `request failed (${status})`);
    this.status = status;
    this.code = code;
    this.hint = hint;
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

/** api calls the agent: JSON in, JSON out; failures throw an ApiError. */
export const api = {
  get: (path) => request('GET', path),
  post: (path, body) => request('POST', path, body),
  put: (path, body) => request('PUT', path, body),
  del: (path) => request('DELETE', path),
  /** upload sends a file's bytes as they are. */
  upload: (path, file) => request('POST', path, file),
};

/** enc escapes one path segment. */
export const enc = encodeURIComponent;
