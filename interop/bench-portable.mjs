#!/usr/bin/env node
// bench-portable.mjs: times @bsv/wallet-toolbox 2.1.26's exportBRC39 and importBRC39 for
// `walletsync bench portable`, the baseline measured in the same run. Each command runs in its
// own Node process (so its peak RSS is its own) and prints exactly one JSON object on stdout, in
// the field names of the Go side's portableRun; diagnostics go to stderr. Failure: exit 1 with
// {"error": "...", "name": "..."} on stdout.
//
//   idle     --db F                                        load the toolbox and open the store
//   export39 --db F --identity HEX --password-file P --out FILE
//   import39 --db NEW --in FILE --password-file P [--chain test]
//            creates NEW (migrate, outside the timing), then importBRC39 in restore mode
//
// What is timed: the API call alone (exportBRC39 returning the file's bytes, importBRC39 given
// them). Writing or reading the file is reported apart as fileIOSeconds and left out of
// "seconds", which favours the toolbox in the comparison (walletsync's times include its file
// I/O and fsyncs). The Argon2id time is measured by wrapping hash-wasm's argon2id, the function
// the toolbox's deriveBRC39Key calls through its module object at call time, with a timer that
// calls the original: argon2Seconds is the time spent inside it during the timed call.
//
// peakRSSBytes is VmHWM from /proc/self/status where Linux has it (getrusage's maxrss can carry
// the parent's peak across a vfork+exec), else process.resourceUsage().maxRSS.

process.env.TZ = 'UTC'
import { createRequire } from 'node:module'
import fs from 'node:fs'
import { performance } from 'node:perf_hooks'
import { need, openStore, newStorage, run } from './cli.mjs'

for (const k of ['log', 'info', 'warn', 'debug']) console[k] = (...a) => console.error(...a)

const require = createRequire(import.meta.url)
const portablePath = require.resolve('@bsv/wallet-toolbox/out/src/storage/portable/index.js')
const tb = require(portablePath)

// The hash-wasm instance the toolbox's portable module loaded (resolved from its own folder).
const hashWasm = createRequire(portablePath)('hash-wasm')
let argon2Ms = 0
{
  const original = hashWasm.argon2id
  if (typeof original !== 'function') throw new Error('hash-wasm has no argon2id to time')
  hashWasm.argon2id = async (...args) => {
    const t0 = performance.now()
    try { return await original(...args) } finally { argon2Ms += performance.now() - t0 }
  }
}

// BRC-39: 33-byte fixed header, salt and nonce (their lengths in bytes 9 and 10), payload, 16-byte tag.
const documentBytes = file => file.length - (33 + file[9] + file[10]) - 16

function peakRSS () {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))
    if (m) return Number(m[1]) * 1024
  } catch {}
  return process.resourceUsage().maxRSS * 1024
}

const seconds = ms => ms / 1000

const commands = {
  async idle (f) {
    await openStore(need(f, 'db'))
    return { mode: 'idle', peakRSSBytes: peakRSS() }
  },

  async export39 (f) {
    const storage = await openStore(need(f, 'db'))
    const password = fs.readFileSync(need(f, 'password-file'), 'utf8')
    argon2Ms = 0
    const t0 = performance.now()
    const bytes = await tb.exportBRC39(storage, need(f, 'identity'), password)
    const ms = performance.now() - t0
    const kdfMs = argon2Ms
    const t1 = performance.now()
    const buf = Buffer.from(bytes)
    fs.writeFileSync(need(f, 'out'), buf)
    const ioMs = performance.now() - t1
    return {
      mode: 'export', fileBytes: buf.length, documentBytes: documentBytes(buf), seconds: seconds(ms),
      argon2Seconds: seconds(kdfMs), fileIOSeconds: seconds(ioMs), peakRSSBytes: peakRSS()
    }
  },

  async import39 (f) {
    const file = need(f, 'db')
    if (fs.existsSync(file)) throw new Error(`refusing to import over an existing file: ${file}`)
    const storage = newStorage(file, f.chain ?? 'test')
    await storage.migrate('bench-restore', 'bench-restore')
    await storage.makeAvailable()
    const password = fs.readFileSync(need(f, 'password-file'), 'utf8')
    const t1 = performance.now()
    const buf = fs.readFileSync(need(f, 'in'))
    const bytes = Array.from(buf)
    const ioMs = performance.now() - t1
    argon2Ms = 0
    const t0 = performance.now()
    const r = await tb.importBRC39(storage, bytes, password, { mode: 'restore' })
    const ms = performance.now() - t0
    return {
      mode: 'import', rows: r.inserts, fileBytes: buf.length, documentBytes: documentBytes(buf), seconds: seconds(ms),
      argon2Seconds: seconds(argon2Ms), fileIOSeconds: seconds(ioMs), peakRSSBytes: peakRSS()
    }
  }
}

run(commands, 'usage: node bench-portable.mjs idle|export39|import39 [--flag value ...]   (see the comment at the top)')
