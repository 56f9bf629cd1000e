package dl

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A file that is not an ELF object fails with the loader's own reason
// (glibc's words on Linux), and the path is not repeated in it.
func TestOpenReason(t *testing.T) {
	p := filepath.Join(t.TempDir(), "libnot-elf.so")
	require.NoError(t, os.WriteFile(p, []byte("not an ELF"), 0o644))
	_, err := Open(p, purego.RTLD_NOW)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), p)
	if runtime.GOOS == "linux" {
		assert.Equal(t, "file too short", err.Error())
	} else {
		assert.NotEmpty(t, err.Error())
	}

	_, err = Open("libgolf-dl-test-absent.so.1", purego.RTLD_NOW)
	require.Error(t, err)
	if runtime.GOOS == "linux" {
		assert.Equal(t, "cannot open shared object file: No such file or directory", err.Error())
	} else {
		assert.NotEmpty(t, err.Error())
	}
}

// Under many goroutines that keep the scheduler moving them between
// threads, every failed open still carries its reason. Without the
// thread pin, dlerror was read on another thread now and then and came
// back empty.
func TestOpenReasonUnderMigration(t *testing.T) {
	p := filepath.Join(t.TempDir(), "libnot-elf.so")
	require.NoError(t, os.WriteFile(p, []byte("not an ELF"), 0o644))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	const workers, opens = 16, 400
	want := "file too short"
	if runtime.GOOS != "linux" {
		_, err := Open(p, purego.RTLD_NOW)
		require.Error(t, err)
		want = err.Error()
	}
	bad := make([]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range opens {
				_, err := Open(p, purego.RTLD_NOW)
				if err == nil || err.Error() != want {
					bad[w]++
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	for w, n := range bad {
		assert.Zero(t, n, "worker %d: %d of %d opens lost their reason", w, n, opens)
	}
}

// Every library the program opens goes through Open: a direct
// purego.Dlopen elsewhere would lose its failure's reason now and then.
// (Tests may call it on libraries that are always there.)
func TestOnlyOpenCallsDlopen(t *testing.T) {
	root := filepath.Join("..", "..")
	var direct []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || filepath.Dir(p) == filepath.Join(root, "internal", "dl") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "purego.Dlopen(") {
			direct = append(direct, p)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, direct, "purego.Dlopen called outside internal/dl: use dl.Open")
}
