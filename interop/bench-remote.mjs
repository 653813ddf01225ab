#!/usr/bin/env node
// bench-remote.mjs: @bsv/wallet-toolbox 2.1.26's own remote backup and restore, for
// `walletsync bench remote`, the baseline measured in the same run: a WalletStorageManager with
// the wallet's store as active and a StorageClient (AuthFetch, BRC-104) as backup, as a toolbox
// wallet drives a storage server. Each command prints exactly one JSON object on stdout:
// {seconds, requests, bytesSent} (pull adds inserts, updates); diagnostics go to stderr. Failure: exit 1
// with {"error": "...", "name": "..."}.
//
//   push --db F --identity HEX --key HEX --url U
//        the wallet F to the server U: makeAvailable, then setActive(F's key), which is how the
//        toolbox resolves a new backup (it reports as a conflicting active: it first merges the
//        backup into F, then pushes F to it, carrying F's user row as the newer one), or
//        updateBackups() when the server's user already names F.
//   pull --db NEW --identity HEX --key HEX --url U [--chain test]
//        creates NEW (migrate, outside the timing) as the active store, then
//        syncFromReader(identity, StorageClient(U)): the server's rows into NEW.
//   produce --db SERVER --identity HEX --args-file REQUESTS.json
//        the server's own producer: the toolbox's getSyncChunk on the server's store file for
//        each request in the file (a JSON array of RequestSyncChunkArgs, in order), then
//        JSON.stringify of each answer and its BRC-104 signing (signAnswer), as the server
//        answers; prints {seconds, serializeSeconds, signSeconds, chunks}: the time of the
//        getSyncChunk calls, of the stringify and of the signing.
//
// requests and bytesSent count the StorageClient's JSON-RPC calls and their bodies
// (JSON.stringify of the envelope, what AuthFetch sends); the handshake is in the time only.

process.env.TZ = 'UTC'
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import fs from 'node:fs'
import { need, openStore, newStorage, run } from './cli.mjs'

for (const k of ['log', 'info', 'warn', 'debug']) console[k] = (...a) => console.error(...a)

const require = createRequire(import.meta.url)
const { PrivateKey, ProtoWallet, Utils } = require('@bsv/sdk')
const { WalletStorageManager, StorageClient } = require('@bsv/wallet-toolbox/out/src/storage/index.all.js')

/** countingClient returns a StorageClient for url signing as key, counting its calls. */
function countingClient (key, url, counts) {
  const client = new StorageClient(new ProtoWallet(PrivateKey.fromHex(key)), url)
  const rpcCall = client.rpcCall.bind(client)
  client.rpcCall = async (method, params) => {
    counts.requests++
    counts.bytesSent += Buffer.byteLength(JSON.stringify({ jsonrpc: '2.0', method, params, id: client.nextId }))
    return await rpcCall(method, params)
  }
  return client
}

/**
 * signAnswer does what the StorageServer's auth middleware (@bsv/auth-express-middleware)
 * does with an answer before it leaves: the body as a number[] (Utils.toArray), the BRC-104
 * response payload around it (request id, status, headers, body; buildResponsePayload), and
 * the Peer's signature over the payload (createSignature, as Peer.toPeer signs).
 */
async function signAnswer (wallet, json, counterparty) {
  const body = Utils.toArray(json, 'utf8')
  const w = new Utils.Writer()
  w.write(Utils.toArray(Utils.toBase64(Array.from(crypto.getRandomValues(new Uint8Array(32)))), 'base64'))
  w.writeVarIntNum(200)
  w.writeVarIntNum(0)
  w.writeVarIntNum(body.length)
  w.write(body)
  const payload = w.toArray()
  await wallet.createSignature({ data: payload, protocolID: [2, 'auth message signature'], keyID: 'bench nonce', counterparty })
}

const commands = {
  async push (f) {
    const storage = await openStore(need(f, 'db'))
    const identity = need(f, 'identity')
    const counts = { requests: 0, bytesSent: 0 }
    const client = countingClient(need(f, 'key'), need(f, 'url'), counts)
    const t0 = performance.now()
    const wsm = new WalletStorageManager(identity, storage, [client])
    await wsm.makeAvailable()
    if (wsm.getConflictingStores().length > 0) {
      await wsm.setActive(storage.getSettings().storageIdentityKey)
    } else {
      await wsm.updateBackups()
    }
    const seconds = (performance.now() - t0) / 1000
    return { seconds, ...counts }
  },

  async pull (f) {
    const storage = newStorage(need(f, 'db'), f.chain ?? 'test')
    await storage.migrate('toolbox pull', PrivateKey.fromRandom().toPublicKey().toString())
    await storage.makeAvailable()
    const identity = need(f, 'identity')
    const counts = { requests: 0, bytesSent: 0 }
    const client = countingClient(need(f, 'key'), need(f, 'url'), counts)
    const t0 = performance.now()
    const wsm = new WalletStorageManager(identity, storage, [])
    await wsm.makeAvailable()
    const r = await wsm.syncFromReader(identity, client)
    const seconds = (performance.now() - t0) / 1000
    return { seconds, ...counts, inserts: r.inserts, updates: r.updates }
  },

  async produce (f) {
    const storage = await openStore(need(f, 'db'))
    const identity = need(f, 'identity')
    const requests = JSON.parse(fs.readFileSync(need(f, 'args-file'), 'utf8'))
    let seconds = 0
    let serializeSeconds = 0
    let signSeconds = 0
    const signer = new ProtoWallet(PrivateKey.fromRandom())
    const counterparty = PrivateKey.fromRandom().toPublicKey().toString()
    for (const args of requests) {
      if (args.identityKey !== identity) throw new Error('a request for another identity')
      if (args.since != null) args.since = new Date(args.since)
      const t0 = performance.now()
      const chunk = await storage.getSyncChunk(args)
      const t1 = performance.now()
      const json = JSON.stringify({ jsonrpc: '2.0', result: chunk, id: 1 })
      const t2 = performance.now()
      await signAnswer(signer, json, counterparty)
      seconds += (t1 - t0) / 1000
      serializeSeconds += (t2 - t1) / 1000
      signSeconds += (performance.now() - t2) / 1000
    }
    return { seconds, serializeSeconds, signSeconds, chunks: requests.length }
  }
}

await run(commands, 'usage: node bench-remote.mjs push|pull --db F --identity HEX --key HEX --url U | produce --db F --identity HEX --args-file F')
