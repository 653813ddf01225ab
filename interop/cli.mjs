// cli.mjs: the plumbing that peer.mjs and bench-portable.mjs share: flags, knex handles that
// are closed at exit, opening an existing toolbox store, and the runner that prints exactly
// one JSON object on stdout per command ({"error", "name"[, "code"]} and exit code 1 on
// failure; diagnostics on stderr).

import { createRequire } from 'node:module'
import fs from 'node:fs'

const require = createRequire(import.meta.url)
const Knex = require('knex')
const { StorageKnex } = require('@bsv/wallet-toolbox/out/src/storage/index.all.js')

export class UsageError extends Error { constructor (m) { super(m); this.name = 'UsageError' } }

/** parseFlags reads "--name value" pairs; anything else is a UsageError. */
export function parseFlags (argv) {
  const flags = {}
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (!a.startsWith('--')) throw new UsageError(`unexpected argument: ${a}`)
    if (i + 1 >= argv.length) throw new UsageError(`missing value for ${a}`)
    flags[a.slice(2)] = argv[++i]
  }
  return flags
}

/** need returns flag k, or throws a UsageError when it is missing or empty. */
export const need = (f, k) => { if (f[k] == null || f[k] === '') throw new UsageError(`--${k} is required`); return f[k] }

const knexes = []

/** makeKnex opens a better-sqlite3 knex on file; run destroys it when the command ends. */
export function makeKnex (file) {
  const knex = Knex({ client: 'better-sqlite3', connection: { filename: file }, useNullAsDefault: true })
  knexes.push(knex)
  return knex
}

/** readSettingsRow returns the store's settings row, or throws when it is not a wallet store. */
export async function readSettingsRow (knex) {
  const has = await knex.schema.hasTable('settings')
  const row = has ? await knex('settings').first() : undefined
  if (row == null) throw new Error('not a wallet store: no settings row')
  return row
}

/** openStore opens an existing store with the chain from its own settings row. */
export async function openStore (file) {
  if (!fs.existsSync(file)) throw new Error(`no such store: ${file}`)
  const knex = makeKnex(file)
  const row = await readSettingsRow(knex)
  const storage = newStorage(file, row.chain, knex)
  await storage.makeAvailable()
  return storage
}

/** newStorage returns a StorageKnex on file (a new or existing store) for chain, through knex when given. */
export function newStorage (file, chain, knex = makeKnex(file)) {
  return new StorageKnex({ ...StorageKnex.defaultOptions(), chain, knex })
}

/**
 * run runs the command process.argv names, one of commands (name -> async (flags) => result),
 * prints its result (or the error) as one JSON line, closes every knex and sets the exit code.
 * usage is printed for --help.
 */
export async function run (commands, usage) {
  const [cmd, ...rest] = process.argv.slice(2)
  if (cmd === '--help' || cmd === '-h' || cmd === 'help') {
    process.stdout.write(usage + '\n')
    return
  }
  let result; let code = 0
  try {
    if (cmd == null) throw new UsageError('no command (try --help)')
    if (!Object.hasOwn(commands, cmd)) throw new UsageError(`unknown command: ${cmd} (try --help)`)
    result = await commands[cmd](parseFlags(rest))
  } catch (e) {
    console.error(e?.stack ?? String(e))
    result = { error: String(e?.message ?? e), name: String(e?.name ?? 'Error') }
    if (e?.code != null && e.code !== e.name) result.code = String(e.code)
    code = 1
  } finally {
    for (const k of knexes) await k.destroy().catch(e => console.error('knex destroy:', e))
  }
  process.stdout.write(JSON.stringify(result) + '\n')
  process.exitCode = code
}
