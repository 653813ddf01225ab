#!/usr/bin/env node
// storage-client.mjs: the real toolbox 2.1.26 StorageClient (AuthFetch over a ProtoWallet of
// the user's root key) against a storage server: walletsync serve or the toolbox's own
// StorageServer. Each command prints one JSON object (see cli.mjs).
//
//   backup  --url U --key HEX --db SRC [--times N]
//       WalletStorageManager(active = the StorageKnex on SRC, backup = StorageClient(U)):
//       setActive(SRC's storageIdentityKey), which resolves the fresh backup's conflicting
//       active, then N (default 2) updateBackups. Reports each step's requests, inserts and
//       updates, and its milliseconds.
//   restore --url U --key HEX --db NEW
//       A new StorageKnex store on NEW (test chain) pulls the user from the StorageClient
//       (WalletStorageManager.syncFromReader).
//   call    --url U --key HEX --method M --params JSON
//       One StorageClient method (M as the client names it), its result or its WERR_* error.
//   rpc     --url U --key HEX --body JSON
//       One raw authenticated POST /: the HTTP status and the parsed answer.
process.env.TZ = 'UTC'
import { createRequire } from 'node:module'
import { run, need, openStore, newStorage } from './cli.mjs'

for (const k of ['log', 'info', 'warn', 'debug']) console[k] = (...a) => console.error(...a)

const require = createRequire(import.meta.url)
const { PrivateKey, ProtoWallet, AuthFetch } = require('@bsv/sdk')
const { WalletStorageManager, StorageClient } = require('@bsv/wallet-toolbox/out/src/storage/index.all.js')

/** client returns a StorageClient for flags --url and --key that counts its requests. */
function client (f) {
  const key = PrivateKey.fromHex(need(f, 'key'))
  const c = new StorageClient(new ProtoWallet(key), need(f, 'url'))
  c.requests = 0
  const fetch = c.authClient.fetch.bind(c.authClient)
  c.authClient.fetch = (...a) => { c.requests++; return fetch(...a) }
  return { c, identityKey: key.toPublicKey().toString() }
}

/** step runs fn and reports its requests, time and the inserts/updates its log names. */
async function step (c, fn) {
  const before = c.requests
  const t0 = performance.now()
  const log = String(await fn() ?? '')
  const ms = performance.now() - t0
  let inserts = 0; let updates = 0
  for (const m of log.matchAll(/complete: (\d+) inserts, (\d+) updates/g)) { inserts += Number(m[1]); updates += Number(m[2]) }
  return { requests: c.requests - before, ms, inserts, updates }
}

const errorOf = e => ({ name: String(e?.name ?? 'Error'), message: String(e?.message ?? e), isWERR: e?.isError === true })

const commands = {
  async backup (f) {
    const { c, identityKey } = client(f)
    const active = await openStore(need(f, 'db'))
    const wsm = new WalletStorageManager(identityKey, active, [c])
    const sik = active.getSettings().storageIdentityKey
    const setActive = await step(c, async () => { await wsm.makeAvailable(); return await wsm.setActive(sik) })
    const updates = []
    for (let i = 0; i < Number(f.times ?? 2); i++) updates.push(await step(c, () => wsm.updateBackups()))
    return { setActive, updates, server: c.getSettings().storageIdentityKey }
  },

  async restore (f) {
    const { c, identityKey } = client(f)
    const storage = newStorage(need(f, 'db'), 'test')
    await storage.migrate('restored', PrivateKey.fromRandom().toPublicKey().toString())
    await storage.makeAvailable()
    await storage.findOrInsertUser(identityKey)
    const wsm = new WalletStorageManager(identityKey, storage, [])
    await wsm.makeAvailable()
    return await step(c, async () => (await wsm.syncFromReader(identityKey, c)).log)
  },

  async call (f) {
    const { c } = client(f)
    await c.makeAvailable()
    try {
      const result = await c[need(f, 'method')](...JSON.parse(need(f, 'params')))
      return { result: result ?? null }
    } catch (e) {
      return { error: errorOf(e) }
    }
  },

  async rpc (f) {
    const af = new AuthFetch(new ProtoWallet(PrivateKey.fromHex(need(f, 'key'))))
    const res = await af.fetch(need(f, 'url'), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: need(f, 'body') })
    const text = await res.text()
    let body
    try { body = JSON.parse(text) } catch { body = text }
    return { status: res.status, body }
  }
}

await run(commands, 'usage: node storage-client.mjs backup|restore|call|rpc --url URL --key HEX ...')
