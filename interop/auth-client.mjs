#!/usr/bin/env node
// auth-client.mjs: the real TypeScript client side of BRC-104, a toolbox 2.1.26 StorageClient
// (AuthFetch + ProtoWallet of @bsv/sdk 2.1.0), driven against a walletsync server by remote/auth's
// tests.
//
// stdin: {"url": base URL, "key": root private key hex, "steps": [step, ...]} where a step is
//   {"rpc": method, "params": [...]}   StorageClient.rpcCall(method, params)
//   {"rpc": ..., "concurrent": N}      N such calls at once; the result is the array of their results
//   {"get": path}                      a plain unauthenticated fetch(url + path), e.g. a test hook
// stdout: {"results": [...]}, per step {"result": value} or {"error": {"name", "message", "parameter"?}}
// or {"timeout": true}: the TypeScript transport swallows verification failures and then waits
// forever, so each step is raced against a deadline ("timeoutMs", default 8000).
import { createRequire } from 'node:module'
import fs from 'node:fs'

for (const k of ['log', 'info', 'warn', 'debug']) console[k] = (...a) => console.error(...a)

const require = createRequire(import.meta.url)
const { PrivateKey, ProtoWallet } = require('@bsv/sdk')
const { StorageClient } = require('@bsv/wallet-toolbox/out/src/storage/index.all.js')

const input = JSON.parse(fs.readFileSync(0, 'utf8'))
const client = new StorageClient(new ProtoWallet(PrivateKey.fromHex(input.key)), input.url)
const timeoutMs = input.timeoutMs ?? 8000

async function step (s) {
  if (s.get != null) {
    const r = await fetch(input.url + s.get)
    return { result: r.status }
  }
  if (s.concurrent != null) {
    return { result: await Promise.all(Array.from({ length: s.concurrent }, () => client.rpcCall(s.rpc, s.params ?? []))) }
  }
  return { result: await client.rpcCall(s.rpc, s.params ?? []) }
}

const results = []
for (const s of input.steps) {
  let timer
  const deadline = new Promise(resolve => { timer = setTimeout(() => resolve({ timeout: true }), timeoutMs) })
  try {
    results.push(await Promise.race([step(s), deadline]))
  } catch (e) {
    results.push({ error: { name: e?.name, message: e?.message, parameter: e?.parameter } })
  } finally {
    clearTimeout(timer)
  }
}
process.stdout.write(JSON.stringify({ results }))
process.exit(0)
