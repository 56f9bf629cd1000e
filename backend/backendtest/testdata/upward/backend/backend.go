// Package backend is a fixture: a lowest layer that imports a higher one,
// the violation layering_test.go must report.
package backend

import _ "example.com/upward/optim"
