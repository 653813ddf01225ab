#!/usr/bin/env node
// peer.mjs: @bsv/wallet-toolbox 2.1.26 as an independent interop peer for walletsync's Go tests.
// Every command prints exactly one JSON object on stdout; diagnostics go to stderr.
// Failure: exit 1 with {"error": "...", "name": "...", "code"?: "..."} on stdout.
//
// NOTES: toolbox behaviour found while writing and checking this script (2.1.26, Node 20):
// - Inserts validate nothing but dates: any status, txid ('NOT-A-TXID' is accepted), providedBy or
//   outpoint string goes in; txid is never checked against rawTx. Booleans are coerced on the
//   caller's object, not on the inserted copy (knex's better-sqlite3 binding turns them into 1/0).
// - migrate() returns knex's currentVersion, which cuts the name at the first '_':
//   "2026-04-30-001 add wasBroadcast and rebroadcastAttempts to proven". We report the full name
//   from knex_migrations as "migration" and the raw return value as "migrateResult".
//   migrate() writes settings only in the initial migration; on a fully migrated file it changes no
//   data (it does take the knex lock; a missing knex_migrations_lock is recreated as (1, 0)). A
//   file with settings but no knex_migrations fails with "table `proven_txs` already exists".
// - TS finders have no ORDER BY and SQLite picks an index: outputs come ordered by
//   idx_outputs_user_basket_spendable_satoshis (basketId NULL first), certificates by the
//   (userId, type, certifier, serialNumber) unique index. Chunks, and so the consumer's new ids,
//   follow that order, not the primary key (fill gives A.outputId 1,2 -> B.outputId 2,1).
// - findTransactions() back-fills a NULL transactions.rawTx from proven_txs.rawTx (or from a
//   proven_tx_reqs row in a "live" status); findOutputs() back-fills a lockingScript whose length
//   is not scriptLength. getSyncChunk and exportBRC38 use these finders, so the consumer/export gets
//   a rawTx the producer row does not hold. `dump` therefore takes those two blob columns from plain
//   SQL. If the back-fill lands on a proven_tx_reqs row with NULL inputBEEF, findTransactions (and
//   thus getSyncChunk/exportBRC38) throws "object null is not iterable" (Array.from(null)).
// - Sync of proven_tx_reqs: notified is reset to false on the consumer whenever notify has ids
//   (addNotifyTransactionId sets notified=false; mergeExisting runs on every re-sent row);
//   notify ids are mapped, deduplicated and sorted, "{}" becomes {"transactionIds":[]}; history is
//   re-serialised. getProvenTxReqsForUser coerces only `notified`, so wasBroadcast travels as 0/1.
// - BRC-38/39 restore keeps ids and user.activeStorage (the source store's key), but history/notify
//   come back with keys in canonical (sorted) order: JSON-equal, not text-equal.
// - processSyncChunk finds its sync_states row by (userId, fromStorageIdentityKey) with verifyOne,
//   while findOrInsertSyncStateAuth keys on (userId, storageIdentityKey, storageName): the same
//   producer key under a second name makes processSyncChunk fail (WERR_BAD_REQUEST "Result must
//   exist and be unique.").
// - settings.created_at/updated_at are SQLite defaults "YYYY-MM-DD HH:MM:SS" that the toolbox parses
//   with new Date(text), i.e. in LOCAL time; BRC-38 sourceStorage carries the result (TZ=America/
//   New_York shifts it by 5 h). This script pins TZ=UTC.
// - exportBRC38 sorts certificateFields with localeCompare in the ICU default locale, which ICU takes
//   from LC_ALL, then LC_MESSAGES, then LANG (LC_COLLATE is ignored); da_DK puts "Alpha" first.
//   NFC/NFD spellings compare equal and keep the finder's (rowid) order. `dump` uses plain `<`.
// - knex logs warnings with console.log (stdout), as does findOrInsertUser on a retry; this script
//   routes console.log/info/warn/debug to stderr. users.created_at and the default basket's
//   created_at are "now" (findOrInsertUser), so they are the only non-deterministic fill values.
// - encryptBRC39 refuses t < 7 or m < 131072 KiB: every export39 costs a full Argon2id run (~1.5 s).

process.env.TZ = 'UTC'
import { createRequire } from 'node:module'
import fs from 'node:fs'
import crypto from 'node:crypto'
import { UsageError, need, makeKnex, readSettingsRow, openStore, run } from './cli.mjs'
import { dump } from './dump.mjs'

for (const k of ['log', 'info', 'warn', 'debug']) console[k] = (...a) => console.error(...a)

const require = createRequire(import.meta.url)
const tb = require('@bsv/wallet-toolbox/out/src/storage/index.all.js')
const { validateSyncChunkEntities } = require('@bsv/wallet-toolbox/out/src/storage/remoting/entityValidationHelpers.js')
const { StorageKnex, EntitySyncState } = tb

const USAGE = `usage: node peer.mjs <command> [--flag value ...]   (one JSON object on stdout)

  create   --db F [--chain test] --sik HEX --name NAME
           new store: migrate(name, sik) + makeAvailable  -> {settings, migration, migrateResult}
  open     --db F            migrate() with the file's own settings
           -> {migrationsBefore, migrationsAfter, migration, migrateResult, settings}
  fill     --db F --identity HEX [--seed N] [--labels N]
           deterministic wallet through the toolbox insert* methods  -> {userId, counts:{table:n}}
  dump     --db F --identity HEX
           the user's rows, BRC-40 scoping, read by toolbox finders (plus sync_states)
           -> {users:[...], proven_txs:[...], ...} keyed by SQL table name
           (dates ISO, blobs lowercase hex, booleans true/false, nulls null, sorted by primary key;
            tx_labels_map by (transactionId, txLabelId), output_tags_map by (outputId, outputTagId),
            certificate_fields by (certificateId, fieldName with <))
  sync     --from A --to B --identity HEX [--max-items N] [--max-bytes N]
           raw getSyncChunk/processSyncChunk loop A -> B  -> {chunks, inserts, updates}
  export38 --db F --identity HEX --out FILE [--exported-at ISO]  -> {bytes, sha256, exportedAt, collation}
           (--exported-at pins the document's exportedAt so outputs can be compared byte for byte)
  export39 --db F --identity HEX --password-file P --out FILE    -> {bytes, sha256, ms, collation}
  import39 --db F --in FILE --password-file P --mode restore|merge -> {mode, identityKey, userId, inserts, updates, ms}
  import38 --db F --in FILE --mode restore|merge                 -> {mode, identityKey, userId, inserts, updates, ms}
  getchunk --db F --identity HEX --args-file ARGS.json           -> SyncChunk (wire JSON)
  processchunk --db F --identity HEX --from-sik SIK --from-name NAME --args-file ARGS.json --chunk-file CHUNK.json
                                                                 -> {done, maxUpdated_at, updates, inserts}
  syncargs --db F --identity HEX --from-sik SIK --from-name NAME [--max-items N] [--max-bytes N]
                                                                 -> RequestSyncChunkArgs (wire JSON)

Password files are used byte for byte (UTF-8, no newline stripping). Stores other than 'create'
must already exist; their chain is read from the settings row. TZ is pinned to UTC. "collation" is
the ICU locale localeCompare uses; run with LC_ALL=C.UTF-8 (ICU reads LC_ALL, LC_MESSAGES, LANG,
not LC_COLLATE) for the en-US order walletsync reproduces.`

// ---------- plumbing ----------

const int = (f, k, d) => {
  if (f[k] == null) return d
  const n = Number(f[k]); if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${k} must be a non-negative integer`); return n
}

/** Full name of the last applied migration (migrate() itself returns knex's currentVersion, cut at '_'). */
async function latestMigration (knex) {
  const r = await knex('knex_migrations').orderBy('id', 'desc').first()
  return r?.name ?? null
}
/** ICU locale behind String.prototype.localeCompare (BRC-38 certificateFields order). ICU takes it from
 *  LC_ALL, then LC_MESSAGES, then LANG; LC_COLLATE is ignored. en-US is what C and C.UTF-8 give. */
const COLLATION = new Intl.Collator().resolvedOptions().locale
const readJson = f => JSON.parse(fs.readFileSync(f, 'utf8'))
const readPassword = f => fs.readFileSync(f, 'utf8')
const sha256 = b => crypto.createHash('sha256').update(b).digest('hex')
/** JSON as the wire carries it: Dates ISO (toJSON), number[] stay arrays, undefined dropped. */
const wire = v => JSON.parse(JSON.stringify(v))
function parseArgs (file, identity) {
  const args = readJson(file)
  if (args.since != null) args.since = new Date(args.since)
  if (identity != null) {
    if (args.identityKey == null) args.identityKey = identity
    else if (args.identityKey !== identity) throw new UsageError('--identity differs from args.identityKey')
  }
  return args
}

// ---------- fill ----------

const TABLES = ['users', 'proven_txs', 'proven_tx_reqs', 'output_baskets', 'transactions', 'commissions', 'outputs',
  'output_tags', 'output_tags_map', 'tx_labels', 'tx_labels_map', 'certificates', 'certificate_fields',
  'sync_states', 'monitor_events', 'settings']

async function countAll (knex) {
  const counts = {}
  for (const t of TABLES) counts[t] = Number((await knex(t).count({ n: '*' }))[0].n)
  return counts
}

const INSERTS = ['insertProvenTx', 'insertOutputBasket', 'insertTransaction', 'insertOutput', 'insertOutputTag', 'insertOutputTagMap',
  'insertTxLabel', 'insertTxLabelMap', 'insertCertificate', 'insertCertificateField', 'insertCommission', 'insertProvenTxReq']

async function fill (storage, identityKey, seed, extraLabels) {
  const h = s => sha256(`${identityKey}|${seed}|${s}`)
  const bytes = (s, n) => { let out = ''; for (let i = 0; out.length < 2 * n; i++) out += h(`${s}#${i}`); return Array.from(Buffer.from(out.slice(0, 2 * n), 'hex')) }
  const b64 = (s, n) => Buffer.from(bytes(s, n)).toString('base64')
  const pub = s => '02' + h(`pub:${s}`)
  // deterministic clock: each row gets created_at, and updated_at 250 ms later
  let tick = 0
  const base = Date.UTC(2026, 4, 1, 10, 0, 0) + seed * 3600_000
  const times = () => { const c = base + (tick++) * 1000 + 123; return { created_at: new Date(c), updated_at: new Date(c + 250) } }

  const { user } = await storage.findOrInsertUser(identityKey)
  const userId = user.userId
  const defaultBasket = (await storage.findOutputBaskets({ partial: { userId, name: 'default' } }))[0]
  // everything else in one transaction: atomic, and fast for --labels N (one fsync instead of N)
  return await storage.transaction(async trx => {
    const db = {}
    for (const m of INSERTS) db[m] = row => storage[m](row, trx)

    const txid = i => h(`txid:${i}`)
    const p2pkh = s => [0x76, 0xa9, 0x14, ...bytes(`pkh:${s}`, 20), 0x88, 0xac]

    const proven = {}
    for (const [k, height, index] of [[1, 800123, 3], [5, 800200, 0]]) {
      proven[k] = await db.insertProvenTx({ ...times(), provenTxId: 0, txid: txid(k), height, index,
        merklePath: bytes(`mp:${k}`, 72), rawTx: bytes(`raw:${k}`, 180), blockHash: h(`block:${height}`), merkleRoot: h(`root:${height}`) })
    }
    const savings = await db.insertOutputBasket({ ...times(), basketId: 0, userId, name: 'savings', numberOfDesiredUTXOs: 10, minimumDesiredUTXOValue: 5000, isDeleted: false })
    const tokens = await db.insertOutputBasket({ ...times(), basketId: 0, userId, name: 'jetons-été', numberOfDesiredUTXOs: 0, minimumDesiredUTXOValue: 1, isDeleted: false })
    await db.insertOutputBasket({ ...times(), basketId: 0, userId, name: 'old-basket', numberOfDesiredUTXOs: 6, minimumDesiredUTXOValue: 10000, isDeleted: true })

    const T = {}
    const txRow = (k, o) => ({ ...times(), transactionId: 0, userId, reference: b64(`ref:${k}`, 12), ...o })
    T[1] = await db.insertTransaction(txRow(1, { provenTxId: proven[1], status: 'completed', isOutgoing: false, satoshis: 5000, version: 1, lockTime: 0, description: 'received payment 🎉', txid: txid(1), rawTx: bytes('raw:1', 180) }))
    T[2] = await db.insertTransaction(txRow(2, { status: 'unproven', isOutgoing: true, satoshis: -1210, version: 1, lockTime: 0, description: 'paid Zoë for café', txid: txid(2), rawTx: bytes('raw:2', 226), inputBEEF: bytes('beef:2', 400) }))
    T[3] = await db.insertTransaction(txRow(3, { status: 'sending', isOutgoing: true, satoshis: -300, version: 2, lockTime: 800150, description: 'sending to 日本', txid: txid(3), rawTx: bytes('raw:3', 150), inputBEEF: bytes('beef:3', 250) }))
    T[4] = await db.insertTransaction(txRow(4, { status: 'unsigned', isOutgoing: true, satoshis: 0, description: 'draft action' }))
    T[5] = await db.insertTransaction(txRow(5, { provenTxId: proven[5], status: 'completed', isOutgoing: false, satoshis: 42000, version: 1, lockTime: 0, description: 'internalized gift', txid: txid(5), rawTx: bytes('raw:5', 180) }))

    const outRow = o => ({ ...times(), outputId: 0, userId, spendable: false, change: false, ...o })
    const O = {}
    O[1] = await db.insertOutput(outRow({ transactionId: T[1], basketId: defaultBasket.basketId, change: true, vout: 0, satoshis: 5000, providedBy: 'storage', purpose: 'change', type: 'P2PKH', outputDescription: '', txid: txid(1), senderIdentityKey: pub('sender'), derivationPrefix: b64('dp:1', 8), derivationSuffix: b64('ds:1', 8), spentBy: T[2], sequenceNumber: 4294967295, spendingDescription: 'spent by payment to Zoë', scriptLength: 25, scriptOffset: 44, lockingScript: p2pkh(1) }))
    O[2] = await db.insertOutput(outRow({ transactionId: T[2], vout: 0, satoshis: 1000, providedBy: 'you', purpose: '', type: 'custom', outputDescription: 'payment to Zoë', txid: txid(2), customInstructions: '{"note":"ünïcode ✓"}', scriptLength: 3, scriptOffset: 10, lockingScript: [0x51, 0x52, 0x93] }))
    O[3] = await db.insertOutput(outRow({ transactionId: T[2], basketId: defaultBasket.basketId, spendable: true, change: true, vout: 1, satoshis: 190, providedBy: 'storage', purpose: 'change', type: 'P2PKH', outputDescription: '', txid: txid(2), derivationPrefix: b64('dp:3', 8), derivationSuffix: b64('ds:3', 8), scriptLength: 25, scriptOffset: 80, lockingScript: p2pkh(3) }))
    O[4] = await db.insertOutput(outRow({ transactionId: T[4], basketId: savings, vout: 0, satoshis: 300, providedBy: 'you-and-storage', purpose: 'service-charge', type: 'custom', outputDescription: 'minimal output' }))
    O[5] = await db.insertOutput(outRow({ transactionId: T[5], basketId: tokens, spendable: true, vout: 2, satoshis: 42000, providedBy: 'you', purpose: '', type: 'custom', outputDescription: 'token from 日本', txid: txid(5), senderIdentityKey: pub('friend'), lockingScript: bytes('ls:5', 40) }))

    const tag = async (t, d) => db.insertOutputTag({ ...times(), outputTagId: 0, userId, tag: t, isDeleted: d })
    const G = { gift: await tag('gift', false), cafe: await tag('café', false), old: await tag('obsolete', true) }
    for (const [g, o, d] of [[G.gift, O[2], false], [G.cafe, O[2], false], [G.gift, O[3], true], [G.old, O[4], false], [G.cafe, O[5], false]]) {
      await db.insertOutputTagMap({ ...times(), outputTagId: g, outputId: o, isDeleted: d })
    }

    const label = async (l, d) => db.insertTxLabel({ ...times(), txLabelId: 0, userId, label: l, isDeleted: d })
    const L = { pay: await label('payment', false), emi: await label('émigré', false), jp: await label('日本語ラベル', false), old: await label('old-label', true) }
    for (const [l, t, d] of [[L.pay, T[1], false], [L.pay, T[2], false], [L.emi, T[2], false], [L.jp, T[3], true], [L.old, T[1], false], [L.emi, T[5], false]]) {
      await db.insertTxLabelMap({ ...times(), txLabelId: l, transactionId: t, isDeleted: d })
    }
    for (let i = 1; i <= extraLabels; i++) {
      const id = await label(`bulk-label-${String(i).padStart(6, '0')}`, false)
      await db.insertTxLabelMap({ ...times(), txLabelId: id, transactionId: T[1], isDeleted: false })
    }

    const cert = (k, o) => db.insertCertificate({ ...times(), certificateId: 0, userId, type: b64(`type:${k}`, 32), serialNumber: b64(`serial:${k}`, 32), certifier: pub('certifier'), subject: pub(`subject:${k}`), revocationOutpoint: `${txid(1)}.${k}`, signature: '3044' + h(`sig-r:${k}`) + h(`sig-s:${k}`).slice(0, 4), isDeleted: false, ...o })
    const C = { 1: await cert(1, { verifier: pub('verifier') }), 2: await cert(2, { isDeleted: true }), 3: await cert(3, {}) }
    const fields = [[1, 'alpha'], [1, 'Alpha'], [1, 'beta'], [1, 'émigré'], [1, 'Zeta'], [1, '日本'],
      [2, 'name'], [2, 'e\u0301migre\u0301'], [2, 'émigré'], [3, 'email']]
    for (const [c, name] of fields) {
      await db.insertCertificateField({ ...times(), userId, certificateId: C[c], fieldName: name, fieldValue: b64(`fv:${c}:${name}`, 24), masterKey: b64(`mk:${c}:${name}`, 48) })
    }

    for (const [k, isRedeemed] of [[2, false], [3, true]]) {
      await db.insertCommission({ ...times(), commissionId: 0, userId, transactionId: T[k], satoshis: 10 * k, keyOffset: b64(`ko:${k}`, 32), isRedeemed, lockingScript: p2pkh(`comm:${k}`) })
    }

    const note = (when, what, extra = {}) => ({ when: new Date(base + when * 1000).toISOString(), what, ...extra })
    const req = o => db.insertProvenTxReq({ ...times(), provenTxReqId: 0, attempts: 0, notified: false, wasBroadcast: false, rebroadcastAttempts: 0, ...o })
    await req({ provenTxId: proven[1], status: 'completed', attempts: 3, notified: true, txid: txid(1), rawTx: bytes('raw:1', 180), wasBroadcast: true,
      history: JSON.stringify({ notes: [note(1, 'status', { status_was: 'unmined', status_now: 'completed' }), note(2, 'notified')] }),
      notify: JSON.stringify({ transactionIds: [T[1]] }) })
    await req({ status: 'unmined', attempts: 1, txid: txid(2), batch: h('batch:1').slice(0, 16), rawTx: bytes('raw:2', 226), inputBEEF: bytes('beef:2', 400), wasBroadcast: true, rebroadcastAttempts: 1,
      history: JSON.stringify({ notes: [note(3, 'postBeefSuccess', { name: 'ARC', ü: 'é' })] }), notify: JSON.stringify({ transactionIds: [T[2]] }) })
    await req({ status: 'sending', txid: txid(3), batch: h('batch:1').slice(0, 16), rawTx: bytes('raw:3', 150), inputBEEF: bytes('beef:3', 250),
      history: JSON.stringify({ notes: [] }), notify: JSON.stringify({ transactionIds: [T[2], T[3]] }) })
    return userId
  })
}

// ---------- commands ----------

const commands = {
  async create (f) {
    const file = need(f, 'db')
    if (fs.existsSync(file) && fs.statSync(file).size > 0) throw new Error(`refusing to create over an existing file: ${file}`)
    const knex = makeKnex(file)
    const storage = new StorageKnex({ ...StorageKnex.defaultOptions(), chain: f.chain ?? 'test', knex })
    const migrateResult = await storage.migrate(need(f, 'name'), need(f, 'sik'))
    return { settings: wire(await storage.makeAvailable()), migration: await latestMigration(knex), migrateResult }
  },

  async open (f) {
    const file = need(f, 'db')
    if (!fs.existsSync(file)) throw new Error(`no such store: ${file}`)
    const knex = makeKnex(file)
    const count = async () => (await knex.schema.hasTable('knex_migrations')) ? Number((await knex('knex_migrations').count({ n: '*' }))[0].n) : 0
    const row = await readSettingsRow(knex)
    const migrationsBefore = await count()
    const storage = new StorageKnex({ ...StorageKnex.defaultOptions(), chain: row.chain, knex })
    const migrateResult = await storage.migrate(row.storageName, row.storageIdentityKey)
    const migrationsAfter = await count()
    return { migrationsBefore, migrationsAfter, migration: await latestMigration(knex), migrateResult, settings: wire(await storage.makeAvailable()) }
  },

  async fill (f) {
    const storage = await openStore(need(f, 'db'))
    const userId = await fill(storage, need(f, 'identity'), int(f, 'seed', 1), int(f, 'labels', 0))
    return { userId, counts: await countAll(storage.knex) }
  },

  async dump (f) {
    return await dump(await openStore(need(f, 'db')), need(f, 'identity'))
  },

  async sync (f) {
    const A = await openStore(need(f, 'from'))
    const B = await openStore(need(f, 'to'))
    const identityKey = need(f, 'identity')
    const r = { chunks: 0, inserts: 0, updates: 0 }
    for (;;) {
      if (r.chunks >= 100000) throw new Error('sync did not converge after 100000 chunks')
      const ss = await EntitySyncState.fromStorage(B, identityKey, A.getSettings())
      const args = ss.makeRequestSyncChunkArgs(identityKey, B.getSettings().storageIdentityKey, int(f, 'max-bytes'), int(f, 'max-items'))
      const chunk = validateSyncChunkEntities(wire(await A.getSyncChunk(args)))
      const p = await B.processSyncChunk(args, chunk)
      r.chunks++; r.inserts += p.inserts; r.updates += p.updates
      if (p.done) return r
    }
  },

  async export38 (f) {
    const storage = await openStore(need(f, 'db'))
    let text = await tb.exportBRC38Json(storage, need(f, 'identity'))
    if (f['exported-at'] != null) {
      // canonical text always starts {"brc":38,"exportedAt":"<ISO>"; pin it for byte-for-byte comparisons
      if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(f['exported-at'])) throw new UsageError('--exported-at must be YYYY-MM-DDTHH:MM:SS.sssZ')
      const head = /^\{"brc":38,"exportedAt":"[^"]*"/
      if (!head.test(text)) throw new Error('unexpected BRC-38 text start')
      text = text.replace(head, `{"brc":38,"exportedAt":"${f['exported-at']}"`)
    }
    const buf = Buffer.from(text, 'utf8')
    fs.writeFileSync(need(f, 'out'), buf)
    return { bytes: buf.length, sha256: sha256(buf), exportedAt: JSON.parse(text).exportedAt, collation: COLLATION }
  },

  async export39 (f) {
    const storage = await openStore(need(f, 'db'))
    const password = readPassword(need(f, 'password-file'))
    const t0 = Date.now()
    const buf = Buffer.from(await tb.exportBRC39(storage, need(f, 'identity'), password))
    const ms = Date.now() - t0
    fs.writeFileSync(need(f, 'out'), buf)
    return { bytes: buf.length, sha256: sha256(buf), ms, collation: COLLATION }
  },

  async import39 (f) {
    const storage = await openStore(need(f, 'db'))
    const bytes = Array.from(fs.readFileSync(need(f, 'in')))
    const password = readPassword(need(f, 'password-file'))
    const t0 = Date.now()
    const r = await tb.importBRC39(storage, bytes, password, { mode: need(f, 'mode') })
    return { ...r, ms: Date.now() - t0 }
  },

  async import38 (f) {
    const storage = await openStore(need(f, 'db'))
    const text = fs.readFileSync(need(f, 'in'), 'utf8')
    const t0 = Date.now()
    const r = await tb.importBRC38(storage, text, { mode: need(f, 'mode') })
    return { ...r, ms: Date.now() - t0 }
  },

  async getchunk (f) {
    const storage = await openStore(need(f, 'db'))
    return wire(await storage.getSyncChunk(parseArgs(need(f, 'args-file'), need(f, 'identity'))))
  },

  async processchunk (f) {
    const storage = await openStore(need(f, 'db'))
    const identityKey = need(f, 'identity')
    const args = parseArgs(need(f, 'args-file'), identityKey)
    const chunk = validateSyncChunkEntities(readJson(need(f, 'chunk-file')))
    // fromStorage = findOrInsertUser + findOrInsertSyncStateAuth, exactly as syncToWriter does it
    await EntitySyncState.fromStorage(storage, identityKey, { storageIdentityKey: need(f, 'from-sik'), storageName: need(f, 'from-name') })
    return wire(await storage.processSyncChunk(args, chunk))
  },

  async syncargs (f) {
    const storage = await openStore(need(f, 'db'))
    const identityKey = need(f, 'identity')
    const ss = await EntitySyncState.fromStorage(storage, identityKey, { storageIdentityKey: need(f, 'from-sik'), storageName: need(f, 'from-name') })
    return wire(ss.makeRequestSyncChunkArgs(identityKey, storage.getSettings().storageIdentityKey, int(f, 'max-bytes'), int(f, 'max-items')))
  }
}

// ---------- main ----------

run(commands, USAGE)
