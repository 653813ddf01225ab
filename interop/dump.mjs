// dump.mjs: one user's rows of a toolbox store, read through the toolbox's own finders (BRC-40
// scoping), as plain JSON values, for comparison by Go tests. peer.mjs's `dump` command and
// app-writes.mjs's `dump` request print it. See peer.mjs's NOTES for why the two back-filled
// blob columns are taken from plain SQL.

async function columns (knex, table) {
  return (await knex.raw(`PRAGMA table_info(${table})`)).map(c => ({ name: c.name, type: String(c.type).toLowerCase() }))
}
function dumpRow (row, cols) {
  const out = {}
  for (const c of cols) {
    let v = row[c.name]
    if (v == null) v = null
    else if (v instanceof Date) v = v.toISOString()
    else if (Buffer.isBuffer(v) || v instanceof Uint8Array || Array.isArray(v)) v = Buffer.from(v).toString('hex')
    else if (c.type === 'boolean') v = v === true || v === 1
    out[c.name] = v
  }
  return out
}
/** Plain-SQL values of one blob column, keyed by primary key (see NOTES: toolbox finders back-fill). */
async function rawBlobs (knex, table, pk, col, userId) {
  const m = new Map()
  for (const r of await knex(table).select(pk, col).where({ userId })) m.set(r[pk], r[col])
  return m
}

export async function dump (storage, identityKey) {
  const knex = storage.knex
  const user = await storage.findUserByIdentityKey(identityKey)
  if (user == null) throw new Error(`no user with identityKey ${identityKey}`)
  const userId = user.userId
  const partial = { userId }
  // full toolbox reads, then the two back-filled blob columns replaced by what the row really holds
  const txs = await storage.findTransactions({ partial })
  const rawTx = await rawBlobs(knex, 'transactions', 'transactionId', 'rawTx', userId)
  for (const t of txs) t.rawTx = rawTx.get(t.transactionId)
  const outs = await storage.findOutputs({ partial })
  const scripts = await rawBlobs(knex, 'outputs', 'outputId', 'lockingScript', userId)
  for (const o of outs) o.lockingScript = scripts.get(o.outputId)
  const rows = {
    users: await storage.findUsers({ partial }),
    proven_txs: await storage.getProvenTxsForUser({ userId }),
    proven_tx_reqs: await storage.getProvenTxReqsForUser({ userId }),
    output_baskets: await storage.findOutputBaskets({ partial }),
    transactions: txs,
    commissions: await storage.findCommissions({ partial }),
    outputs: outs,
    output_tags: await storage.findOutputTags({ partial }),
    output_tags_map: await storage.getOutputTagMapsForUser({ userId }),
    tx_labels: await storage.findTxLabels({ partial }),
    tx_labels_map: await storage.getTxLabelMapsForUser({ userId }),
    certificates: await storage.findCertificates({ partial }),
    certificate_fields: await storage.findCertificateFields({ partial }),
    sync_states: await storage.findSyncStates({ partial })
  }
  const num = (...ks) => (a, b) => { for (const k of ks) if (a[k] !== b[k]) return a[k] - b[k]; return 0 }
  const order = {
    users: num('userId'), proven_txs: num('provenTxId'), proven_tx_reqs: num('provenTxReqId'), output_baskets: num('basketId'),
    transactions: num('transactionId'), commissions: num('commissionId'), outputs: num('outputId'), output_tags: num('outputTagId'),
    output_tags_map: num('outputId', 'outputTagId'), tx_labels: num('txLabelId'), tx_labels_map: num('transactionId', 'txLabelId'),
    certificates: num('certificateId'), sync_states: num('syncStateId'),
    certificate_fields: (a, b) => a.certificateId - b.certificateId || (a.fieldName < b.fieldName ? -1 : a.fieldName > b.fieldName ? 1 : 0)
  }
  const out = {}
  for (const [table, list] of Object.entries(rows)) {
    const cols = await columns(knex, table)
    out[table] = list.map(r => dumpRow(r, cols)).sort(order[table])
  }
  return out
}
