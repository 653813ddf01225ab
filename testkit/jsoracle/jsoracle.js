// jsoracle.js answers the Go tests' questions with JavaScript's own behaviour, so that the
// tests compare walletsync's canonical JSON with what @bsv/wallet-toolbox writes, byte for
// byte. The Go side (jsoracle.go) runs it with LANG=C.UTF-8, as the toolbox interop test
// pins it.
//
// stdin: one JSON request, every field optional:
//   strings: [utf16]       -> JSON.stringify(s), as base64 of its UTF-8 bytes
//   numbers: [hex]         -> JSON.stringify(x) for the float64 with these 64 bits
//   ranks:   [[utf16]]     -> per list, each string's dense rank after a stable sort with
//                             a.localeCompare(b) (equal strings share a rank)
//   keySort: [[utf16]]     -> per list, the strings in Array.prototype.sort's default
//                             order, which orders object keys in the toolbox's canonicalize
// where utf16 is base64 of the string's UTF-16LE code units, so that lone surrogates survive
// the trip. stdout: the answers under the same names, plus the collator's locale and the ICU
// version.
'use strict';

const fs = require('fs');

function decode(b64) {
  const buf = Buffer.from(b64, 'base64');
  const units = [];
  for (let i = 0; i < buf.length; i += 2) units.push(buf.readUInt16LE(i));
  return String.fromCharCode(...units);
}

function encode(s) {
  const buf = Buffer.alloc(s.length * 2);
  for (let i = 0; i < s.length; i++) buf.writeUInt16LE(s.charCodeAt(i), i * 2);
  return buf.toString('base64');
}

function fromBits(hex) {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt('0x' + hex));
  return view.getFloat64(0);
}

function denseRanks(list) {
  const order = list.map((_, i) => i);
  order.sort((a, b) => list[a].localeCompare(list[b]));
  const ranks = new Array(list.length);
  let rank = 0;
  order.forEach((i, k) => {
    if (k > 0 && list[order[k - 1]].localeCompare(list[i]) !== 0) rank++;
    ranks[i] = rank;
  });
  return ranks;
}

const req = JSON.parse(fs.readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify({
  locale: new Intl.Collator().resolvedOptions().locale,
  icu: process.versions.icu,
  strings: (req.strings || []).map(s => Buffer.from(JSON.stringify(decode(s)), 'utf8').toString('base64')),
  numbers: (req.numbers || []).map(h => JSON.stringify(fromBits(h))),
  ranks: (req.ranks || []).map(list => denseRanks(list.map(decode))),
  keySort: (req.keySort || []).map(list => list.map(decode).sort().map(encode)),
}));
