package main

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// runApp runs golf in this process with args and returns its error.
func runApp(t *testing.T, args ...string) error {
	t.Helper()
	app := newApp()
	app.Writer, app.ErrWriter = io.Discard, io.Discard
	stdout := os.Stdout
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	os.Stdout = null // info prints its tables
	defer func() { os.Stdout = stdout; null.Close() }()
	return app.RunContext(context.Background(), append([]string{"golf"}, args...))
}

// TestEmptyEnvVars sets each environment variable of every flag of the
// commands that take hyperparameters (and bench) to "" and to blanks, and
// checks that the command refuses it naming the variable.
func TestEmptyEnvVars(t *testing.T) {
	checked := 0
	for _, cmd := range newApp().Commands {
		switch cmd.Name {
		case "train", "eval", "info", "bench":
		default:
			continue
		}
		for _, f := range cmd.Flags {
			ef, ok := f.(interface{ GetEnvVars() []string })
			if !ok {
				continue
			}
			for _, env := range ef.GetEnvVars() {
				for _, v := range []string{"", "  "} {
					t.Run(cmd.Name+"/"+env+"="+v, func(t *testing.T) {
						t.Setenv(env, v)
						// info and bench would run; eval wants a file argument
						// first, but the check comes before it.
						args := []string{cmd.Name, "--backend", "cpu"}
						if cmd.Name == "bench" {
							args = append(args, "--no-ops", "--no-steps")
						}
						err := runApp(t, args...)
						require.Error(t, err)
						assert.Contains(t, err.Error(), env)
						if v == "" {
							assert.Contains(t, err.Error(), "set but empty")
						}
					})
					checked++
				}
			}
		}
	}
	assert.Greater(t, checked, 4*40, "every hyperparameter variable of train, eval and info")
}

// TestEmptyStringFlags: a string flag given "" on the command line is an
// error naming the flag and its variable.
func TestEmptyStringFlags(t *testing.T) {
	for _, f := range infoCommand().Flags {
		sf, ok := f.(*cli.StringFlag)
		if !ok {
			continue
		}
		err := runApp(t, "info", "--"+sf.Name, "")
		if assert.Error(t, err, "--%s \"\" accepted", sf.Name) {
			assert.Contains(t, err.Error(), "--"+sf.Name)
			assert.Contains(t, err.Error(), "must not be empty")
		}
	}
}
