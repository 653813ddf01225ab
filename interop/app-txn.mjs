#!/usr/bin/env node
// app-txn.mjs: a wallet app's transaction on a toolbox store, held open on command, so that
// walletsync's Go tests can run a sync (or anything else) between its first read and its first
// write, the moment in which another connection's commit fails it in SQLite's WAL mode.
//
//   node app-txn.mjs txn --db F --identity HEX [--label NAME]
//
// Through StorageKnex 2.1.26 on better-sqlite3, as a toolbox wallet does: storage.transaction
// (knex's transaction: BEGIN, deferred), then findUsers and findOutputs (the first read fixes
// the snapshot), then one line on stdout {"state":"read","outputs":N}; then it waits for one line
// on stdin, inserts a tx label (a write to a synced table, so walletsync's journal trigger runs
// inside it too) and commits. The final line is {"committed":true,"txLabelId":N}, or on failure
// {"error","name","code"} with exit code 1 (code SQLITE_BUSY_SNAPSHOT when a commit by another
// connection came between the read and the write). Diagnostics go to stderr.

process.env.TZ = 'UTC'
import readline from 'node:readline'
import { need, openStore, run } from './cli.mjs'

for (const k of ['log', 'info', 'warn', 'debug']) console[k] = (...a) => console.error(...a)

const USAGE = 'usage: node app-txn.mjs txn --db F --identity HEX [--label NAME]'

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]()

const commands = {
  async txn (f) {
    const storage = await openStore(need(f, 'db'))
    const identityKey = need(f, 'identity')
    const label = f.label ?? `app-txn-${process.pid}`
    return await storage.transaction(async trx => {
      const users = await storage.findUsers({ partial: { identityKey }, trx })
      if (users.length !== 1) throw new Error(`no user ${identityKey}`)
      const userId = users[0].userId
      const outputs = await storage.findOutputs({ partial: { userId }, trx })
      process.stdout.write(JSON.stringify({ state: 'read', outputs: outputs.length }) + '\n')
      const next = await lines.next()
      if (next.done) throw new Error('stdin closed before the go-ahead')
      const now = new Date()
      const txLabelId = await storage.insertTxLabel({ txLabelId: 0, userId, label, isDeleted: false, created_at: now, updated_at: now }, trx)
      return { committed: true, txLabelId }
    })
  }
}

await run(commands, USAGE)
process.stdin.destroy()
