//go:build !unix

package main

// peakRSS is not measured on this platform; benchmarks report 0.
func peakRSS() int64 { return 0 }
