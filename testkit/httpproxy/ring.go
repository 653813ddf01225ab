package httpproxy

// ring is the upstreams a proxy sends requests to: the one it sends them to now (at), and
// those dropped (a killed server) that moving on never chooses again. Both proxies move a
// client between servers through it; its owner's mutex guards it.
type ring[T any] struct {
	all  []T
	at   int
	gone []bool
}

func newRing[T any](all ...T) ring[T] {
	return ring[T]{all: all, gone: make([]bool, len(all))}
}

// current returns the upstream requests go to now.
func (r *ring[T]) current() T { return r.all[r.at] }

// advance moves requests to the first upstream after from, around the ring, that is not
// dropped; when every other one is, they stay where they are.
func (r *ring[T]) advance(from int) {
	for range r.all {
		from = (from + 1) % len(r.all)
		if !r.gone[from] {
			r.at = from
			return
		}
	}
}

// drop marks upstream i dropped, moving requests off it when they go there now.
func (r *ring[T]) drop(i int) {
	r.gone[i] = true
	if r.at == i {
		r.advance(i)
	}
}
