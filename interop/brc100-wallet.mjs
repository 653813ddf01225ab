#!/usr/bin/env node
// brc100-wallet.mjs: a minimal BRC-100 wallet on 127.0.0.1 speaking the HTTP JSON wire of
// @bsv/sdk 2.1.0's HTTPWalletJSON (POST /<call> with the arguments as JSON, the result as JSON),
// backed by the SDK's own ProtoWallet, for remote/auth's HTTPWallet tests. Serves getPublicKey,
// createSignature, verifySignature, createHmac and verifyHmac.
//
// usage: node brc100-wallet.mjs --key HEX
// Prints one line {"port": N, "identityKey": HEX} once it listens, then serves until its stdin
// closes. A call that throws is answered 400 {"isError": true, "code", "message"}, as wallet
// servers answer HTTPWalletJSON.
import { createRequire } from 'node:module'
import http from 'node:http'
import { parseFlags, need } from './cli.mjs'

const require = createRequire(import.meta.url)
const { PrivateKey, ProtoWallet } = require('@bsv/sdk')

const key = PrivateKey.fromHex(need(parseFlags(process.argv.slice(2)), 'key'))
const wallet = new ProtoWallet(key)
const calls = new Set(['getPublicKey', 'createSignature', 'verifySignature', 'createHmac', 'verifyHmac'])

const server = http.createServer((req, res) => {
  const chunks = []
  req.on('data', c => chunks.push(c))
  req.on('end', async () => {
    const call = req.url.slice(1)
    const reply = (status, obj) => {
      res.writeHead(status, { 'Content-Type': 'application/json' })
      res.end(JSON.stringify(obj))
    }
    if (req.method !== 'POST' || !calls.has(call)) return reply(404, { isError: true, message: `no such call ${call}` })
    try {
      reply(200, await wallet[call](JSON.parse(Buffer.concat(chunks).toString('utf8'))))
    } catch (e) {
      reply(400, { isError: true, code: e.code, message: e.message })
    }
  })
})
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port, identityKey: key.toPublicKey().toString() }) + '\n')
})
process.stdin.resume()
process.stdin.on('end', () => { server.close(); process.exit(0) })
