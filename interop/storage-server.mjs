#!/usr/bin/env node
// storage-server.mjs: the real toolbox 2.1.26 StorageServer (Express, @bsv/auth-express-middleware
// 2.0.5, StorageKnex on SQLite, a ProtoWallet identity, monetize: false) on 127.0.0.1, for
// remote/auth's Go client tests.
//
// usage: node storage-server.mjs --db FILE --key HEX [--port N]
// (--port 0 or none: any free port; a test that restarts the server passes the port it had.)
// Prints one line {"port": N, "identityKey": HEX} once it listens, then serves until its stdin
// closes (the Go test holds it open and closes it, or dies), and exits.
process.env.TZ = 'UTC'
import { createRequire } from 'node:module'
import { parseFlags, need } from './cli.mjs'

for (const k of ['log', 'info', 'warn', 'debug']) console[k] = (...a) => console.error(...a)

const require = createRequire(import.meta.url)
const Knex = require('knex')
const { PrivateKey, ProtoWallet } = require('@bsv/sdk')
const { StorageKnex, StorageServer } = require('@bsv/wallet-toolbox/out/src/storage/index.all.js')

const flags = parseFlags(process.argv.slice(2))
const knex = Knex({ client: 'better-sqlite3', connection: { filename: need(flags, 'db') }, useNullAsDefault: true })
const storage = new StorageKnex({ ...StorageKnex.defaultOptions(), chain: 'test', knex })
const key = PrivateKey.fromHex(need(flags, 'key'))
await storage.migrate('ts-server', key.toPublicKey().toString())
await storage.makeAvailable()

const server = new StorageServer(storage, { port: 0, wallet: new ProtoWallet(key), monetize: false })
const http = server.app.listen(Number(flags.port ?? 0), '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: http.address().port, identityKey: key.toPublicKey().toString() }) + '\n')
})
// Node closes an idle keep-alive connection after 5 s, and undici's fetch (the toolbox's
// StorageClient) may reuse it in that instant and fail with "fetch failed" after a long pause
// of its own (a pull's local writes); a deployed server behind a proxy keeps connections
// longer. Both clients get the same server.
http.keepAliveTimeout = 120_000
http.headersTimeout = 125_000
process.stdin.resume()
process.stdin.on('end', async () => {
  http.close()
  await knex.destroy()
  process.exit(0)
})
