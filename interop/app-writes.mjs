#!/usr/bin/env node
// app-writes.mjs: a wallet app on @bsv/wallet-toolbox 2.1.26 that writes its SQLite store the
// way a live wallet does, for walletsync's differential test. Every write goes through
// StorageKnex's own insert, update and findOrInsert methods (and the toolbox's own
// two-commit proof method), with a seeded random generator, so a run is a reproducible
// sequence of realistic writes; Go drives it in batches and syncs the file between them.
//
// Protocol: one JSON request per line on stdin, one JSON answer per line on stdout
// (diagnostics on stderr). A request that fails answers {"error", "name"[, "code"]}.
//   {"cmd":"open","db":F,"identity":HEX,"seed":N[,"exact":true]}  -> {"userId"}
//       open an existing toolbox store as the app (findOrInsertUser for identity); exact
//       lifts the rules below that only BRC-40's merge needs (see "exact")
//   {"cmd":"batch","writes":N}  -> {"writes":N,"ops":{kind:n},"failed":[{"op","error","code"}]}
//       N random writes; a write the toolbox refuses or SQLite fails is reported, never retried
//   {"cmd":"dump","db":F,"identity":HEX}  -> dump.mjs's rows of that store (the app's own when F is its file)
//   {"cmd":"close"}  -> {} and exit; the end of the input does the same
//
// Rules of the generator, and why:
// - Two writes never share a millisecond (each waits for the clock to move past the last):
//   BRC-40's "strictly newer wins" compares updated_at to the millisecond, so a row written
//   twice in one millisecond, with a sync between, keeps its first version at any BRC-40
//   destination (the toolbox's own included). That is the protocol's limit, not a sync's, and
//   a differential test of the sync must not trip on it. The two commits of one proof may
//   share a millisecond: they write different rows.
// - Labels and tags are attached outside the action's knex transaction: the toolbox's
//   findOrInsertTxLabel revives a deleted label without passing trx, which on better-sqlite3's
//   one-connection pool would wait for the open transaction forever.
// - Outputs never move between baskets and proof requests only move forward: BRC-40 never
//   merges an existing output's basketId or a request's status into a backup, so those
//   columns are left out of the comparison (see the Go test) rather than written here.
// - exact (for a destination that is an exact copy, wallet.Batch.Mirror) lifts both: writes
//   may share a millisecond, a "restamp" writes one transaction twice with the same
//   updated_at in two commits, and a "move" puts an output in another basket.

process.env.TZ = 'UTC'
import { createRequire } from 'node:module'
import readline from 'node:readline'
import { makeKnex, newStorage, readSettingsRow } from './cli.mjs'
import { dump } from './dump.mjs'

for (const k of ['log', 'info', 'warn', 'debug']) console[k] = (...a) => console.error(...a)

const require = createRequire(import.meta.url)
const { EntityProvenTxReq } = require('@bsv/wallet-toolbox/out/src/storage/index.all.js')

// mulberry32: small, seedable, good enough to pick writes.
function rng (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

class App {
  constructor (storage, knex, userId, seed, exact) {
    this.exact = exact
    this.storage = storage
    this.knex = knex
    this.userId = userId
    this.rand = rng(seed)
    this.last = 0
    this.serial = 0
  }

  int (n) { return Math.floor(this.rand() * n) }
  pick (list) { return list[this.int(list.length)] }
  chance (p) { return this.rand() < p }
  bytes (n) { return Array.from({ length: n }, () => this.int(256)) }
  hex (n) { return Buffer.from(this.bytes(n)).toString('hex') }
  b64 (n) { return Buffer.from(this.bytes(n)).toString('base64') }
  name (kind) { return `${kind}-${this.int(12)}` }

  // now waits until the clock is past the last write's millisecond and returns a fresh Date;
  // in exact mode it does not wait, so that writes may share a millisecond.
  async now () {
    while (!this.exact && Date.now() <= this.last) await sleep(1)
    return new Date()
  }

  stamps (now) { return { created_at: now, updated_at: now } }

  async findAll (finder, partial) { return await this.storage[finder]({ partial: { userId: this.userId, ...partial } }) }

  // ---------- the writes ----------

  // newAction records a transaction with one to three outputs, a proof request when it has a
  // txid, sometimes a commission, then its labels and its first output's tags.
  async newAction (opts = {}) {
    const s = this.storage
    const now = await this.now()
    const status = opts.status ?? this.pick(['completed', 'unproven', 'unprocessed', 'sending', 'nosend', 'unsigned'])
    const txid = status === 'unsigned' ? undefined : this.hex(32)
    const baskets = (await this.findAll('findOutputBaskets')).filter(b => !b.isDeleted)
    const { transactionId, outputs } = await s.transaction(async trx => {
      const transactionId = await s.insertTransaction({
        ...this.stamps(now), transactionId: 0, userId: this.userId, status, reference: this.b64(12), isOutgoing: opts.isOutgoing ?? this.chance(0.5),
        satoshis: opts.satoshis ?? this.int(100000) - 50000, version: 1, lockTime: 0, description: `action ${++this.serial}`, txid,
        rawTx: txid ? this.bytes(60 + this.int(200)) : undefined, inputBEEF: txid && this.chance(0.5) ? this.bytes(100) : undefined
      }, trx)
      const outputs = []
      for (let vout = 0, n = 1 + this.int(3); vout < n; vout++) {
        const basket = this.chance(0.8) && baskets.length > 0 ? this.pick(baskets) : undefined
        outputs.push(await s.insertOutput({
          ...this.stamps(now), outputId: 0, userId: this.userId, transactionId, basketId: basket?.basketId, spendable: basket != null && status !== 'unsigned',
          change: basket?.name === 'default', vout, satoshis: 1 + this.int(50000), providedBy: this.pick(['you', 'storage', 'you-and-storage']),
          purpose: basket?.name === 'default' ? 'change' : '', type: this.pick(['P2PKH', 'custom']), outputDescription: `output ${vout}`, txid,
          derivationPrefix: this.b64(8), derivationSuffix: this.b64(8), scriptLength: 25, scriptOffset: 10 + vout * 34, lockingScript: this.bytes(25)
        }, trx))
      }
      if (this.chance(0.1)) {
        await s.insertCommission({ ...this.stamps(now), commissionId: 0, userId: this.userId, transactionId, satoshis: 10 + this.int(100), keyOffset: this.b64(32), isRedeemed: false, lockingScript: this.bytes(25) }, trx)
      }
      if (txid) {
        await s.insertProvenTxReq({
          ...this.stamps(now), provenTxReqId: 0, status: 'unsent', attempts: 0, notified: false, txid, rawTx: this.bytes(60), inputBEEF: this.bytes(80),
          history: JSON.stringify({ notes: [{ when: now.toISOString(), what: 'created' }] }), notify: JSON.stringify({ transactionIds: [transactionId] }),
          wasBroadcast: false, rebroadcastAttempts: 0
        }, trx)
      }
      return { transactionId, outputs }
    })
    for (let i = this.int(3); i > 0; i--) {
      const label = await s.findOrInsertTxLabel(this.userId, this.name('label'))
      await s.findOrInsertTxLabelMap(transactionId, label.txLabelId)
    }
    for (let i = this.int(3); i > 0; i--) {
      const tag = await s.findOrInsertOutputTag(this.userId, this.name('tag'))
      await s.findOrInsertOutputTagMap(outputs[0], tag.outputTagId)
    }
    return transactionId
  }

  // spend spends a spendable output in a new outgoing transaction, reading and writing in one
  // knex transaction as createAction does.
  async spend () {
    const s = this.storage
    const now = await this.now()
    return await s.transaction(async trx => {
      const spendable = await s.findOutputs({ partial: { userId: this.userId, spendable: true }, trx })
      if (spendable.length === 0) return 'nothing spendable'
      const o = this.pick(spendable)
      const txid = this.hex(32)
      const transactionId = await s.insertTransaction({
        ...this.stamps(now), transactionId: 0, userId: this.userId, status: 'sending', reference: this.b64(12), isOutgoing: true,
        satoshis: -o.satoshis, version: 1, lockTime: 0, description: `spend ${++this.serial}`, txid, rawTx: this.bytes(120)
      }, trx)
      await s.updateOutput(o.outputId, { spendable: false, spentBy: transactionId, spendingDescription: `spent by ${transactionId}` }, trx)
      await s.insertProvenTxReq({
        ...this.stamps(now), provenTxReqId: 0, status: 'sending', attempts: 0, notified: false, txid, rawTx: this.bytes(60), inputBEEF: this.bytes(80),
        history: JSON.stringify({ notes: [{ when: now.toISOString(), what: 'created' }] }), notify: JSON.stringify({ transactionIds: [transactionId] }),
        wasBroadcast: false, rebroadcastAttempts: 0
      }, trx)
      return transactionId
    })
  }

  // openRequests are the proof requests of the user's transactions that have no proof yet.
  async openRequests () {
    return (await this.storage.getProvenTxReqsForUser({ userId: this.userId }))
      .filter(r => r.provenTxId == null && ['unsent', 'sending', 'unmined', 'unprocessed', 'callback', 'unconfirmed'].includes(r.status))
  }

  // broadcast moves a request forward as the monitor does, with a history note.
  async broadcast () {
    const reqs = await this.openRequests()
    if (reqs.length === 0) return 'no open request'
    const now = await this.now()
    const r = new EntityProvenTxReq(this.pick(reqs))
    r.addHistoryNote({ when: now.toISOString(), what: 'postBeefSuccess', attempt: r.attempts + 1 })
    await this.storage.updateProvenTxReq(r.id, { status: 'unmined', attempts: r.attempts + 1, wasBroadcast: true, history: r.apiHistory, updated_at: now })
    return r.id
  }

  // prove records a proof for an open request in the toolbox's two commits: the proven_txs
  // row and the request in one transaction, then the transactions the request notifies.
  // Half the time through the toolbox's own updateProvenTxReqWithNewProvenTx, half by the
  // same writes with a pause between the commits, so a sync running beside the app can land
  // between them.
  async prove () {
    const reqs = await this.openRequests()
    if (reqs.length === 0) return 'no open request'
    const req = this.pick(reqs)
    await this.now()
    const proof = { txid: req.txid, height: 900000 + this.int(1000), index: this.int(50), merklePath: this.bytes(40), blockHash: this.hex(32), merkleRoot: this.hex(32) }
    if (this.chance(0.5)) {
      await this.storage.updateProvenTxReqWithNewProvenTx({ provenTxReqId: req.provenTxReqId, status: req.status, attempts: req.attempts, history: req.history, ...proof })
      return 'toolbox'
    }
    const s = this.storage
    const provenTxId = await s.transaction(async trx => {
      const { proven } = await s.findOrInsertProvenTx({ created_at: new Date(), updated_at: new Date(), provenTxId: 0, rawTx: req.rawTx, ...proof }, trx)
      await s.updateProvenTxReq(req.provenTxReqId, { status: 'completed', provenTxId: proven.provenTxId }, trx)
      return proven.provenTxId
    })
    await sleep(this.int(20))
    const ids = JSON.parse(req.notify).transactionIds ?? []
    for (const id of ids) await s.updateTransaction(id, { provenTxId, status: 'completed' })
    return 'two commits'
  }

  // toggle tombstones or revives a label, tag, basket, certificate or map row.
  async toggle () {
    const s = this.storage
    const kind = this.pick(['label', 'tag', 'basket', 'certificate', 'labelMap', 'tagMap'])
    const flip = async (rows, update) => {
      if (rows.length === 0) return `no ${kind}`
      const r = this.pick(rows)
      await this.now()
      await update(r, { isDeleted: !r.isDeleted })
      return kind
    }
    switch (kind) {
      case 'label': return await flip(await this.findAll('findTxLabels'), (r, u) => s.updateTxLabel(r.txLabelId, u))
      case 'tag': return await flip(await this.findAll('findOutputTags'), (r, u) => s.updateOutputTag(r.outputTagId, u))
      case 'basket': return await flip((await this.findAll('findOutputBaskets')).filter(b => b.name !== 'default'), (r, u) => s.updateOutputBasket(r.basketId, u))
      case 'certificate': return await flip(await this.findAll('findCertificates'), (r, u) => s.updateCertificate(r.certificateId, u))
      case 'labelMap': return await flip(await s.getTxLabelMapsForUser({ userId: this.userId }), (r, u) => s.updateTxLabelMap(r.transactionId, r.txLabelId, u))
      default: return await flip(await s.getOutputTagMapsForUser({ userId: this.userId }), (r, u) => s.updateOutputTagMap(r.outputId, r.outputTagId, u))
    }
  }

  // certificate acquires a certificate with one to three fields.
  async certificate () {
    const s = this.storage
    const now = await this.now()
    await s.transaction(async trx => {
      const certificateId = await s.insertCertificate({
        ...this.stamps(now), certificateId: 0, userId: this.userId, type: this.b64(32), serialNumber: this.b64(32), certifier: '02' + this.hex(32),
        subject: '02' + this.hex(32), verifier: this.chance(0.5) ? '02' + this.hex(32) : undefined, revocationOutpoint: `${this.hex(32)}.0`,
        signature: '3044' + this.hex(34), isDeleted: false
      }, trx)
      for (let i = 1 + this.int(3); i > 0; i--) {
        await s.insertCertificateField({ ...this.stamps(now), userId: this.userId, certificateId, fieldName: `field-${i}`, fieldValue: this.b64(24), masterKey: this.b64(48) }, trx)
      }
    })
  }

  async editField () {
    const fields = await this.findAll('findCertificateFields')
    if (fields.length === 0) return 'no field'
    const f = this.pick(fields)
    await this.now()
    await this.storage.updateCertificateField(f.certificateId, f.fieldName, { fieldValue: this.b64(24) })
  }

  // basket creates a basket or changes one's UTXO targets.
  async basket () {
    const baskets = await this.findAll('findOutputBaskets')
    const now = await this.now()
    if (this.chance(0.4)) {
      const name = this.name('basket')
      if (baskets.some(b => b.name === name)) return 'exists'
      await this.storage.insertOutputBasket({ ...this.stamps(now), basketId: 0, userId: this.userId, name, numberOfDesiredUTXOs: this.int(20), minimumDesiredUTXOValue: this.int(10000), isDeleted: false })
      return 'new'
    }
    const b = this.pick(baskets)
    await this.storage.updateOutputBasket(b.basketId, { numberOfDesiredUTXOs: this.int(200), minimumDesiredUTXOValue: this.int(10000) })
    return 'changed'
  }

  // label labels an existing transaction (internalizing a label after the fact).
  async label () {
    const txs = await this.findAll('findTransactions', {})
    if (txs.length === 0) return 'no transaction'
    const t = this.pick(txs)
    await this.now()
    const label = await this.storage.findOrInsertTxLabel(this.userId, this.name('label'))
    await this.storage.findOrInsertTxLabelMap(t.transactionId, label.txLabelId)
  }

  // abort fails an unsigned or unprocessed action, as abortAction does.
  async abort () {
    const txs = (await this.findAll('findTransactions')).filter(t => t.status === 'unsigned' || t.status === 'nosend')
    if (txs.length === 0) return 'nothing to abort'
    const t = this.pick(txs)
    await this.now()
    await this.storage.updateTransaction(t.transactionId, { status: 'failed', description: `${t.description} (aborted)` })
  }

  async redeem () {
    const cs = (await this.findAll('findCommissions')).filter(c => !c.isRedeemed)
    if (cs.length === 0) return 'nothing to redeem'
    await this.now()
    await this.storage.updateCommission(this.pick(cs).commissionId, { isRedeemed: true })
  }

  // restamp (exact mode) writes one transaction's description twice, in two commits with
  // the same updated_at: BRC-40's "strictly newer wins" keeps the first at a destination that
  // synced between them; an exact copy takes the second.
  async restamp () {
    const txs = await this.findAll('findTransactions')
    if (txs.length === 0) return 'no transaction'
    const t = this.pick(txs)
    const at = new Date()
    await this.storage.updateTransaction(t.transactionId, { description: `restamped ${++this.serial}`, updated_at: at })
    await sleep(this.int(3))
    await this.storage.updateTransaction(t.transactionId, { description: `restamped ${++this.serial}`, updated_at: at })
  }

  // move (exact mode) puts an output in another of the user's baskets.
  async move () {
    const baskets = await this.findAll('findOutputBaskets')
    const outputs = await this.findAll('findOutputs')
    if (baskets.length < 2 || outputs.length === 0) return 'nowhere to move'
    const o = this.pick(outputs)
    const to = this.pick(baskets.filter(b => b.basketId !== o.basketId))
    await this.now()
    await this.storage.updateOutput(o.outputId, { basketId: to.basketId })
  }

  async batch (n) {
    const weights = [['newAction', 24], ['spend', 14], ['broadcast', 10], ['prove', 12], ['toggle', 10], ['certificate', 7],
      ['editField', 4], ['basket', 6], ['label', 6], ['abort', 4], ['redeem', 3]]
    if (this.exact) weights.push(['restamp', 6], ['move', 4])
    const total = weights.reduce((a, [, w]) => a + w, 0)
    const ops = {}
    const failed = []
    for (let i = 0; i < n; i++) {
      let x = this.int(total)
      const [op] = weights.find(([, w]) => (x -= w) < 0)
      try {
        await this[op]()
        ops[op] = (ops[op] ?? 0) + 1
      } catch (e) {
        console.error(e?.stack ?? String(e))
        failed.push({ op, error: String(e?.message ?? e), code: e?.code != null ? String(e.code) : undefined })
      } finally {
        this.last = Date.now()
      }
    }
    return { writes: n, ops, failed }
  }
}

async function openStorage (file) {
  const knex = makeKnex(file)
  const storage = newStorage(file, (await readSettingsRow(knex)).chain, knex)
  await storage.makeAvailable()
  return { storage, knex }
}

let app
const handlers = {
  async open (r) {
    const { storage, knex } = await openStorage(r.db)
    const { user } = await storage.findOrInsertUser(r.identity)
    app = new App(storage, knex, user.userId, r.seed ?? 1, r.exact === true)
    return { userId: user.userId }
  },
  async batch (r) { return await app.batch(r.writes) },
  async dump (r) {
    if (r.db === app?.knex.client.config.connection.filename) return await dump(app.storage, r.identity)
    const { storage, knex } = await openStorage(r.db)
    try { return await dump(storage, r.identity) } finally { await knex.destroy() }
  },
  async close () {
    await app?.knex.destroy()
    app = undefined
    return {}
  }
}

const lines = readline.createInterface({ input: process.stdin })
for await (const line of lines) {
  let answer
  let req = {}
  try {
    req = JSON.parse(line)
    if (!Object.hasOwn(handlers, req.cmd)) throw new Error(`unknown request: ${req.cmd}`)
    answer = await handlers[req.cmd](req)
  } catch (e) {
    console.error(e?.stack ?? String(e))
    answer = { error: String(e?.message ?? e), name: String(e?.name ?? 'Error') }
    if (e?.code != null) answer.code = String(e.code)
  }
  process.stdout.write(JSON.stringify(answer) + '\n')
  if (req.cmd === 'close') break
}
await app?.knex.destroy() // the end of the input closes the app too
