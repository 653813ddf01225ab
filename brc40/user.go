package brc40

import (
	"time"

	"walletsync/wallet"
)

// The rows a store makes for a user it has never seen, and the name an unnamed basket takes,
// defined once here for every store: localstore and pgstore create users and insert merged
// baskets with these, so that both agree with the toolbox and with each other.

// DefaultBasket is the name of the output basket the toolbox's findOrInsertUser gives every
// new user (NewUserRows), and the name its EntityOutputBasket.mergeNew gives an incoming
// basket that has none (PrepareNew).
const DefaultBasket = "default"

// The default basket's targets as findOrInsertUser sets them: 144 UTXOs of at least 32
// satoshis each.
const (
	defaultBasketUTXOs    = 144
	defaultBasketMinValue = 32
)

// UserEpoch returns the updated_at the toolbox gives a new user row and its default basket,
// 1971-01-01T00:00:00Z, so that any real update from another store counts as newer.
func UserEpoch() time.Time { return time.Date(1971, 1, 1, 0, 0, 0, 0, time.UTC) }

// NewUserRows returns the two rows findOrInsertUser makes for a new user of the store named
// storage: the user, with storage as its active store, and its DefaultBasket (144 desired
// UTXOs of at least 32 satoshis, not deleted), both updated at UserEpoch and created at now.
// Neither has an id yet, and the basket's userId is the caller's to set.
func NewUserRows(identityKey, storage string, now time.Time) (user, basket wallet.Row) {
	u := wallet.Users
	user = make(wallet.Row, len(u.Columns))
	user[u.Col("created_at")], user[u.Col("updated_at")] = now, UserEpoch()
	user[u.Col("identityKey")], user[u.Col("activeStorage")] = identityKey, storage
	t := wallet.OutputBaskets
	basket = make(wallet.Row, len(t.Columns))
	basket[t.Col("created_at")], basket[t.Col("updated_at")] = now, UserEpoch()
	basket[t.Col("name")], basket[t.Col("isDeleted")] = DefaultBasket, false
	basket[t.Col("numberOfDesiredUTXOs")] = int64(defaultBasketUTXOs)
	basket[t.Col("minimumDesiredUTXOValue")] = int64(defaultBasketMinValue)
	return user, basket
}

// PrepareNew completes local, a row of t that a merge found no match for, as the toolbox's
// mergeNew completes it before the insert: an output basket with an empty name becomes the
// DefaultBasket. It runs after matching, never before, because the toolbox looks the basket
// up by its empty name (and finds none) before renaming it. local is changed in place.
func PrepareNew(t *wallet.Table, local wallet.Row) {
	if t == wallet.OutputBaskets && local[t.Col("name")] == "" {
		local[t.Col("name")] = DefaultBasket
	}
}
