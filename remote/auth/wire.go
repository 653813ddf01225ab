package auth

import (
	"encoding/binary"
	"net/http"
	"sort"
	"strings"
)

// varintAbsent is the varint TypeScript writes for -1 (writeVarIntNum(-1)): 0xff, then
// 2^64-1 little-endian. It marks an absent path, query or body.
const varintAbsent = ^uint64(0)

// AppendVarint appends n as a Bitcoin varint (CompactSize): one byte below 0xfd, else a
// marker 0xfd, 0xfe or 0xff and 2, 4 or 8 bytes little-endian.
func AppendVarint(dst []byte, n uint64) []byte {
	switch {
	case n < 0xfd:
		return append(dst, byte(n))
	case n <= 0xffff:
		return binary.LittleEndian.AppendUint16(append(dst, 0xfd), uint16(n))
	case n <= 0xffffffff:
		return binary.LittleEndian.AppendUint32(append(dst, 0xfe), uint32(n))
	}
	return binary.LittleEndian.AppendUint64(append(dst, 0xff), n)
}

// appendBytes appends a varint length and b.
func appendBytes(dst, b []byte) []byte {
	return append(AppendVarint(dst, uint64(len(b))), b...)
}

// appendOptional appends b with its length, or the absent marker when b is empty, as the
// TypeScript writers do for paths, queries and bodies.
func appendOptional(dst, b []byte) []byte {
	if len(b) == 0 {
		return AppendVarint(dst, varintAbsent)
	}
	return appendBytes(dst, b)
}

// header is one signed header: a lower-case name and its value.
type header struct{ name, value string }

// signedHeaders picks the headers BRC-104 signs from h, lower-cased and sorted by name:
// x-bsv-* except x-bsv-auth*, authorization, and (for requests) content-type with its
// parameters cut off. As Node's server reads a request, a repeated authorization or
// content-type keeps its first value; other repeated headers, and every one in a response
// (as fetch's Headers reads it), have their values joined by ", ".
//
// TypeScript sorts with localeCompare, which equals byte order for names of lower-case
// letters, digits and '-', the only characters in every header either side of walletsync
// signs; a peer signing a header named with '_' or other punctuation may sort differently
// and its requests then fail verification.
func signedHeaders(h http.Header, request bool) []header {
	var out []header
	for name, values := range h {
		k := strings.ToLower(name)
		v := strings.Join(values, ", ")
		switch {
		case strings.HasPrefix(k, "x-bsv-auth"):
			continue
		case strings.HasPrefix(k, "x-bsv-"):
		case k == "authorization":
			if request {
				v = values[0]
			}
		case request && k == "content-type":
			v, _, _ = strings.Cut(values[0], ";")
			v = strings.TrimSpace(v)
		default:
			continue
		}
		out = append(out, header{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// appendHeaders appends the count and the name/value pairs.
func appendHeaders(dst []byte, hs []header) []byte {
	dst = AppendVarint(dst, uint64(len(hs)))
	for _, h := range hs {
		dst = appendBytes(dst, []byte(h.name))
		dst = appendBytes(dst, []byte(h.value))
	}
	return dst
}

// requestPayload is the signed payload of an authenticated request: request id, method,
// path, query (with its '?'), the signed headers and the body (absent when empty). The
// server must pass the raw body only when its content type is exactly application/json,
// as the TypeScript middleware signs no body otherwise.
func requestPayload(requestID []byte, method, path, query string, hs []header, body []byte) []byte {
	p := append([]byte(nil), requestID...)
	p = appendBytes(p, []byte(method))
	p = appendOptional(p, []byte(path))
	if query != "" {
		query = "?" + query
	}
	p = appendOptional(p, []byte(query))
	p = appendHeaders(p, hs)
	return appendOptional(p, body)
}

// responsePayload is the signed payload of an authenticated response: request id, status,
// the signed x-bsv-*/authorization headers (never content-type) and the body. An empty body
// is absent (-1) as the TypeScript server signs it, or of length 0 when emptyAsZero, as the
// TypeScript client verifies it; walletsync's server therefore never answers with an empty
// body, and its client accepts either form.
func responsePayload(requestID []byte, status int, hs []header, body []byte, emptyAsZero bool) []byte {
	p := append([]byte(nil), requestID...)
	p = AppendVarint(p, uint64(status))
	p = appendHeaders(p, hs)
	if emptyAsZero {
		return appendBytes(p, body)
	}
	return appendOptional(p, body)
}
