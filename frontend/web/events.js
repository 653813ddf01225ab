// The agent's event stream (Server-Sent Events), read with fetch rather
// than EventSource because EventSource cannot send the desktop window's Authorization
// header. It behaves as EventSource does: it reconnects after the server's retry delay
// (backing off while the agent is away) and resumes with Last-Event-ID, so the agent
// replays what was missed, or says with a "missed" event that the page must reload.
// While idle it holds one open request and runs no timer.

import { authHeaders, eventsURL } from './api.js';

const maxDelay = 15000;

export class EventStream {
  /**
   * @param {object} o
   * @param {string} o.since  the cursor to resume after ("<epoch>-<seq>"), from the agent's status
   * @param {(event: object) => void} o.onEvent  receives each parsed event, in order
   * @param {(state: 'live'|'reconnecting'|'signed-out') => void} o.onState
   */
  constructor({ since, onEvent, onState }) {
    this.lastId = since ?? '';
    this.retry = 2000;
    this.onEvent = onEvent;
    this.onState = onState;
  }

  /** start connects, and reconnects for as long as the page lives. */
  start() {
    this.#run();
    return this;
  }

  async #run() {
    for (let failures = 0; ; failures++) {
      let state = 'reconnecting';
      try {
        const headers = { Accept: 'text/event-stream', ...authHeaders() };
        if (this.lastId) headers['Last-Event-ID'] = this.lastId;
        const res = await fetch(eventsURL(), {
          headers, credentials: 'same-origin', cache: 'no-store',
        });
        if (res.ok) {
          failures = 0;
          this.onState('live');
          await this.#read(res.body);
        } else if (res.status === 401) {
          state = 'signed-out';
        }
      } catch {
        // the agent went away: try again after the delay
      }
      this.onState(state);
      await sleep(Math.min(this.retry * 2 ** Math.min(failures, 4), maxDelay));
    }
  }

  // #read parses the stream as the SSE specification says: fields up to a blank line make
  // one event; "id" is remembered for the next connection once its event is dispatched.
  async #read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let data = [];
    let id = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      const lines = buf.split(/\r\n|\r|\n/);
      buf = lines.pop();
      for (const line of lines) {
        if (line === '') {
          if (id !== null) this.lastId = id;
          if (data.length) this.#dispatch(data.join('\n'));
          data = [];
          id = null;
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(val);
        else if (field === 'id') id = val;
        else if (field === 'retry' && /^\d+$/.test(val)) this.retry = Number(val);
      }
    }
  }

  #dispatch(text) {
    let ev;
    try {
      ev = JSON.parse(text);
    } catch {
      return; // not an event of this API
    }
    this.onEvent(ev);
  }
}

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });
