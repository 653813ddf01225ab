package main

import (
	"context"
	"sync"

	"walletsync/desktop"
)

// fakeWindow is a Window whose dialogs answer with reply and whose geometry is geometry.
type fakeWindow struct {
	mu       sync.Mutex
	reply    string
	dialogs  []FileDialog
	folders  []string
	geometry desktop.WindowState
	placed   []desktop.WindowState
	raised   int
}

func (w *fakeWindow) OpenFile(_ context.Context, d FileDialog) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dialogs = append(w.dialogs, d)
	return w.reply, nil
}

func (w *fakeWindow) SaveFile(_ context.Context, d FileDialog) (string, error) {
	return w.OpenFile(context.Background(), d)
}

func (w *fakeWindow) ChooseFolder(_ context.Context, title string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.folders = append(w.folders, title)
	return w.reply, nil
}

func (w *fakeWindow) Geometry(context.Context) desktop.WindowState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.geometry
}

func (w *fakeWindow) Raise(context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.raised++
}

func (w *fakeWindow) Place(_ context.Context, s desktop.WindowState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.placed = append(w.placed, s)
}
