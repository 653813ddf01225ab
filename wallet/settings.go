package wallet

import "time"

// Settings identifies a store: the toolbox's one-row settings table.
type Settings struct {
	StorageIdentityKey string    `json:"storageIdentityKey"`
	StorageName        string    `json:"storageName"`
	Chain              Chain     `json:"chain"`
	DBType             string    `json:"dbtype"`
	MaxOutputScript    int64     `json:"maxOutputScript"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}
