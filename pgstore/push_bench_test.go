package pgstore_test

import (
	"testing"

	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/wallet"
)

// BenchmarkPush pushes the toolbox fixture (10,000 labels sharing one updated_at, 64 proofs
// with 32 KiB raw transactions) in this process into an empty store on each backend, through
// the BRC-40 consumer (chunks: syncer.RunChunks, ProcessSyncChunk) and through walletsync's
// page commits (pages: syncer.Run, Commit). Compare the backends within one run; the
// machine's noise makes absolute times meaningless:
//
//	go test -run '^$' -bench Push -benchtime 3x ./pgstore/
func BenchmarkPush(b *testing.B) {
	src := source(b, localstore.FixtureToolbox)
	id := localstore.FixtureIdentity(1)
	for _, way := range []string{"chunks", "pages"} {
		for _, be := range backends {
			b.Run(way+"/"+be.name, func(b *testing.B) {
				var rows int64
				for range b.N {
					b.StopTimer()
					dst := be.open(b)
					b.StartTimer()
					var res syncer.Result
					var err error
					if way == "chunks" {
						res, err = syncer.RunChunks(b.Context(), src, dst, id, syncer.ChunkOptions{Active: wallet.KeepSourceActive, Settle: -1})
					} else {
						res, err = syncer.Run(b.Context(), src, dst.(wallet.Destination), id, syncer.Options{Active: wallet.KeepSourceActive, Bulk: true})
					}
					if err != nil {
						b.Fatal(err)
					}
					rows = res.Rows
				}
				b.ReportMetric(float64(rows), "rows/op")
			})
		}
	}
}
