package data

import (
	"fmt"
	"os"
	"path/filepath"
)

// CacheDir is golf's directory for data it can rebuild (the unpacked
// embedded data set, the shard validation cache): os.UserCacheDir()/golf
// ($XDG_CACHE_HOME/golf or ~/.cache/golf on Linux, ~/Library/Caches/golf on
// macOS), created if needed. Only when there is no user cache directory, or
// it cannot be created, is it os.TempDir()/golf-<uid>. Everything under it
// is verified before use, so a stale or tampered copy is repaired, never
// trusted.
func CacheDir() (string, error) {
	var errs []error
	if base, err := os.UserCacheDir(); err == nil {
		dir := filepath.Join(base, "golf")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			return dir, nil
		} else {
			errs = append(errs, err)
		}
	} else {
		errs = append(errs, err)
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("golf-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("no cache directory: %v; %w", errs, err)
	}
	return dir, nil
}
