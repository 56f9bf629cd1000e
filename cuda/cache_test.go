package cuda

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testKey() CacheKey {
	return CacheKey{
		Program: Program{Name: "a.cu", Source: "src", Headers: []Header{{"h.cuh", "hdr"}}},
		Options: []string{"-std=c++17"}, Arch: "sm_80", NVRTCVersion: [2]int{11, 8},
	}
}

// Every field of the key changes the hash; equal keys hash equally.
func TestCacheKeyHashCoversEveryField(t *testing.T) {
	base := testKey()
	assert.Equal(t, base.Hash(), testKey().Hash())
	variants := map[string]func(k *CacheKey){
		"name":    func(k *CacheKey) { k.Program.Name = "b.cu" },
		"source":  func(k *CacheKey) { k.Program.Source = "src2" },
		"header":  func(k *CacheKey) { k.Program.Headers[0].Source = "hdr2" },
		"hname":   func(k *CacheKey) { k.Program.Headers[0].Name = "g.cuh" },
		"nohdr":   func(k *CacheKey) { k.Program.Headers = nil },
		"option":  func(k *CacheKey) { k.Options = []string{"-std=c++17", "-DX"} },
		"arch":    func(k *CacheKey) { k.Arch = "sm_90" },
		"nvrtc":   func(k *CacheKey) { k.NVRTCVersion = [2]int{12, 8} },
		"driver":  func(k *CacheKey) { k.DriverVersion = 12040 },
		"shifted": func(k *CacheKey) { k.Program.Name, k.Program.Source = "a.cus", "rc" },
	}
	seen := map[string]string{base.Hash(): "base"}
	for name, f := range variants {
		k := testKey()
		f(&k)
		h := k.Hash()
		prev, dup := seen[h]
		assert.False(t, dup, "%s hashes like %s", name, prev)
		seen[h] = name
	}
}

func TestCacheRoundTripAndAtomicity(t *testing.T) {
	c := &Cache{Dir: filepath.Join(t.TempDir(), "golf", "cuda")}
	k := testKey()
	_, _, ok, err := c.Get(k)
	require.NoError(t, err)
	assert.False(t, ok, "empty cache hit")

	require.NoError(t, c.Put(k, []byte("\x7fELFcubin"), "ptxas info"))
	cubin, log, ok, err := c.Get(k)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []byte("\x7fELFcubin"), cubin)
	assert.Equal(t, "ptxas info", log)

	// No temporary files are left behind.
	ents, err := os.ReadDir(c.Dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{k.Hash() + ".cubin", k.Hash() + ".log"}, names)

	// A cubin whose log is missing is a miss, not a half entry.
	require.NoError(t, os.Remove(filepath.Join(c.Dir, k.Hash()+".log")))
	_, _, ok, err = c.Get(k)
	require.NoError(t, err)
	assert.False(t, ok)

	// Another key misses.
	k2 := testKey()
	k2.Arch = "sm_86"
	_, _, ok, err = c.Get(k2)
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestCachePutFailsCleanlyOnUnwritableDir(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	c := &Cache{Dir: filepath.Join(blocker, "cuda")} // a directory under a file
	err := c.Put(testKey(), []byte("x"), "y")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cuda: kernel cache:")
}
