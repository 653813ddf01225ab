package wallet

import "fmt"

// Chain is the BSV network a wallet store belongs to, as the toolbox writes it into
// settings.chain. Data never moves between stores of different chains.
type Chain string

// The chains the toolbox knows.
const (
	ChainMain     Chain = "main"
	ChainTest     Chain = "test"
	ChainTeraTest Chain = "teratest"
	ChainMock     Chain = "mock"
)

// ParseChain returns the Chain named s, or an error wrapping ErrWrongChain when s names
// no chain the toolbox knows (the empty string included).
func ParseChain(s string) (Chain, error) {
	switch c := Chain(s); c {
	case ChainMain, ChainTest, ChainTeraTest, ChainMock:
		return c, nil
	}
	return "", fmt.Errorf("parse chain %q: %w", s, ErrWrongChain)
}

// CheckSameChain returns nil when both chains are known and equal, and otherwise a
// *ChainError (which matches ErrWrongChain) naming both sides. Callers run it before any
// sync state or wallet row is written.
func CheckSameChain(source, destination Chain) error {
	if _, err := ParseChain(string(source)); err != nil {
		return &ChainError{Source: source, Destination: destination}
	}
	if source != destination {
		return &ChainError{Source: source, Destination: destination}
	}
	return nil
}

// ChainError reports that two stores are not on the same known chain.
type ChainError struct {
	Source, Destination Chain
}

func (e *ChainError) Error() string {
	name := func(c Chain) string {
		if c == "" {
			return "(missing)"
		}
		return string(c)
	}
	return fmt.Sprintf("chain mismatch: source is %s, destination is %s", name(e.Source), name(e.Destination))
}

// Unwrap makes errors.Is(err, ErrWrongChain) true.
func (e *ChainError) Unwrap() error { return ErrWrongChain }
