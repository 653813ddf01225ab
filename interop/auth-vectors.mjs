#!/usr/bin/env node
// auth-vectors.mjs: known answers of @bsv/sdk 2.1.0 for walletsync's BRC-42/43/103/104 Go code,
// computed by the real SDK at test time (remote/auth's tests send random inputs and compare).
//
// stdin: {"cases": [case, ...]}; stdout: {"results": [result, ...]}, one result per case, in order.
// Each case has an "op"; keys are hex, byte strings hex, text strings as base64 of UTF-16LE code
// units ("u16") so that any JavaScript string survives. A case the SDK throws on gives
// {"error": message}.
//   invoice   {level, name:u16, keyID:u16}                 -> {invoice:u16}   KeyDeriver.computeInvoiceNumber
//   derive    {root, cp, level, name, keyID}               -> {priv, pub, sym} derivePrivateKey / derivePublicKey /
//                                                             deriveSymmetricKey (sym: its toArray bytes)
//   hmac      {root, cp, level, name, keyID, data}         -> {hmac}          ProtoWallet.createHmac
//   sign      {root, cp, level, name, keyID, data}         -> {sig}           ProtoWallet.createSignature (DER)
//   verify    {root, cp, level, name, keyID, data, sig}    -> {valid}         ProtoWallet.verifySignature
//   nonce     {root, r}                                    -> {keyID:u16, nonce, valid}  createNonce's steps on
//                                                             the given 16 bytes, then verifyNonce
//   nonces    {root, n}                                    -> {nonces}        n real createNonce results
//   request   {requestId, method, url, headers, body?:u16} -> {payload}       AuthFetch.serializeRequest
//   response  {requestId, status, headers, body}           -> {payload}       the payload SimplifiedFetchTransport
//                                                             builds from a response and verifies
//   json      {body}                                       -> {payload}       JSON.stringify(JSON.parse(body)) as
//                                                             UTF-8, the bytes the auth middleware signs
// where cp is "self", "anyone" or a public key in hex, and data/sig/r/body hex.
import { createRequire } from 'node:module'
import fs from 'node:fs'

const require = createRequire(import.meta.url)
const { PrivateKey, ProtoWallet, KeyDeriver, Utils, createNonce, verifyNonce, AuthFetch, SimplifiedFetchTransport } = require('@bsv/sdk')

const u16 = {
  decode (b64) {
    const buf = Buffer.from(b64, 'base64')
    let s = ''
    for (let i = 0; i < buf.length; i += 2) s += String.fromCharCode(buf.readUInt16LE(i))
    return s
  },
  encode (s) {
    const buf = Buffer.alloc(s.length * 2)
    for (let i = 0; i < s.length; i++) buf.writeUInt16LE(s.charCodeAt(i), i * 2)
    return buf.toString('base64')
  }
}
const hex = b => Buffer.from(b).toString('hex')
const bytes = h => Array.from(Buffer.from(h, 'hex'))
const key = h => PrivateKey.fromHex(h)
const proto = c => [c.level, u16.decode(c.name)]

async function responsePayload (c) {
  // Run the real transport on a canned response and capture the payload it hands to Peer.
  let captured
  const fakeFetch = async () => new Response(c.body === '' ? null : Buffer.from(c.body, 'hex'), {
    status: c.status,
    headers: {
      ...c.headers,
      'x-bsv-auth-version': '0.1',
      'x-bsv-auth-identity-key': '02' + '11'.repeat(32),
      'x-bsv-auth-signature': '00',
      'x-bsv-auth-request-id': Buffer.from(c.requestId, 'hex').toString('base64')
    }
  })
  const t = new SimplifiedFetchTransport('http://127.0.0.1:1', fakeFetch)
  await t.onData(async m => { captured = m })
  const reqPayload = new Utils.Writer()
  reqPayload.write(bytes(c.requestId))
  reqPayload.writeVarIntNum(4); reqPayload.write(Utils.toArray('POST'))
  reqPayload.writeVarIntNum(1); reqPayload.write(Utils.toArray('/'))
  reqPayload.writeVarIntNum(-1); reqPayload.writeVarIntNum(0); reqPayload.writeVarIntNum(-1)
  await t.send({ version: '0.1', messageType: 'general', identityKey: '02' + '11'.repeat(32), nonce: 'n', yourNonce: 'y', payload: reqPayload.toArray(), signature: [0] })
  return { payload: hex(captured.payload) }
}

async function run (c) {
  switch (c.op) {
    case 'invoice':
      return { invoice: u16.encode(new KeyDeriver(key('01'.padStart(64, '0'))).computeInvoiceNumber([c.level, u16.decode(c.name)], u16.decode(c.keyID))) }
    case 'derive': {
      const d = new KeyDeriver(key(c.root))
      const p = proto(c); const k = u16.decode(c.keyID)
      return {
        priv: d.derivePrivateKey(p, k, c.cp).toHex(),
        pub: d.derivePublicKey(p, k, c.cp).toString(),
        sym: hex(d.deriveSymmetricKey(p, k, c.cp).toArray())
      }
    }
    case 'hmac': {
      const { hmac } = await new ProtoWallet(key(c.root)).createHmac({ protocolID: proto(c), keyID: u16.decode(c.keyID), counterparty: c.cp, data: bytes(c.data) })
      return { hmac: hex(hmac) }
    }
    case 'sign': {
      const { signature } = await new ProtoWallet(key(c.root)).createSignature({ protocolID: proto(c), keyID: u16.decode(c.keyID), counterparty: c.cp, data: bytes(c.data) })
      return { sig: hex(signature) }
    }
    case 'verify':
      try {
        await new ProtoWallet(key(c.root)).verifySignature({ protocolID: proto(c), keyID: u16.decode(c.keyID), counterparty: c.cp, data: bytes(c.data), signature: bytes(c.sig) })
        return { valid: true }
      } catch (e) { return { valid: false } }
    case 'nonce': {
      // createNonce's own steps, on given bytes instead of Random(16).
      const w = new ProtoWallet(key(c.root))
      const r = bytes(c.r)
      const keyID = Utils.toUTF8(r)
      const { hmac } = await w.createHmac({ protocolID: [2, 'server hmac'], keyID, data: r, counterparty: 'self' })
      const nonce = Utils.toBase64([...r, ...hmac])
      return { keyID: u16.encode(keyID), nonce, valid: await verifyNonce(nonce, w) }
    }
    case 'nonces': {
      const w = new ProtoWallet(key(c.root))
      const nonces = []
      for (let i = 0; i < c.n; i++) nonces.push(await createNonce(w))
      return { nonces }
    }
    case 'request': {
      const af = new AuthFetch(new ProtoWallet(key('01'.padStart(64, '0'))))
      const body = c.body == null ? undefined : u16.decode(c.body)
      const w = await af.serializeRequest(c.method, c.headers, body, new URL(c.url), bytes(c.requestId))
      return { payload: hex(w.toArray()) }
    }
    case 'response':
      return await responsePayload(c)
    case 'json':
      return { payload: Buffer.from(JSON.stringify(JSON.parse(Buffer.from(c.body, 'hex').toString('utf8'))), 'utf8').toString('hex') }
  }
  throw new Error(`unknown op ${c.op}`)
}

const { cases } = JSON.parse(fs.readFileSync(0, 'utf8'))
const results = []
for (const c of cases) {
  try {
    results.push(await run(c))
  } catch (e) {
    results.push({ error: String(e && e.message) })
  }
}
process.stdout.write(JSON.stringify({ results }))
